// Package oauth is the client side of MCP authorization (revisions
// 2025-03-26 to 2026-07-28): OAuth 2.1 with protected resource metadata
// (RFC 9728), authorization server metadata (RFC 8414, OpenID Connect
// Discovery), client identity by pre-registration, Client ID Metadata
// Document or dynamic registration (RFC 7591), PKCE S256, resource
// indicators (RFC 8707), issuer identification (RFC 9207), refresh tokens,
// step-up authorization, the client-credentials grant with a secret or
// private_key_jwt (RFC 7523), and the device authorization grant (RFC 8628)
// for machines without a browser.
//
// An [Authorizer] holds the state for one MCP server; a [Transport] wraps
// an http.RoundTripper so that every request carries the current token and
// a 401 (or a 403 insufficient_scope) gets a new token and one more send.
// Requests that arrive during a login wait for it. Logins run in the
// person's browser: a command opens the authorization URL, and a listener
// on 127.0.0.1 takes the redirect. A [Store] keeps registrations and tokens
// in 0600 files and serializes logins across processes with a file lock.
//
// The package imports nothing else of this module. Tokens, codes and
// secrets are never logged.
package oauth
