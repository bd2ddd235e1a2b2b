package auth

import "net/http"

// An Authenticator admits requests by a credential other than the static
// tokens: a Resource (OAuth access tokens) is one. It is an interface so
// that a gateway can wrap a route's Resource (its aggregate's delegated
// callers) and a test can stand in for one.
type Authenticator interface {
	// Authenticate returns the principal r acts for (a stable identity: a
	// Resource gives "<issuer> <subject>", or "client:<issuer> <client_id>"
	// for an introspected client-credentials token). On failure it has set
	// the challenge headers on w, and the error says why without quoting
	// the token; its HTTPStatus() int method, if it has one, gives the
	// status (else 401). The caller writes the body.
	Authenticate(w http.ResponseWriter, r *http.Request) (principal string, err error)

	// ServeMetadata answers the RFC 9728 protected-resource metadata.
	ServeMetadata(w http.ResponseWriter, r *http.Request)
}
