#!/usr/bin/env node
// conformance-client: the client under test for the official conformance
// suite's client scenarios (`conformance client --command "node
// conformance-client.mjs --via MODE" --scenario S`). The runner appends the
// scenario server's URL as the last argument and names the scenario in
// MCP_CONFORMANCE_SCENARIO (auth scenarios also get MCP_CONFORMANCE_CONTEXT).
//
// It is a real @modelcontextprotocol/sdk 1.32.2 Client doing what the
// suite's own everything-client (examples/clients/typescript in the
// conformance repository, v0.1.16) does for each scenario, with one
// transport chosen by --via:
//   --via direct   StreamableHTTPClientTransport to the scenario URL
//   --via bridge   StdioClientTransport launching `$MCP_INTEROP_BRIDGE connect
//                  --log-level debug URL`: the same client, through mcp-bridge.
//                  The bridge's stderr (its log) goes to
//                  $MCP_INTEROP_BRIDGE_LOG_DIR/<scenario>.log, and how it exited
//                  to <scenario>.exit.json.
//
// Scenarios:
//   initialize, tools_call          connect, tools/list (tools_call: call add_numbers {a:2,b:3})
//   elicitation-sep1034-client-defaults
//                                   declare elicitation {form:{applyDefaults:true}}, accept the
//                                   server's form with empty content (the SDK fills in the
//                                   schema defaults), via test_client_elicitation_defaults
//   sse-retry                       call test_reconnection, whose POST stream the server closes
//                                   (retry: 500 ms) and answers on the resumed GET stream
//   auth/*                          direct: the everything-client's OAuth client (the SDK's
//                                   auth() with an in-memory provider that follows the
//                                   authorization redirect itself; client credentials with the
//                                   SDK's providers; cross-app access by hand); bridge:
//                                   connect's own OAuth client (--oauth-browser
//                                   $MCP_INTEROP_BROWSER, a program that follows the redirect to
//                                   the loopback callback; a fresh token store per run via
//                                   XDG_CONFIG_HOME; --log-level trace), with the same client
//                                   identity the direct client has: the CIMD URL, the
//                                   pre-registered id (secret in MCP_BRIDGE_OAUTH_CLIENT_SECRET),
//                                   --oauth-grant client_credentials with a secret or
//                                   --oauth-client-key. Cross-app access: the host does the
//                                   IdP → ID-JAG → jwt-bearer exchange (connect has no such
//                                   grant) and hands the token over with --bearer-token.
// Exit 0 on success. Logs go to stderr.

