#!/usr/bin/env node
// ts-v1-client: a real @modelcontextprotocol/sdk 1.32.2 Client (the 2025-era
// TypeScript SDK most hosts embed) driving an MCP server through
//   --url URL                     StreamableHTTPClientTransport (e.g. mcp-bridge serve); with
//                                 --transport sse, SSEClientTransport (the 2024-11-05 HTTP+SSE
//                                 transport: URL is the SSE endpoint, e.g. serve's /sse)
//   --command CMD [-- ARG...]     StdioClientTransport (e.g. mcp-bridge connect URL)
// It declares the sampling and elicitation capabilities and answers them
// (sampling: a fixed assistant text; elicitation: accept with content that
// satisfies the requested schema); with --roots also roots (one fixed root).
// Steps run in this order when selected:
//   --roots                       wait for the server's own roots/list request (server-everything
//                                 sends one 350 ms after initialization, when no request is in
//                                 flight: the GET stream), then call --roots-tool (get-roots-list)
//   --list                        tools/list
//   --echo MSG                    tools/call echo {message: MSG}
//   --call NAME [--args JSON]     tools/call NAME
//   --progress                    a progress call (--progress-tool, --progress-args); with
//                                 --progress-concurrency K, K such calls at once
//   --sampling                    --sampling-tool (trigger-sampling-request) {prompt}
//   --elicitation                 --elicitation-tool (trigger-elicitation-request) [--elicitation-args]
//   --logging                     --logging-tool (toggle-simulated-logging) on, wait for a
//                                 notifications/message (with --logging-stream GET: one
//                                 that came on the GET stream), toggle it off again
//   --list-changed                call --list-changed-tool [--list-changed-args] and wait for a
//                                 notifications/<--list-changed-kind (tools)>/list_changed, then
//                                 list again (a legacy host learns of changes this way)
//   --ping                        ping
//   --cancel                      a call aborted (AbortSignal) after its first progress
//                                 notification (--cancel-tool, --cancel-args), then
//                                 optionally --after-cancel-tool [--after-cancel-args]
//                                 [--after-cancel-until FIELD: repeat until FIELD >= 1]
// With --command, --stderr-file PATH sends the child's stderr (mcp-bridge's log) to PATH, and
// summary.child records how the child ended after the driver closed its stdin.
// Prints one JSON summary on stdout; logs on stderr; exit 0 only if every step succeeded.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    ListRootsRequestSchema,
    LoggingMessageNotificationSchema,
    PromptListChangedNotificationSchema,
    ResourceListChangedNotificationSchema,
    ToolListChangedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
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

const { values: f, positionals } = parseFlags({
    url: { type: 'string' },
    transport: { type: 'string', default: 'streamable-http' },
    command: { type: 'string' },
    timeout: { type: 'string', default: '60000' },
    'request-timeout': { type: 'string', default: '20000' },
    roots: { type: 'boolean', default: false },
    'roots-tool': { type: 'string', default: 'get-roots-list' },
    list: { type: 'boolean', default: false },
    echo: { type: 'string' },
    call: { type: 'string' },
    args: { type: 'string' },
    progress: { type: 'boolean', default: false },
    'progress-tool': { type: 'string', default: 'trigger-long-running-operation' },
    'progress-args': { type: 'string', default: '{"duration":1,"steps":5}' },
    'progress-concurrency': { type: 'string', default: '1' },
    sampling: { type: 'boolean', default: false },
    'sampling-tool': { type: 'string', default: 'trigger-sampling-request' },
    'sampling-prompt': { type: 'string', default: 'Say hello to the interop test.' },
    elicitation: { type: 'boolean', default: false },
    'elicitation-tool': { type: 'string', default: 'trigger-elicitation-request' },
    'elicitation-args': { type: 'string', default: '{}' },
    logging: { type: 'boolean', default: false },
    'logging-tool': { type: 'string', default: 'toggle-simulated-logging' },
    'logging-wait': { type: 'string', default: '8000' },
    'logging-stream': { type: 'string' },
    'stderr-file': { type: 'string' },
    'list-changed': { type: 'boolean', default: false },
    'list-changed-kind': { type: 'string', default: 'tools' },
    'list-changed-tool': { type: 'string', default: 'toggle_tool' },
    'list-changed-args': { type: 'string', default: '{}' },
    'list-changed-wait': { type: 'string', default: '10000' },
    ping: { type: 'boolean', default: false },
    cancel: { type: 'boolean', default: false },
    'cancel-tool': { type: 'string', default: 'trigger-long-running-operation' },
    'cancel-args': { type: 'string', default: '{"duration":20,"steps":40}' },
    'after-cancel-tool': { type: 'string' },
    'after-cancel-args': { type: 'string', default: '{}' },
    'after-cancel-until': { type: 'string' }
});

const run = new Runner('ts-v1-client', Number(f.timeout));
const reqTimeout = Number(f['request-timeout']);
const stats = new WireStats();
const handled = { sampling: [], elicitation: [], logging: 0, roots: 0, listChanged: { tools: 0, prompts: 0, resources: 0 } };
const notes = waiter();
run.summary.sdk = '@modelcontextprotocol/sdk@1.32.2';
run.summary.handled = handled;
run.summary.wire = stats;

