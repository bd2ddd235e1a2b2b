// Shared helpers for the interop driver clients.
//
// Every driver prints exactly one JSON summary on stdout and logs to stderr.
// The Go tests in scripts/interop/ parse that summary; keep field names stable.

import { openSync } from 'node:fs';
import { parseArgs } from 'node:util';

export const SAMPLING_REPLY = 'interop sampling reply from the ts driver';
export const ELICIT_NAME = 'Interop Driver';
export const ROOTS = [{ uri: 'file:///tmp/mcp-bridge-interop-root', name: 'mcp-bridge interop root' }];

/** log writes one line to stderr (never stdout: stdout carries the summary). */
export function log(...parts) {
    const text = parts.map(p => (typeof p === 'string' ? p : JSON.stringify(p))).join(' ');
    process.stderr.write(`[${new Date().toISOString()}] ${text}\n`);
}

/** parseFlags wraps util.parseArgs; tokens after `--` become `positionals`. */
export function parseFlags(options) {
    return parseArgs({ args: process.argv.slice(2), options, allowPositionals: true, strict: true });
}

/** json parses a flag value as JSON, naming the flag when it is malformed. */
export function json(flag, value, fallback) {
    if (value === undefined) return fallback;
    try {
        return JSON.parse(value);
    } catch (e) {
        throw new Error(`--${flag}: not JSON: ${e.message}`);
    }
}

/**
 * WireStats counts what actually crossed the wire (or, on stdio, the lines the
 * transport delivered): JSON-RPC messages by method (requests/notifications)
 * or by kind (responses), progress notifications by token, and for HTTP the
 * requests, statuses, content types and session ids seen.
 */
export class WireStats {
    constructor() {
        this.messages = {}; // method (or "response"/"error") -> count, server→client
        this.sent = {}; // method (or "response") -> count, client→server
        this.acked = {}; // like sent, counted once the server answered the POST (HTTP) or the write finished (stdio)
        this.waiters = [];
        this.progressByToken = {};
        this.progress = 0;
        this.byStream = {}; // "GET notifications/message" -> count: which HTTP stream carried what
        // protocolVersionHeaders: the MCP-Protocol-Version values the client sent.
        this.http = { requests: {}, statuses: {}, contentTypes: {}, sessionIds: [], protocolVersionHeaders: [], replicas: {} };
    }
    /** inbound records one server→client JSON-RPC message (object or array); via names the HTTP stream. */
    inbound(msg, via) {
        for (const m of Array.isArray(msg) ? msg : [msg]) {
            if (!m || typeof m !== 'object') continue;
            const key = m.method ?? ('error' in m ? 'error' : 'response');
            this.messages[key] = (this.messages[key] ?? 0) + 1;
            if (via) this.byStream[`${via} ${key}`] = (this.byStream[`${via} ${key}`] ?? 0) + 1;
            if (typeof m.result?.protocolVersion === 'string') this.initializeVersion = m.result.protocolVersion;
            if (m.method === 'notifications/progress') {
                this.progress++;
                const tok = String(m.params?.progressToken);
                this.progressByToken[tok] = (this.progressByToken[tok] ?? 0) + 1;
            }
        }
    }
    outbound(msg) {
        for (const m of Array.isArray(msg) ? msg : [msg]) {
            if (!m || typeof m !== 'object') continue;
            const key = m.method ?? 'response';
            this.sent[key] = (this.sent[key] ?? 0) + 1;
        }
    }
    ack(msg) {
        for (const m of Array.isArray(msg) ? msg : [msg]) {
            if (!m || typeof m !== 'object') continue;
            const key = m.method ?? 'response';
            this.acked[key] = (this.acked[key] ?? 0) + 1;
        }
        this.waiters = this.waiters.filter(w => !w());
    }
    /** waitAcked resolves once acked[method] >= n, or rejects after ms. */
    waitAcked(method, n, ms) {
        return new Promise((resolve, reject) => {
            const check = () => {
                if ((this.acked[method] ?? 0) >= n) {
                    clearTimeout(timer);
                    resolve();
                    return true;
                }
                return false;
            };
            const timer = setTimeout(() => {
                this.waiters = this.waiters.filter(w => w !== check);
                reject(new Error(`${method} was not acknowledged ${n} time(s) within ${ms} ms (acked ${this.acked[method] ?? 0})`));
            }, ms);
            if (!check()) this.waiters.push(check);
        });
    }
    toJSON() {
        return {
            messages: this.messages,
            sent: this.sent,
            acked: this.acked,
            progress: this.progress,
            progressByToken: this.progressByToken,
            byStream: this.byStream,
            initializeVersion: this.initializeVersion ?? null,
            http: this.http
        };
    }
}