import { writeFileSync, openSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { auth, extractWWWAuthenticateParams, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider, PrivateKeyJwtProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { parseFlags, log, errInfo } from './lib/common.mjs';

const CIMD_CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';

const { values: f, positionals } = parseFlags({ via: { type: 'string', default: 'direct' } });
// mcp-remote loads a 1.5 MB bundle before it reads stdin: about 10 s on a loaded 2-core
// machine, so its requests get more time (the comparison measures behaviour, not start-up).
const REQUEST_TIMEOUT = f.via === 'mcp-remote' ? 60000 : 20000;
const scenario = process.env.MCP_CONFORMANCE_SCENARIO;
const serverUrl = positionals[positionals.length - 1];

// ---------------------------------------------------------------------------
// Transports

/** bridgeTransport launches `mcp-bridge connect` for url, its log to a file. */
function bridgeTransport(url, extraArgs = [], extraEnv = {}) {
    const bin = process.env.MCP_INTEROP_BRIDGE;
    if (!bin) throw new Error('--via bridge needs MCP_INTEROP_BRIDGE (the mcp-bridge binary)');
    const dir = process.env.MCP_INTEROP_BRIDGE_LOG_DIR;
    const base = dir ? path.join(dir, scenario.replace(/[^A-Za-z0-9_.-]/g, '_')) : null;
    const stderr = base ? openSync(base + '.log', 'a') : 'inherit';
    const env = {};
    for (const [k, v] of Object.entries(process.env)) if (k === 'GORACE') env[k] = v;
    Object.assign(env, extraEnv);
    const args = ['connect', '--log-level', 'debug', ...extraArgs, url];
    log('launching', bin, args.map(a => (a.startsWith('ey') || a.length > 40 ? '<redacted>' : a)).join(' '));
    const t = new StdioClientTransport({ command: bin, args, stderr, env });
    // Record how the bridge ends once the client closes its stdin.
    const origStart = t.start.bind(t);
    t.start = async () => {
        await origStart();
        const proc = t._process;
        const info = { pid: proc.pid, exited: false, exitCode: null, signal: null };
        let closedAt;
        const origClose = t.close.bind(t);
        t.close = async () => {
            closedAt ??= performance.now();
            await origClose();
        };
        proc.once('exit', (code, signal) => {
            Object.assign(info, { exited: true, exitCode: code, signal });
            if (closedAt !== undefined) info.exitAfterStdinCloseMs = Math.round(performance.now() - closedAt);
            if (base) writeFileSync(base + '.exit.json', JSON.stringify(info) + '\n');
        });
    };
    return t;
}

function transportFor(url, httpOptions = {}, bridgeArgs = []) {
    if (f.via === 'bridge') return bridgeTransport(url, bridgeArgs);
    if (f.via !== 'direct') throw new Error(`--via ${f.via}: want direct or bridge`);
    return new StreamableHTTPClientTransport(new URL(url), httpOptions);
}

async function closeAll(client) {
    await client.close();
    // Give the bridge's exit event (and the .exit.json write) a moment.
    await new Promise(r => setTimeout(r, 100));
}

// ---------------------------------------------------------------------------
// Basic scenarios

async function runBasic(url, { callAddNumbers = false } = {}) {
    const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities: {} });
    const transport = transportFor(url);
    await client.connect(transport, { timeout: REQUEST_TIMEOUT });
    log('connected; server', client.getServerVersion());
    const { tools } = await client.listTools(undefined, { timeout: REQUEST_TIMEOUT });
    log('tools:', tools.map(t => t.name));
    if (callAddNumbers) {
        if (!tools.some(t => t.name === 'add_numbers')) throw new Error('add_numbers not listed');
        const r = await client.callTool({ name: 'add_numbers', arguments: { a: 2, b: 3 } }, undefined, { timeout: REQUEST_TIMEOUT });
        log('add_numbers:', JSON.stringify(r.content));
        if (r.isError) throw new Error('add_numbers returned isError');
    }
    await closeAll(client);
}

async function runElicitationDefaults(url) {
    const client = new Client(
        { name: 'elicitation-defaults-test-client', version: '1.0.0' },
        // SDK 1.32.2 applies defaults when elicitation.form.applyDefaults is
        // declared (the suite's example client puts applyDefaults one level
        // up, which this SDK ignores).
        { capabilities: { elicitation: { form: { applyDefaults: true } } } }
    );
    client.setRequestHandler(ElicitRequestSchema, async req => {
        log('elicitation/create:', JSON.stringify(req.params.requestedSchema));
        return { action: 'accept', content: {} }; // the SDK applies the defaults
    });
    const transport = transportFor(url);
    await client.connect(transport, { timeout: REQUEST_TIMEOUT });
    const { tools } = await client.listTools(undefined, { timeout: REQUEST_TIMEOUT });
    if (!tools.some(t => t.name === 'test_client_elicitation_defaults')) {
        throw new Error('test_client_elicitation_defaults not listed');
    }
    const r = await client.callTool({ name: 'test_client_elicitation_defaults', arguments: {} }, undefined, { timeout: REQUEST_TIMEOUT });
    log('result:', JSON.stringify(r.content));
    await closeAll(client);
}

async function runSSERetry(url) {
    const client = new Client({ name: 'sse-retry-test-client', version: '1.0.0' }, { capabilities: {} });
    const transport = transportFor(url, {
        reconnectionOptions: { initialReconnectionDelay: 1000, maxReconnectionDelay: 10000, reconnectionDelayGrowFactor: 1.5, maxRetries: 3 }
    });
    await client.connect(transport, { timeout: REQUEST_TIMEOUT });
    const r = await client.request(
        { method: 'tools/call', params: { name: 'test_reconnection', arguments: {} } },
        CallToolResultSchema,
        { timeout: REQUEST_TIMEOUT }
    );
    log('test_reconnection:', JSON.stringify(r.content));
    await closeAll(client);
}

// ---------------------------------------------------------------------------
// Auth scenarios (direct): the everything-client's OAuth client.

