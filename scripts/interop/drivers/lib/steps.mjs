// Steps shared by the v1 and v2 drivers. Each takes the driver's context
// { f (flags), client, stats (WireStats), handled, reqTimeout, callTool };
// callTool(name, args, requestOptions) is the driver's own wrapper (the
// SDKs' callTool signatures differ) and throws when the result has isError.

import { errInfo, json, log, textOf } from './common.mjs';

/** listTools: tools/list, the names. */
export async function listTools({ client, reqTimeout }) {
    const { tools } = await client.listTools(undefined, { timeout: reqTimeout });
    return { count: tools.length, names: tools.map(t => t.name) };
}

/** callNamed: tools/call --call with --args. */
export async function callNamed({ f, callTool }) {
    const r = await callTool(f.call, json('args', f.args, {}));
    return { tool: f.call, text: textOf(r), structuredContent: r.structuredContent ?? null };
}

/** sampling: --sampling-tool, counting the sampling handler's calls. */
export async function sampling({ f, handled, callTool }) {
    const before = handled.sampling.length;
    const r = await callTool(f['sampling-tool'], { prompt: f['sampling-prompt'], maxTokens: 50 });
    return { handlerCalls: handled.sampling.length - before, text: textOf(r) };
}

/** elicitation: --elicitation-tool, counting the elicitation handler's calls. */
export async function elicitation({ f, handled, callTool }) {
    const before = handled.elicitation.length;
    const r = await callTool(f['elicitation-tool'], json('elicitation-args', f['elicitation-args']));
    return { handlerCalls: handled.elicitation.length - before, text: textOf(r) };
}

/**
 * progressCalls runs --progress-concurrency (default 1) calls of
 * --progress-tool at once, counting progress per call via onprogress and in
 * all on the wire. The first call's fields are at the top level.
 */
export async function progressCalls({ f, stats, callTool }) {
    const tool = f['progress-tool'];
    const before = stats.progress;
    const one = async () => {
        const events = [];
        const r = await callTool(tool, json('progress-args', f['progress-args']), {
            onprogress: p => events.push({ progress: p.progress, total: p.total }),
            resetTimeoutOnProgress: true
        });
        return { onprogress: events.length, events, text: textOf(r) };
    };
    const k = Math.max(1, Number(f['progress-concurrency'] ?? 1));
    const calls = await Promise.all(Array.from({ length: k }, one));
    return { tool, ...calls[0], wire: stats.progress - before, calls: k > 1 ? calls : undefined };
}

/**
 * cancelCall starts --cancel-tool with an AbortSignal and aborts it on its
 * first progress notification; the SDK then tells the server (legacy:
 * notifications/cancelled; 2026-07-28 over HTTP: the SDK's own choice,
 * recorded in the wire counts). Then --after-cancel-tool, if given, runs on
 * the same connection (e.g. memo_debug_stats, which counts cancellations),
 * optionally until a counter in its structuredContent is non-zero.
 */
export async function cancelCall({ f, stats, reqTimeout, callTool }) {
    const ac = new AbortController();
    let progress = 0;
    const t0 = performance.now();
    const sentBefore = stats.sent['notifications/cancelled'] ?? 0;
    const ackedBefore = stats.acked['notifications/cancelled'] ?? 0;
    let outcome;
    try {
        const r = await callTool(f['cancel-tool'], json('cancel-args', f['cancel-args']), {
            signal: ac.signal,
            timeout: reqTimeout,
            onprogress: () => {
                if (++progress === 1) {
                    log('first progress: aborting the call');
                    ac.abort('interop cancel');
                }
            }
        });
        outcome = { completed: true, text: textOf(r) };
    } catch (e) {
        outcome = { completed: false, error: errInfo(e) };
    }
    if (outcome.completed || !ac.signal.aborted) throw new Error(`call was not cancelled: ${JSON.stringify(outcome)}`);
    const cancelledSent = (stats.sent['notifications/cancelled'] ?? 0) - sentBefore;
    if (cancelledSent > 0) {
        // The SDK sends notifications/cancelled without awaiting it: wait until the server took it.
        await stats.waitAcked('notifications/cancelled', ackedBefore + 1, reqTimeout);
    }
    const out = {
        progressBeforeAbort: progress,
        abortMs: Math.round(performance.now() - t0),
        cancelledSent,
        error: outcome.error
    };
    if (f['after-cancel-tool']) {
        // With --after-cancel-until FIELD, repeat the call (every 50 ms, up
        // to 5 s) until structuredContent[FIELD] >= 1: on 2026-07-28 the
        // cancel is the closing of the response stream, which the server
        // notices asynchronously.
        const field = f['after-cancel-until'];
        const deadline = performance.now() + 5000;
        for (out.afterAttempts = 1; ; out.afterAttempts++) {
            const r = await callTool(f['after-cancel-tool'], json('after-cancel-args', f['after-cancel-args']));
            out.after = { tool: f['after-cancel-tool'], text: textOf(r), structuredContent: r.structuredContent ?? null };
            if (!field || (r.structuredContent?.[field] ?? 0) >= 1 || performance.now() > deadline) break;
            await new Promise(res => setTimeout(res, 50));
        }
    }
    return out;
}
