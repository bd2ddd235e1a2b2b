#!/usr/bin/env node
// ts-v2-client: a real @modelcontextprotocol/client 2.4.0 Client (the v2
// TypeScript SDK) with versionNegotiation pinned to 2026-07-28 by default
// (--mode pin|auto|legacy, --pin VERSION), driving an MCP server through
//   --url URL                     StreamableHTTPClientTransport (e.g. mcp-bridge serve)
//   --command CMD [-- ARG...]     StdioClientTransport (e.g. mcp-bridge connect URL)
// It declares sampling and elicitation (and with --roots, roots) and answers
// them with the same handlers as ts-v1-client; on 2026-07-28 the SDK uses them
// to fulfil input_required results. Steps, in this order when selected:
//   (always) connect              the negotiation (server/discover for pin/auto)
//   --reconnect                   after the negotiation, close and connect again (a new
//                                 child with --command) adopting the first connection's
//                                 DiscoverResult (connect({prior})): the SDK sends no
//                                 server/discover, the next step's request comes first
//   --expect-version V            fail unless the negotiated version is V
//   --discover                    an explicit server/discover after connect
//   --list                        tools/list
//   --call NAME [--args JSON]     tools/call NAME
//   --progress                    a progress call (--progress-tool, --progress-args); with
//                                 --progress-concurrency K, K such calls at once
//   --sampling                    --sampling-tool (trigger-sampling-request) {prompt}: on
//                                 2026-07-28 an input_required round trip answered by the
//                                 sampling handler
//   --elicitation                 --elicitation-tool [--elicitation-args]: on 2026-07-28
//                                 an input_required (MRTR) round trip answered by the
//                                 elicitation handler (accept, schema-satisfying content)
//   --listen                      subscriptions/listen with --listen-filter JSON (default
//                                 {"toolsListChanged":true}); once acknowledged, call
//                                 --listen-trigger-tool [--listen-trigger-args] and wait for
//                                 --listen-expect (notifications/tools/list_changed) on the
//                                 stream; then close the subscription
//   --loop-call NAME [--loop-args JSON] --loop-until FILE
//                                 call NAME back to back, without pause, until FILE exists;
//                                 --loop-started FILE is created after the first call
//                                 succeeded. Every failed call is counted (the step fails
//                                 if any did); replicas answering are in wire.http.replicas
//   --cancel                      a call aborted (AbortSignal) after its first progress
//                                 notification (--cancel-tool, --cancel-args), then
//                                 optionally --after-cancel-tool [--after-cancel-args]
//                                 [--after-cancel-until FIELD: repeat until FIELD >= 1]
// With --command, --stderr-file PATH sends the child's stderr (mcp-bridge's log) to PATH, and
// summary.child records how the child ended after the driver closed its stdin.
// Prints one JSON summary on stdout; logs on stderr; exit 0 only if every step succeeded.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
    ROOTS,
    Runner,
    WireStats,
    answerElicitation,
    connectTransport,
    json,
    log,
    parseFlags,
    samplingResult,
    textOf,
    errInfo,
    waitChildExit,
    waiter
} from './lib/common.mjs';
import { callNamed, cancelCall, elicitation, listTools, progressCalls, sampling } from './lib/steps.mjs';
import { existsSync, writeFileSync } from 'node:fs';