const client = new Client(
    { name: 'mcp-bridge-interop-ts-v1', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: { form: {} }, ...(f.roots ? { roots: {} } : {}) } }
);
if (f.roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => {
        handled.roots++;
        notes.poke();
        log('answering roots/list');
        return { roots: ROOTS };
    });
}
client.setRequestHandler(CreateMessageRequestSchema, async req => {
    handled.sampling.push({ messages: req.params.messages?.length ?? 0, maxTokens: req.params.maxTokens });
    log('answering sampling/createMessage');
    return samplingResult();
});
client.setRequestHandler(ElicitRequestSchema, answerElicitation(handled));
client.setNotificationHandler(LoggingMessageNotificationSchema, () => {
    handled.logging++;
    notes.poke();
});
for (const [kind, schema] of [
    ['tools', ToolListChangedNotificationSchema],
    ['prompts', PromptListChangedNotificationSchema],
    ['resources', ResourceListChangedNotificationSchema]
]) {
    client.setNotificationHandler(schema, () => {
        handled.listChanged[kind]++;
        notes.poke();
    });
}
client.onerror = e => log('client error:', errInfo(e));

let activeTransport;
let child = { closing() {} };

async function connect() {
    if (f.transport !== 'streamable-http' && f.transport !== 'sse') throw new Error(`--transport ${f.transport}: want streamable-http or sse`);
    const Http = f.transport === 'sse' ? SSEClientTransport : StreamableHTTPClientTransport;
    const transports = { Http, Stdio: StdioClientTransport };
    const { transport, child: c } = await connectTransport(client, transports, f, positionals, stats, run.summary, reqTimeout);
    if (f.url && f.transport === 'sse') run.summary.transport = 'sse';
    activeTransport = transport;
    child = c;
    return {
        protocolVersion: transport.protocolVersion ?? stats.initializeVersion ?? null,
        server: client.getServerVersion(),
        serverCapabilities: client.getServerCapabilities(),
        sessionId: transport.sessionId ?? null
    };
}

async function callTool(name, args, extra = {}) {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: reqTimeout, ...extra });
    if (result.isError) throw new Error(`tool ${name} returned isError: ${textOf(result)}`);
    return result;
}

const ctx = { f, client, stats, handled, reqTimeout, callTool };

async function main() {
    const conn = await run.step('connect', connect);
    if (!conn) return run.finish(1);
    Object.assign(run.summary, { protocolVersion: conn.protocolVersion, server: conn.server });

    if (f.roots) {
        await run.step('roots', async () => {
            await notes.until(() => handled.roots > 0, reqTimeout, 'the server to send roots/list');
            const byStream = { ...stats.byStream };
            const r = await callTool(f['roots-tool'], {});
            return { handlerCalls: handled.roots, byStream, text: textOf(r) };
        });
    }
    if (f.list) {
        await run.step('listTools', () => listTools(ctx));
    }
    if (f.echo !== undefined) {
        await run.step('echo', async () => ({ text: textOf(await callTool('echo', { message: f.echo })) }));
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
    if (f.logging) {
        await run.step('logging', async () => {
            const tool = f['logging-tool'];
            const before = handled.logging;
            const via = f['logging-stream'];
            const onStream = () => (via ? (stats.byStream[`${via} notifications/message`] ?? 0) : handled.logging);
            const streamBefore = onStream();
            const on = textOf(await callTool(tool, {}));
            await notes.until(() => onStream() > streamBefore, Number(f['logging-wait']), `a notifications/message${via ? ' on the ' + via + ' stream' : ''}`);
            const off = textOf(await callTool(tool, {}));
            return { received: handled.logging - before, onStream: onStream() - streamBefore, on, off, byStream: { ...stats.byStream } };
        });
    }
    if (f['list-changed']) {
        await run.step('listChanged', async () => {
            const kind = f['list-changed-kind'];
            const before = handled.listChanged[kind];
            const wireBefore = stats.messages[`notifications/${kind}/list_changed`] ?? 0;
            const text = textOf(await callTool(f['list-changed-tool'], json('list-changed-args', f['list-changed-args'])));
            await notes.until(() => handled.listChanged[kind] > before, Number(f['list-changed-wait']), `notifications/${kind}/list_changed`);
            const out = { text, received: handled.listChanged[kind] - before, wire: (stats.messages[`notifications/${kind}/list_changed`] ?? 0) - wireBefore };
            if (kind === 'tools') out.names = (await client.listTools(undefined, { timeout: reqTimeout })).tools.map(t => t.name);
            return out;
        });
    }
    if (f.ping) {
        await run.step('ping', async () => ({ result: await client.ping({ timeout: reqTimeout }) }));
    }
    if (f.cancel) {
        await run.step('cancel', () => cancelCall(ctx));
    }
    await run.step('close', async () => {
        // A legacy HTTP session owns a child process behind mcp-bridge: end it (DELETE).
        let terminated = false;
        if (activeTransport?.terminateSession && activeTransport.sessionId) {
            await activeTransport.terminateSession();
            terminated = true;
        }
        child.closing();
        await client.close();
        await waitChildExit(run.summary);
        return { terminated };
    });
    run.finish();
}

main().catch(e => {
    run.fail('main', e);
    run.finish(1);
});