class ConformanceOAuthProvider {
    constructor(redirectUrl, clientMetadata, clientMetadataUrl) {
        this._redirectUrl = redirectUrl;
        this._clientMetadata = clientMetadata;
        this._clientMetadataUrl = clientMetadataUrl;
    }
    get redirectUrl() {
        return this._redirectUrl;
    }
    get clientMetadata() {
        return this._clientMetadata;
    }
    get clientMetadataUrl() {
        return this._clientMetadataUrl?.toString();
    }
    clientInformation() {
        return this._clientInformation;
    }
    saveClientInformation(info) {
        this._clientInformation = info;
    }
    tokens() {
        return this._tokens;
    }
    saveTokens(tokens) {
        this._tokens = tokens;
    }
    async redirectToAuthorization(authorizationUrl) {
        // The conformance authorization server redirects at once with a code.
        const res = await fetch(authorizationUrl.toString(), { redirect: 'manual' });
        const location = res.headers.get('location');
        if (!location) throw new Error(`no redirect location from ${authorizationUrl}`);
        const code = new URL(location).searchParams.get('code');
        if (!code) throw new Error('no auth code in redirect URL');
        this._authCode = code;
    }
    async getAuthCode() {
        if (this._authCode) return this._authCode;
        throw new Error('No authorization code');
    }
    saveCodeVerifier(v) {
        this._codeVerifier = v;
    }
    codeVerifier() {
        if (!this._codeVerifier) throw new Error('No code verifier saved');
        return this._codeVerifier;
    }
}

async function handle401(response, provider, next, url) {
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
    let result = await auth(provider, { serverUrl: url, resourceMetadataUrl, scope, fetchFn: next });
    if (result === 'REDIRECT') {
        const authorizationCode = await provider.getAuthCode();
        result = await auth(provider, { serverUrl: url, resourceMetadataUrl, scope, authorizationCode, fetchFn: next });
        if (result !== 'AUTHORIZED') throw new UnauthorizedError(`Authentication failed with result: ${result}`);
    }
}

function oauthFetch(provider, baseUrl) {
    const next = fetch;
    return async (input, init) => {
        const makeRequest = async () => {
            const headers = new Headers(init?.headers);
            const tokens = await provider.tokens();
            if (tokens) headers.set('Authorization', `Bearer ${tokens.access_token}`);
            return next(input, { ...init, headers });
        };
        let res = await makeRequest();
        if (res.status === 401 || res.status === 403) {
            const url = baseUrl || (typeof input === 'string' ? new URL(input).origin : input.origin);
            await handle401(res, provider, next, url);
            res = await makeRequest();
        }
        if (res.status === 401 || res.status === 403) {
            throw new UnauthorizedError(`Authentication failed for ${typeof input === 'string' ? input : input.toString()}`);
        }
        return res;
    };
}

function newProvider(clientName, clientMetadataUrl) {
    return new ConformanceOAuthProvider(
        'http://localhost:3000/callback',
        { client_name: clientName, redirect_uris: ['http://localhost:3000/callback'] },
        clientMetadataUrl
    );
}

// Clients still open when a scenario fails (some auth scenarios expect the
// client to fail): main closes them, so the bridge sees stdin EOF and its
// exit is recorded like after a success.
const openClients = new Set();

async function listAndCall(client, transport, { call = true } = {}) {
    openClients.add(client);
    await client.connect(transport, { timeout: REQUEST_TIMEOUT });
    await client.listTools(undefined, { timeout: REQUEST_TIMEOUT });
    if (call) await client.callTool({ name: 'test-tool', arguments: {} }, undefined, { timeout: REQUEST_TIMEOUT });
    openClients.delete(client);
    await closeAll(client);
}

function context() {
    const raw = process.env.MCP_CONFORMANCE_CONTEXT;
    if (!raw) throw new Error('MCP_CONFORMANCE_CONTEXT not set');
    return JSON.parse(raw);
}

async function runAuthCode(url) {
    const client = new Client({ name: 'test-auth-client', version: '1.0.0' }, { capabilities: {} });
    if (f.via === 'mcp-remote') {
        await listAndCall(client, mcpRemoteTransport(url, ['--client-metadata-url', CIMD_CLIENT_METADATA_URL]));
        return;
    }
    if (f.via === 'bridge') {
        // connect's own OAuth client, with the same Client ID Metadata
        // Document URL the direct client offers.
        await listAndCall(client, bridgeTransport(url, [...oauthArgs(), '--oauth-client-metadata-url', CIMD_CLIENT_METADATA_URL], oauthEnv()));
        return;
    }
    const provider = newProvider('test-auth-client', CIMD_CLIENT_METADATA_URL);
    await listAndCall(client, new StreamableHTTPClientTransport(new URL(url), { fetch: oauthFetch(provider, new URL(url)) }));
}