const { values: f, positionals } = parseFlags({
    url: { type: 'string' },
    command: { type: 'string' },
    mode: { type: 'string', default: 'pin' },
    pin: { type: 'string', default: '2026-07-28' },
    'expect-version': { type: 'string' },
    timeout: { type: 'string', default: '60000' },
    'request-timeout': { type: 'string', default: '20000' },
    roots: { type: 'boolean', default: false },
    discover: { type: 'boolean', default: false },
    reconnect: { type: 'boolean', default: false },
    list: { type: 'boolean', default: false },
    call: { type: 'string' },
    args: { type: 'string' },
    progress: { type: 'boolean', default: false },
    'progress-tool': { type: 'string', default: 'test_tool_with_progress' },
    'progress-args': { type: 'string', default: '{}' },
    'progress-concurrency': { type: 'string', default: '1' },
    sampling: { type: 'boolean', default: false },
    'sampling-tool': { type: 'string', default: 'trigger-sampling-request' },
    'sampling-prompt': { type: 'string', default: 'Say hello to the interop test.' },
    elicitation: { type: 'boolean', default: false },
    'elicitation-tool': { type: 'string', default: 'memo_delete_memo' },
    'elicitation-args': { type: 'string', default: '{}' },
    'stderr-file': { type: 'string' },
    listen: { type: 'boolean', default: false },
    'listen-filter': { type: 'string', default: '{"toolsListChanged":true}' },
    'listen-trigger-tool': { type: 'string', default: 'toggle_tool' },
    'listen-trigger-args': { type: 'string', default: '{}' },
    'listen-expect': { type: 'string', default: 'notifications/tools/list_changed' },
    'listen-wait': { type: 'string', default: '10000' },
    cancel: { type: 'boolean', default: false },
    'cancel-tool': { type: 'string', default: 'memo_export_memos' },
    'cancel-args': { type: 'string', default: '{"steps":100}' },
    'after-cancel-tool': { type: 'string' },
    'after-cancel-args': { type: 'string', default: '{}' },
    'after-cancel-until': { type: 'string' },
    'loop-call': { type: 'string' },
    'loop-args': { type: 'string', default: '{}' },
    'loop-until': { type: 'string' },
    'loop-started': { type: 'string' }
});

const run = new Runner('ts-v2-client', Number(f.timeout));
const reqTimeout = Number(f['request-timeout']);
const stats = new WireStats();
const handled = { sampling: [], elicitation: [], roots: 0, notifications: {} };
const notes = waiter();
run.summary.sdk = '@modelcontextprotocol/client@2.4.0';
run.summary.handled = handled;
run.summary.wire = stats;

const mode = f.mode === 'pin' ? { pin: f.pin } : f.mode;
run.summary.versionNegotiation = mode;
const client = new Client(
    { name: 'mcp-bridge-interop-ts-v2', version: '1.0.0' },
    {
        capabilities: { sampling: {}, elicitation: { form: {} }, ...(f.roots ? { roots: {} } : {}) },
        versionNegotiation: { mode }
    }
);
client.setRequestHandler('sampling/createMessage', async req => {
    handled.sampling.push({ messages: req.params.messages?.length ?? 0 });
    log('answering sampling/createMessage');
    return samplingResult();
});
if (f.roots) {
    client.setRequestHandler('roots/list', async () => {
        handled.roots++;
        log('answering roots/list');
        return { roots: ROOTS };
    });
}
client.setRequestHandler('elicitation/create', answerElicitation(handled));
for (const method of [
    'notifications/tools/list_changed',
    'notifications/prompts/list_changed',
    'notifications/resources/list_changed',
    'notifications/resources/updated'
]) {
    client.setNotificationHandler(method, () => {
        handled.notifications[method] = (handled.notifications[method] ?? 0) + 1;
        notes.poke();
    });
}
client.onerror = e => log('client error:', errInfo(e));
let child = { closing() {} };

async function connect() {
    const transports = { Http: StreamableHTTPClientTransport, Stdio: StdioClientTransport };
    let { transport, child: c } = await connectTransport(client, transports, f, positionals, stats, run.summary, reqTimeout);
    child = c;
    if (f.reconnect) {
        const discover = client.getDiscoverResult();
        if (!discover) throw new Error('--reconnect: the first connection found no 2026-07-28 server to carry over');
        child.closing();
        await client.close();
        await waitChildExit(run.summary);
        ({ transport, child: c } = await connectTransport(client, transports, f, positionals, stats, run.summary, reqTimeout, {
            prior: { kind: 'modern', discover }
        }));
        child = c;
    }
    const d = client.getDiscoverResult();
    return {
        protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
        era: client.getProtocolEra() ?? null,
        server: client.getServerVersion() ?? null,
        serverCapabilities: client.getServerCapabilities() ?? null,
        discover: d ? { supportedVersions: d.supportedVersions, resultType: d.resultType ?? null } : null,
        sessionId: transport.sessionId ?? null
    };
}

async function callTool(name, args, extra = {}) {
    const result = await client.callTool({ name, arguments: args }, { timeout: reqTimeout, ...extra });
    if (result.isError) throw new Error(`tool ${name} returned isError: ${textOf(result)}`);
    return result;
}