function bump(obj, key) {
    obj[key] = (obj[key] ?? 0) + 1;
}

/**
 * countingFetch returns a fetch that records every HTTP exchange in stats and
 * scans response bodies (SSE events and JSON bodies) as they stream to the
 * SDK, so the counts are what was on the wire, not what the SDK chose to
 * surface.
 */
export function countingFetch(stats, baseFetch = globalThis.fetch) {
    return async (url, init) => {
        const method = (init?.method ?? 'GET').toUpperCase();
        bump(stats.http.requests, method);
        let posted;
        if (method === 'POST' && typeof init?.body === 'string') {
            try {
                posted = JSON.parse(init.body);
                stats.outbound(posted);
            } catch {
                /* not JSON: the server will say so */
            }
        }
        const pv = new Headers(init?.headers ?? {}).get('mcp-protocol-version');
        if (pv && !stats.http.protocolVersionHeaders.includes(pv)) stats.http.protocolVersionHeaders.push(pv);
        const res = await baseFetch(url, init);
        if (posted !== undefined && res.ok) stats.ack(posted);
        bump(stats.http.statuses, `${method} ${res.status}`);
        const ct = (res.headers.get('content-type') ?? '').split(';')[0].trim();
        if (ct) bump(stats.http.contentTypes, `${method} ${ct}`);
        const sid = res.headers.get('mcp-session-id');
        if (sid && !stats.http.sessionIds.includes(sid)) stats.http.sessionIds.push(sid);
        // mcp-bridge serve --replica-id names the replica that answered.
        const replica = res.headers.get('mcp-bridge-replica');
        if (replica) bump(stats.http.replicas, replica);
        if (!res.body || (ct !== 'text/event-stream' && ct !== 'application/json')) return res;
        const scan = ct === 'text/event-stream' ? sseScanner(stats, method) : jsonScanner(stats, method);
        const body = res.body.pipeThrough(scan);
        return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    };
}

/** sseScanner passes bytes through unchanged and counts the JSON in each SSE event's data. */
function sseScanner(stats, via) {
    const decoder = new TextDecoder();
    let buf = '';
    let data = [];
    const line = l => {
        if (l.endsWith('\r')) l = l.slice(0, -1);
        if (l === '') {
            if (data.length) {
                const text = data.join('\n');
                data = [];
                try {
                    stats.inbound(JSON.parse(text), via);
                } catch {
                    /* priming events have empty data */
                }
            }
            return;
        }
        if (l.startsWith('data:')) data.push(l.slice(5).replace(/^ /, ''));
    };
    return new TransformStream({
        transform(chunk, controller) {
            controller.enqueue(chunk);
            buf += decoder.decode(chunk, { stream: true });
            let i;
            while ((i = buf.indexOf('\n')) >= 0) {
                line(buf.slice(0, i));
                buf = buf.slice(i + 1);
            }
        },
        flush() {
            buf += decoder.decode();
            if (buf) line(buf);
            line('');
        }
    });
}

function jsonScanner(stats, via) {
    const chunks = [];
    return new TransformStream({
        transform(chunk, controller) {
            chunks.push(chunk);
            controller.enqueue(chunk);
        },
        flush() {
            try {
                stats.inbound(JSON.parse(Buffer.concat(chunks.map(c => Buffer.from(c))).toString('utf8')), via);
            } catch {
                /* not JSON */
            }
        }
    });
}

/**
 * countingTransport wraps any SDK Transport (stdio, later `mcp-bridge connect`)
 * so every message it delivers or sends is counted: on stdio a delivered
 * message is one line read from the child's stdout.
 */
export function countingTransport(inner, stats) {
    const t = {
        start: () => inner.start(),
        close: () => inner.close(),
        send: async (msg, opts) => {
            stats.outbound(msg);
            await inner.send(msg, opts);
            stats.ack(msg);
        },
        get sessionId() {
            return inner.sessionId;
        },
        setProtocolVersion: v => inner.setProtocolVersion?.(v),
        get onclose() {
            return inner.onclose;
        },
        set onclose(f) {
            inner.onclose = f;
        },
        get onerror() {
            return inner.onerror;
        },
        set onerror(f) {
            inner.onerror = f;
        },
        // The getter hands back the caller's own function, so an SDK that
        // chains the previous handler does not count a message twice.
        get onmessage() {
            return userOnMessage;
        },
        set onmessage(f) {
            userOnMessage = f;
            inner.onmessage = (msg, extra) => {
                stats.inbound(msg);
                return f?.(msg, extra);
            };
        }
    };
    let userOnMessage;
    return t;
}

