// Package auth is serve's authorization, both halves of it: who may call
// an MCP endpoint and as whom.
//
// Before any credential, Origins checks where a request comes from: a
// loopback listener refuses a Host that is not a loopback name (DNS
// rebinding), a browser Origin must be allowed or loopback, and CORS
// answers the allowed origins. outbound.LoopbackHost is the binary's one rule of
// what names this machine's loopback.
//
// Static bearer tokens (--auth-token, --auth-token-file) are checked by a
// Guard, which also asks an Authenticator for any other credential and
// gives each admitted request its Principal: whom a child may be
// dedicated to, what logs and metrics name. The token file's parser and
// the scrub that keeps the inbound tokens out of a child's environment and
// command line live here too.
//
// The OAuth 2.1 resource-server side of the MCP authorization spec is the
// other half: it verifies the access tokens clients send to an MCP
// endpoint (JWTs against the issuers' published keys, opaque tokens by RFC
// 7662 introspection), answers RFC 9728 protected-resource metadata, and
// writes the 401/403 challenges that tell a client where to log in.
//
// A Server holds what endpoints share (issuer metadata and key caches, the
// introspection client); a Resource is one endpoint: its canonical URI and
// the scopes it requires. A gateway with many routes makes one Server and a
// Resource per route. A Resource is an Authenticator.
//
// The package imports neither serve nor connect.
package auth