const ctx = { f, client, stats, handled, reqTimeout, callTool };

async function main() {
    const conn = await run.step('connect', connect);
    if (!conn) return run.finish(1);
    Object.assign(run.summary, { protocolVersion: conn.protocolVersion, era: conn.era, server: conn.server });

    if (f['expect-version'] !== undefined) {
        await run.step('expectVersion', async () => {
            if (conn.protocolVersion !== f['expect-version']) {
                throw new Error(`negotiated ${conn.protocolVersion}, want ${f['expect-version']}`);
            }
            return { version: conn.protocolVersion };
        });
    }
    if (f.discover) {
        await run.step('discover', async () => {
            const d = await client.discover({ timeout: reqTimeout });
            return { supportedVersions: d.supportedVersions, capabilities: d.capabilities, serverInfo: d._meta?.['io.modelcontextprotocol/serverInfo'] ?? null };
        });
    }
    if (f.list) {
        await run.step('listTools', () => listTools(ctx));
    }
    if (f.call) {
        await run.step('call', () => callNamed(ctx));
    }
    if (f.progress) {
        await run.step('progress', () => progressCalls(ctx));
    }
    if (f.sampling) {
        await run.step('sampling', () => sampling(ctx));
    }
    if (f.elicitation) {
        await run.step('elicitation', () => elicitation(ctx));
    }
    if (f.listen) {
        await run.step('listen', async () => {
            const expect = f['listen-expect'];
            const count = () => handled.notifications[expect] ?? 0;
            const wire = () => stats.messages[expect] ?? 0;
            const ackBefore = stats.messages['notifications/subscriptions/acknowledged'] ?? 0;
            const sub = await client.listen(json('listen-filter', f['listen-filter']), { timeout: reqTimeout });
            const honoredFilter = sub.honoredFilter;
            const before = count();
            const wireBefore = wire();
            const text = textOf(await callTool(f['listen-trigger-tool'], json('listen-trigger-args', f['listen-trigger-args'])));
            try {
                await notes.until(() => count() > before, Number(f['listen-wait']), `${expect} on the listen stream`);
            } catch (e) {
                throw new Error(`${e.message} (on the wire: ${wire() - wireBefore}; honoredFilter ${JSON.stringify(honoredFilter)}; trigger said ${JSON.stringify(text)})`);
            }
            const received = count() - before;
            const onWire = wire() - wireBefore;
            await sub.close();
            const closed = await Promise.race([sub.closed, new Promise(r => setTimeout(() => r('not closed within 5 s'), 5000))]);
            return {
                honoredFilter,
                acknowledged: (stats.messages['notifications/subscriptions/acknowledged'] ?? 0) - ackBefore,
                triggerText: text,
                received,
                wire: onWire,
                closed,
                notifications: { ...handled.notifications }
            };
        });
    }
    if (f.cancel) {
        await run.step('cancel', () => cancelCall(ctx));
    }
    if (f['loop-call']) {
        await run.step('loop', async () => {
            if (!f['loop-until']) throw new Error('--loop-call needs --loop-until FILE');
            const args = json('loop-args', f['loop-args']);
            const t0 = Date.now();
            let calls = 0;
            let failed = 0;
            const errors = [];
            while (!existsSync(f['loop-until'])) {
                calls++;
                try {
                    await callTool(f['loop-call'], args);
                    if (calls - failed === 1 && f['loop-started']) writeFileSync(f['loop-started'], 'started\n');
                } catch (e) {
                    failed++;
                    if (errors.length < 20) errors.push({ call: calls, atMs: Date.now() - t0, ...errInfo(e) });
                }
            }
            const result = { calls, failed, errors, ms: Date.now() - t0 };
            if (failed > 0) throw Object.assign(new Error(`${failed} of ${calls} calls failed: ${JSON.stringify(errors.slice(0, 3))}`), { result });
            return result;
        });
    }
    await run.step('close', async () => {
        child.closing();
        await client.close();
        await waitChildExit(run.summary);
        return {};
    });
    run.finish();
}

main().catch(e => {
    run.fail('main', e);
    run.finish(1);
});
