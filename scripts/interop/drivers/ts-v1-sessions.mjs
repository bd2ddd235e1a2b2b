#!/usr/bin/env node
// ts-v1-sessions: --clients N real @modelcontextprotocol/sdk 1.32.2 Clients
// in one process (cheaper than N processes), each with its own 2025 session
// through --url URL (a load balancer in front of mcp-bridge replicas), all
// at once. Each client connects (initialize, initialized, the GET stream),
// lists tools, calls --call NAME [--args JSON] --calls K times, pings, and
// closes (DELETE). Per client the summary records its session ids and the
// Mcp-Bridge-Replica value of every response (clients[i].http), which is
// how a test sees that a session kept its replica.
// Prints one JSON summary on stdout; logs on stderr; exit 0 only if every
// client succeeded.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Runner, WireStats, countingFetch, json, parseFlags } from './lib/common.mjs';

const { values: f } = parseFlags({
    url: { type: 'string' },
    clients: { type: 'string', default: '32' },
    call: { type: 'string', default: 'memo_list_memos' },
    args: { type: 'string', default: '{}' },
    calls: { type: 'string', default: '3' },
    timeout: { type: 'string', default: '60000' },
    'request-timeout': { type: 'string', default: '20000' }
});

const run = new Runner('ts-v1-sessions', Number(f.timeout));
const timeout = Number(f['request-timeout']);
const args = json('args', f.args);

async function session(i) {
    const stats = new WireStats();
    const client = new Client({ name: `mcp-bridge-interop-ts-v1-${i}`, version: '1.0.0' }, { capabilities: {} });
    const transport = new StreamableHTTPClientTransport(new URL(f.url), { fetch: countingFetch(stats) });
    await client.connect(transport, { timeout });
    const tools = await client.listTools(undefined, { timeout });
    for (let k = 0; k < Number(f.calls); k++) {
        const r = await client.callTool({ name: f.call, arguments: args }, undefined, { timeout });
        if (r.isError) throw new Error(`${f.call} returned isError`);
    }
    await client.ping({ timeout });
    const sessionId = transport.sessionId;
    await transport.terminateSession();
    await client.close();
    return { sessionId, tools: tools.tools.length, http: stats.http };
}

async function main() {
    await run.step('sessions', async () => {
        const n = Number(f.clients);
        const settled = await Promise.allSettled(Array.from({ length: n }, (_, i) => session(i)));
        const clients = settled.map(s => (s.status === 'fulfilled' ? { ok: true, ...s.value } : { ok: false, error: String(s.reason?.message ?? s.reason) }));
        const failed = clients.filter(c => !c.ok).length;
        if (failed > 0) throw Object.assign(new Error(`${failed} of ${n} clients failed: ${clients.find(c => !c.ok).error}`), { result: { clients } });
        return { clients };
    });
    run.finish();
}

main().catch(e => {
    run.fail('main', e);
    run.finish(1);
});