async function runPreRegistration(url) {
    const ctx = context();
    const client = new Client({ name: 'conformance-pre-registration', version: '1.0.0' }, { capabilities: {} });
    if (f.via === 'mcp-remote') {
        const info = JSON.stringify({ client_id: ctx.client_id, client_secret: ctx.client_secret });
        await listAndCall(client, mcpRemoteTransport(url, ['--static-oauth-client-info', info]), { call: false });
        return;
    }
    if (f.via === 'bridge') {
        const t = bridgeTransport(url, [...oauthArgs(), '--oauth-client-id', ctx.client_id], oauthEnv({ MCP_BRIDGE_OAUTH_CLIENT_SECRET: ctx.client_secret }));
        await listAndCall(client, t, { call: false });
        return;
    }
    const provider = newProvider('conformance-pre-registration');
    provider.saveClientInformation({ client_id: ctx.client_id, client_secret: ctx.client_secret, redirect_uris: ['http://localhost:3000/callback'] });
    await listAndCall(client, new StreamableHTTPClientTransport(new URL(url), { fetch: oauthFetch(provider, new URL(url)) }), { call: false });
}

async function runClientCredentials(url) {
    const ctx = context();
    const provider =
        scenario === 'auth/client-credentials-jwt'
            ? new PrivateKeyJwtProvider({ clientId: ctx.client_id, privateKey: ctx.private_key_pem, algorithm: ctx.signing_algorithm || 'ES256' })
            : new ClientCredentialsProvider({ clientId: ctx.client_id, clientSecret: ctx.client_secret });
    const client = new Client({ name: `conformance-${scenario.slice(5)}`, version: '1.0.0' }, { capabilities: {} });
    if (f.via === 'mcp-remote') {
        // mcp-remote's client_credentials grant takes a secret only (no private_key_jwt).
        const info = JSON.stringify({ client_id: ctx.client_id, client_secret: ctx.client_secret ?? '' });
        await listAndCall(client, mcpRemoteTransport(url, ['--client-credentials', '--static-oauth-client-info', info]), { call: false });
        return;
    }
    if (f.via === 'bridge') {
        // connect's own client_credentials grant: a secret (env) or a key file.
        const args = [...oauthArgs(), '--oauth-grant', 'client_credentials', '--oauth-client-id', ctx.client_id];
        const extraEnv = oauthEnv();
        if (scenario === 'auth/client-credentials-jwt') {
            const keyFile = path.join(extraEnv.XDG_CONFIG_HOME, 'client-key.pem');
            writeFileSync(keyFile, ctx.private_key_pem, { mode: 0o600 });
            args.push('--oauth-client-key', keyFile, '--oauth-client-key-alg', ctx.signing_algorithm || 'ES256');
        } else {
            extraEnv.MCP_BRIDGE_OAUTH_CLIENT_SECRET = ctx.client_secret;
        }
        await listAndCall(client, bridgeTransport(url, args, extraEnv), { call: false });
        return;
    }
    await listAndCall(client, new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }), { call: false });
}