/**
 * elicitContent builds content that satisfies a form elicitation's
 * requestedSchema (the restricted, flat primitive schema of the spec):
 * defaults where given, otherwise a valid value for each type/format/enum,
 * for every property (required or not) so the whole form is exercised.
 */
export function elicitContent(schema) {
    const out = {};
    for (const [key, prop] of Object.entries(schema?.properties ?? {})) {
        out[key] = key === 'name' && prop.type === 'string' ? ELICIT_NAME : valueFor(prop);
    }
    return out;
}

function valueFor(p) {
    if (p.default !== undefined) return p.default;
    if (Array.isArray(p.enum) && p.enum.length) return p.enum[0];
    if (Array.isArray(p.oneOf) && p.oneOf.length && 'const' in p.oneOf[0]) return p.oneOf[0].const;
    if (Array.isArray(p.anyOf) && p.anyOf.length && 'const' in p.anyOf[0]) return p.anyOf[0].const;
    switch (p.type) {
        case 'boolean':
            return true;
        case 'integer':
        case 'number': {
            let v = p.minimum ?? 1;
            if (p.maximum !== undefined && v > p.maximum) v = p.maximum;
            return p.type === 'integer' ? Math.ceil(v) : v;
        }
        case 'array': {
            const it = p.items ?? {};
            const opts = it.enum ?? (it.anyOf ?? it.oneOf ?? []).map(o => o.const);
            const n = Math.max(1, p.minItems ?? 1);
            return opts.slice(0, n);
        }
        case 'string':
        default:
            switch (p.format) {
                case 'email':
                    return 'interop@example.com';
                case 'uri':
                    return 'https://example.com/interop';
                case 'date':
                    return '2000-01-01';
                case 'date-time':
                    return '2000-01-01T00:00:00Z';
                default: {
                    let s = 'interop';
                    if (p.minLength && s.length < p.minLength) s = s.padEnd(p.minLength, 'x');
                    if (p.maxLength && s.length > p.maxLength) s = s.slice(0, p.maxLength);
                    return s;
                }
            }
    }
}

/**
 * answerElicitation is both drivers' elicitation/create handler: accept,
 * with content that satisfies the form (elicitContent), recorded in
 * handled.elicitation.
 */
export function answerElicitation(handled) {
    return async req => {
        const content = elicitContent(req.params.requestedSchema);
        handled.elicitation.push({ fields: Object.keys(req.params.requestedSchema?.properties ?? {}).length, message: req.params.message });
        log('answering elicitation/create with', content);
        return { action: 'accept', content };
    };
}

/** waiter: until(cond, ms) resolves once cond() holds (re-checked on every poke()), or rejects after ms. */
export function waiter() {
    const pending = [];
    return {
        poke() {
            for (const w of [...pending]) if (w.cond()) w.done();
        },
        until(cond, ms, what) {
            return new Promise((resolve, reject) => {
                if (cond()) return resolve();
                const w = {
                    cond,
                    done: () => {
                        clearTimeout(timer);
                        pending.splice(pending.indexOf(w), 1);
                        resolve();
                    }
                };
                const timer = setTimeout(() => {
                    pending.splice(pending.indexOf(w), 1);
                    reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
                }, ms);
                pending.push(w);
            });
        }
    };
}

/** samplingResult is the fixed assistant message both drivers answer sampling with. */
export function samplingResult() {
    return {
        model: 'interop-fixed-model',
        role: 'assistant',
        content: { type: 'text', text: SAMPLING_REPLY },
        stopReason: 'endTurn'
    };
}

/** textOf joins the text blocks of a CallToolResult. */
export function textOf(result) {
    return (result?.content ?? [])
        .filter(c => c.type === 'text')
        .map(c => c.text)
        .join('\n');
}

/** errInfo turns anything thrown into a JSON-friendly description. */
export function errInfo(e) {
    if (!(e instanceof Error)) return { message: String(e) };
    const o = { name: e.name, message: e.message };
    if (e.code !== undefined) o.code = e.code;
    if (e.data !== undefined) o.data = e.data;
    if (e.cause !== undefined) o.cause = errInfo(e.cause);
    return o;
}

/**
 * Runner collects step results and errors and prints the summary exactly
 * once: at the end, on a fatal error, or when the watchdog fires.
 */
