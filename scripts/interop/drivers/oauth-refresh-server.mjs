#!/usr/bin/env node
// oauth-refresh-server: an MCP server protected by an authorization server
// built from @modelcontextprotocol/sdk 1.32.2's own OAuth server pieces —
// mcpAuthRouter (metadata, dynamic registration, /authorize, /token with
// PKCE and refresh_token handling) and requireBearerAuth — with the SDK's
// demo provider (DemoInMemoryAuthProvider, which approves at once and
// redirects) extended by the one thing it leaves out: refresh tokens, rotated
// on each use. For the issue 9 end-to-end test of connect's refresh.
//
//   MCP_PORT, MCP_AUTH_PORT   the two ports (127.0.0.1, "localhost" in URLs)
//   POST /admin/expire        (MCP port) forget every access token: the next request gets 401
//   POST /admin/revoke        forget every access and refresh token
// Logs "refresh grant" on stderr for each refresh.

import { randomUUID } from 'node:crypto';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { mcpAuthRouter, mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { createOAuthMetadata } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { z } from 'zod';

const mcpPort = Number(process.env.MCP_PORT);
const authPort = Number(process.env.MCP_AUTH_PORT);
const mcpUrl = new URL(`http://localhost:${mcpPort}/mcp`);
const authUrl = new URL(`http://localhost:${authPort}`);

class RefreshingProvider extends DemoInMemoryAuthProvider {
    refreshTokens = new Map(); // refresh token -> { clientId, scopes, resource }

    async exchangeAuthorizationCode(client, code, verifier) {
        const params = this.codes.get(code)?.params;
        const t = await super.exchangeAuthorizationCode(client, code, verifier);
        return this.withRefresh(t, client.client_id, params?.scopes ?? [], params?.resource);
    }

    withRefresh(t, clientId, scopes, resource) {
        const rt = randomUUID();
        this.refreshTokens.set(rt, { clientId, scopes, resource });
        return { ...t, refresh_token: rt };
    }

    async exchangeRefreshToken(client, refreshToken, scopes, resource) {
        const data = this.refreshTokens.get(refreshToken);
        if (!data || data.clientId !== client.client_id) throw new Error('invalid refresh token');
        this.refreshTokens.delete(refreshToken); // rotation
        process.stderr.write('refresh grant\n');
        const token = randomUUID();
        this.tokens.set(token, { token, clientId: client.client_id, scopes: data.scopes, expiresAt: Date.now() + 3600000, resource: data.resource, type: 'access' });
        return this.withRefresh({ access_token: token, token_type: 'bearer', expires_in: 3600, scope: data.scopes.join(' ') }, client.client_id, data.scopes, data.resource);
    }
}

const provider = new RefreshingProvider();
const authApp = express();
authApp.use(mcpAuthRouter({ provider, issuerUrl: authUrl, scopesSupported: ['mcp:tools'] }));
authApp.listen(authPort, '127.0.0.1');

const app = express();
app.use(express.json());
app.use(mcpAuthMetadataRouter({ oauthMetadata: createOAuthMetadata({ provider, issuerUrl: authUrl, scopesSupported: ['mcp:tools'] }), resourceServerUrl: mcpUrl, scopesSupported: ['mcp:tools'] }));
app.post('/admin/expire', (_req, res) => {
    provider.tokens.clear();
    res.json({ ok: true });
});
app.post('/admin/revoke', (_req, res) => {
    provider.tokens.clear();
    provider.refreshTokens.clear();
    res.json({ ok: true });
});
// The demo provider throws a plain Error for an unknown token, which
// requireBearerAuth turns into a 500; an unknown token is a 401.
const verifier = {
    async verifyAccessToken(token) {
        try {
            return await provider.verifyAccessToken(token);
        } catch (e) {
            throw new InvalidTokenError(String(e.message ?? e));
        }
    }
};
const auth = requireBearerAuth({ verifier, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) });
app.post('/mcp', auth, async (req, res) => {
    const server = new McpServer({ name: 'oauth-refresh-server', version: '1.0.0' });
    server.tool('greet', { name: z.string() }, async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
        transport.close();
        server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
});
app.get('/mcp', auth, (_req, res) => res.status(405).end());
app.delete('/mcp', auth, (_req, res) => res.status(405).end());
app.listen(mcpPort, '127.0.0.1', () => process.stderr.write(`listening on ${mcpUrl}\n`));