async function runCrossAppAccess(url) {
    const ctx = context();
    // Step 0: the protected resource metadata and the authorization server.
    const prm = await (await mustFetch(new URL('/.well-known/oauth-protected-resource/mcp', url))).json();
    const as = await (await mustFetch(new URL('/.well-known/oauth-authorization-server', prm.authorization_servers[0]))).json();
    if (!(as.grant_types_supported ?? []).includes('urn:ietf:params:oauth:grant-type:jwt-bearer')) {
        throw new Error('the authorization server does not support the jwt-bearer grant');
    }
    // Step 1: IdP ID token -> ID-JAG (token exchange at the IdP).
    const jag = await (
        await mustFetch(ctx.idp_token_endpoint, {
            method: 'POST',
            headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
                grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
                requested_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
                audience: as.issuer,
                resource: prm.resource,
                subject_token: ctx.idp_id_token,
                subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
                client_id: ctx.idp_client_id
            })
        })
    ).json();
    // Step 2: ID-JAG -> access token (jwt-bearer grant, client_secret_basic).
    const basic = Buffer.from(`${encodeURIComponent(ctx.client_id)}:${encodeURIComponent(ctx.client_secret)}`).toString('base64');
    const tok = await (
        await mustFetch(as.token_endpoint, {
            method: 'POST',
            headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: `Basic ${basic}` },
            body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: jag.access_token })
        })
    ).json();
    // Step 3: the MCP session with the access token.
    const client = new Client({ name: 'conformance-cross-app-access', version: '1.0.0' }, { capabilities: {} });
    const transport =
        f.via === 'mcp-remote'
            ? mcpRemoteTransport(url, ['--header', `Authorization:Bearer ${tok.access_token}`])
            : f.via === 'bridge'
            ? bridgeTransport(url, ['--bearer-token', tok.access_token])
            : new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${tok.access_token}` } } });
    await listAndCall(client, transport);
}

async function mustFetch(url, init) {
    const res = await fetch(url, init);
    if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`);
    return res;
}

/**
 * mcpRemoteTransport launches mcp-remote 0.15.1 (the comparison, --via
 * mcp-remote) for url: its browser is $BROWSER (the bundled xdg-open falls
 * back to it without a desktop), its store a fresh MCP_REMOTE_CONFIG_DIR.
 */
function mcpRemoteTransport(url, extraArgs = []) {
    const browser = process.env.MCP_INTEROP_BROWSER;
    if (!browser) throw new Error('--via mcp-remote needs MCP_INTEROP_BROWSER');
    const script = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'node_modules', 'mcp-remote', 'dist', 'proxy.js');
    const dir = process.env.MCP_INTEROP_BRIDGE_LOG_DIR;
    const stderr = dir ? openSync(path.join(dir, scenario.replace(/[^A-Za-z0-9_.-]/g, '_') + '.mcp-remote.log'), 'a') : 'inherit';
    const env = { BROWSER: browser, MCP_REMOTE_CONFIG_DIR: mkdtempSync(path.join(tmpdir(), 'mcp-remote-')) };
    const args = [script, url, '--allow-http', ...extraArgs];
    log('launching mcp-remote', args.map(a => (a.length > 60 ? '<redacted>' : a)).join(' '));
    return new StdioClientTransport({ command: process.execPath, args, stderr, env });
}

/** connect's OAuth flags: the non-interactive browser, trace logs (the test greps them for tokens). */
function oauthArgs() {
    const browser = process.env.MCP_INTEROP_BROWSER;
    if (!browser) throw new Error('--via bridge needs MCP_INTEROP_BROWSER (the testdata/browser binary)');
    return ['--oauth-browser', browser, '--oauth-timeout', '20s', '--log-level', 'trace'];
}

/** A fresh token store per run (os.UserConfigDir reads XDG_CONFIG_HOME), plus extra variables. */
function oauthEnv(extra = {}) {
    return { XDG_CONFIG_HOME: mkdtempSync(path.join(tmpdir(), 'mcp-bridge-oauth-')), ...extra };
}


// ---------------------------------------------------------------------------

const handlers = {
    initialize: url => runBasic(url),
    tools_call: url => runBasic(url, { callAddNumbers: true }),
    'elicitation-sep1034-client-defaults': runElicitationDefaults,
    'sse-retry': runSSERetry,
    'auth/pre-registration': runPreRegistration,
    'auth/client-credentials-jwt': runClientCredentials,
    'auth/client-credentials-basic': runClientCredentials,
    'auth/cross-app-access-complete-flow': runCrossAppAccess
};

async function main() {
    if (!scenario || !serverUrl) {
        log('usage: MCP_CONFORMANCE_SCENARIO=<scenario> conformance-client.mjs [--via direct|bridge] <server-url>');
        process.exit(2);
    }
    const handler = handlers[scenario] ?? (scenario.startsWith('auth/') ? runAuthCode : undefined);
    if (!handler) {
        log(`unknown scenario ${scenario}`);
        process.exit(2);
    }
    log(`scenario ${scenario} via ${f.via}: ${serverUrl}`);
    await handler(serverUrl);
    log('done');
    process.exit(0);
}

main().catch(async e => {
    log('FAILED:', errInfo(e));
    for (const c of openClients) await closeAll(c).catch(() => {});
    process.exit(1);
});