export class Runner {
    constructor(driver, timeoutMs) {
        this.summary = { driver, ok: false, errors: [], steps: {} };
        this.printed = false;
        this.watchdog = setTimeout(() => {
            this.fail('watchdog', new Error(`driver did not finish within ${timeoutMs} ms`));
            this.finish(3);
        }, timeoutMs);
        this.watchdog.unref?.();
    }
    fail(step, e) {
        const info = { step, ...errInfo(e) };
        this.summary.errors.push(info);
        log('FAIL', info);
    }
    /** step runs fn, stores its return value under steps[name]; errors are recorded, not thrown. */
    async step(name, fn) {
        const t0 = performance.now();
        log(`step ${name}: start`);
        try {
            const r = await fn();
            this.summary.steps[name] = { ok: true, ms: Math.round(performance.now() - t0), ...r };
            log(`step ${name}: ok`);
            return r;
        } catch (e) {
            // A step may attach what it measured before failing (e.result).
            this.summary.steps[name] = { ok: false, ms: Math.round(performance.now() - t0), ...e?.result, error: errInfo(e) };
            this.fail(name, e);
            return undefined;
        }
    }
    finish(code) {
        if (this.printed) return;
        this.printed = true;
        clearTimeout(this.watchdog);
        this.summary.ok = this.summary.errors.length === 0;
        process.stdout.write(JSON.stringify(this.summary) + '\n', () => {
            process.exit(code ?? (this.summary.ok ? 0 : 1));
        });
    }
}

/**
 * stdioParams builds StdioClientTransport parameters for --command CMD -- ARGS.
 * With --stderr-file PATH the child's stderr (for `mcp-bridge connect`: its
 * log) goes to that file instead of the driver's own stderr, so the test
 * can check it on its own.
 */
export function stdioParams(f, positionals) {
    const stderr = f['stderr-file'] ? openSync(f['stderr-file'], 'a') : 'inherit';
    // PATH etc. come from the SDK's default environment; pass what the
    // bridge may need besides (GORACE for -race builds, MCP_BRIDGE_*;
    // MCP_REMOTE_* for mcp-remote as the child).
    const env = {};
    for (const [k, v] of Object.entries(process.env)) {
        if (k === 'GORACE' || k.startsWith('MCP_BRIDGE_') || k.startsWith('MCP_REMOTE_')) env[k] = v;
    }
    return { command: f.command, args: positionals, stderr, env };
}

/**
 * watchChild records, in summary.child, the pid of the stdio server process
 * an SDK StdioClientTransport spawned (the pinned SDKs keep it in _process)
 * and how it ended: exit code or signal, and how long after the driver
 * closed its stdin. The SDKs' close() ends stdin, waits 2 s, then sends
 * SIGTERM, then SIGKILL: a child that exits by itself on stdin EOF has
 * signal null.
 */
export function watchChild(inner, summary) {
    const proc = inner._process;
    if (!proc) return { closing() {} };
    const child = (summary.child = { pid: proc.pid, exitCode: null, signal: null, exited: false, exitAfterStdinCloseMs: null });
    let closedAt;
    proc.once('exit', (code, signal) => {
        Object.assign(child, { exited: true, exitCode: code, signal });
        if (closedAt !== undefined) child.exitAfterStdinCloseMs = Math.round(performance.now() - closedAt);
    });
    return {
        closing() {
            closedAt = performance.now();
        }
    };
}

/**
 * connectTransport connects client, with its SDK's own transport classes,
 * to --url (Streamable HTTP, counted by countingFetch) or to a child
 * launched from --command (stdio, counted by countingTransport and watched
 * by watchChild even when the connect fails). It returns the transport and
 * the child's watcher. extra is merged into the SDK's connect options
 * (ts-v2-client's --reconnect passes a prior discover result).
 */
export async function connectTransport(client, { Http, Stdio }, f, positionals, stats, summary, timeout, extra = {}) {
    let transport;
    let inner;
    if (f.url) {
        summary.transport = 'http';
        transport = new Http(new URL(f.url), { fetch: countingFetch(stats) });
    } else if (f.command) {
        summary.transport = 'stdio';
        inner = new Stdio(stdioParams(f, positionals));
        transport = countingTransport(inner, stats);
    } else {
        throw new Error('need --url URL or --command CMD [-- ARGS...]');
    }
    let child = { closing() {} };
    try {
        await client.connect(transport, { timeout, ...extra });
    } finally {
        if (inner) child = watchChild(inner, summary);
    }
    return { transport, child };
}

/** waitChildExit gives a stdio child up to 1 s more to report its exit. */
export async function waitChildExit(summary) {
    for (let i = 0; summary.child && !summary.child.exited && i < 20; i++) await new Promise(r => setTimeout(r, 50));
}
