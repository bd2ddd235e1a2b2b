#!/usr/bin/env node
// oidc-provider: node-oidc-provider (the npm package oidc-provider, an
// OpenID Certified authorization server nobody here wrote) configured as
// the authorization server of `mcp-bridge serve --oauth-issuer`, for issue
// 28's interop test of connect's OAuth client:
//
//   - open dynamic client registration (RFC 7591), PKCE required;
//   - resource indicators (RFC 8707): any loopback URL ending in /mcp is a
//     resource server whose access tokens are JWTs (RFC 9068, at+jwt) with
//     aud = the resource and scope mcp:memos, living ACCESS_TOKEN_TTL
//     seconds;
//   - refresh tokens for offline_access (which the provider grants only
//     with prompt=consent, as OpenID Connect Core §11 says), rotated;
//   - the provider's development login and consent pages (devInteractions),
//     which the scripted browser fills in.
//
// It listens on 127.0.0.1:$PORT; the issuer is http://127.0.0.1:$PORT.
// WRONG_AUDIENCE=1 issues access tokens for another audience (every
// resource server refuses them); NO_REFRESH=1 issues no refresh tokens.
// DEVICE_FLOW=1 enables the device authorization grant (RFC 8628,
// features.deviceFlow: /device/auth, the user code pages at /device);
// DEVICE_CODE_TTL sets its device codes' lifetime in seconds.
// Test hooks, outside the provider's routes:
//   GET  /test/stats    {"registrations":N,"authorizations":N,"grants":{"authorization_code":N,"refresh_token":N},"errors":[...]}
//   POST /test/forget   forget every registered client (an AS reset)
// A registration request without a scope is refused (invalid_client_metadata),
// as an authorization server that holds clients to their registered scope
// (Ory Hydra) in effect does: it would give such a client its defaults.

import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.PORT);
const ttl = Number(process.env.ACCESS_TOKEN_TTL || 20);
const issuer = `http://127.0.0.1:${port}`;
const resourceScope = 'mcp:memos';

// A memory adapter the test can reach into (the built-in one is private).
const store = new Map();
class Adapter {
  constructor(name) { this.name = name; }
  key(id) { return `${this.name}:${id}`; }
  async upsert(id, payload) {
    store.set(this.key(id), payload);
    if (payload.grantId) store.set(`grant:${payload.grantId}:${this.key(id)}`, true);
    if (payload.uid) store.set(`uid:${payload.uid}`, id);
    if (payload.userCode) store.set(`${this.name}:userCode:${payload.userCode}`, id);
  }
  async find(id) { return store.get(this.key(id)); }
  async findByUid(uid) { const id = store.get(`uid:${uid}`); return id ? this.find(id) : undefined; }
  async findByUserCode(userCode) { const id = store.get(`${this.name}:userCode:${userCode}`); return id ? this.find(id) : undefined; }
  async consume(id) { const p = store.get(this.key(id)); if (p) p.consumed = Math.floor(Date.now() / 1000); }
  async destroy(id) { store.delete(this.key(id)); }
  async revokeByGrantId(grantId) {
    const prefix = `grant:${grantId}:`;
    for (const k of [...store.keys()]) {
      if (k.startsWith(prefix)) { store.delete(k.slice(prefix.length)); store.delete(k); }
    }
  }
}

const stats = { registrations: 0, registeredScopes: [], authorizations: 0, grants: {}, errors: [] };

function isResource(indicator) {
  try {
    const u = new URL(indicator);
    return u.protocol === 'http:' && u.hostname === '127.0.0.1' && u.pathname.endsWith('/mcp');
  } catch { return false; }
}

const provider = new Provider(issuer, {
  adapter: Adapter,
  // Static scopes: a client's registered scope may name only these.
  scopes: ['openid', 'offline_access', resourceScope],
  features: {
    registration: { enabled: true },
    devInteractions: { enabled: true },
    deviceFlow: { enabled: process.env.DEVICE_FLOW === '1' },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, indicator) {
        if (!isResource(indicator)) throw new errors.InvalidTarget();
        return {
          scope: resourceScope,
          audience: process.env.WRONG_AUDIENCE === '1' ? `${indicator}/not-this-one` : indicator,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  pkce: { required: () => true },
  ...(process.env.NO_REFRESH === '1' ? { issueRefreshToken: async () => false } : {}),
  cookies: { keys: ['mcp-bridge-interop-cookie-key'] },
  ttl: {
    RefreshToken: 3600, Grant: 3600, Session: 3600, Interaction: 600, AuthorizationCode: 60,
    DeviceCode: Number(process.env.DEVICE_CODE_TTL || 600),
  },
});

provider.on('registration_create.success', () => { stats.registrations++; });
provider.on('authorization.success', () => { stats.authorizations++; });
provider.on('grant.success', (ctx) => {
  const g = ctx.oidc.params?.grant_type ?? 'unknown';
  stats.grants[g] = (stats.grants[g] ?? 0) + 1;
});
for (const ev of ['grant.error', 'authorization.error', 'registration_create.error', 'server_error']) {
  provider.on(ev, (ctx, err) => {
    const e = `${ev}: ${err?.error ?? ''} ${err?.error_description ?? err?.message ?? ''}`;
    stats.errors.push(e);
    console.error(e);
  });
}

const callback = provider.callback();
const server = http.createServer(async (req, res) => {
  if (req.url === '/reg' && req.method === 'POST') {
    // Read here to check the scope; the provider then uses req.body.
    const chunks = [];
    for await (const c of req) chunks.push(c);
    req.body = Buffer.concat(chunks);
    let scope;
    try { scope = JSON.parse(req.body.toString()).scope; } catch { /* the provider answers */ }
    if (!scope) {
      res.writeHead(400, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: 'invalid_client_metadata', error_description: 'scope is required' }));
      stats.errors.push('registration without scope');
      return;
    }
    stats.registeredScopes.push(scope);
  }
  if (req.url === '/test/stats') {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(stats));
    return;
  }
  if (req.url === '/test/forget' && req.method === 'POST') {
    let n = 0;
    for (const k of [...store.keys()]) {
      if (k.startsWith('Client:') || k.startsWith('RegistrationAccessToken:')) { store.delete(k); n++; }
    }
    console.error(`forgot ${n} clients`);
    res.end(String(n));
    return;
  }
  callback(req, res);
});
server.listen(port, '127.0.0.1', () => console.error(`oidc-provider ${issuer} listening`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
