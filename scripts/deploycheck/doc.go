// Package deploycheck validates the deployment files in examples/deploy
// that no load balancer test runs: the Kubernetes manifests (strictly
// decoded into the k8s.io/api types, unknown fields rejected, then checked
// for what docs/deploy.md promises) and the Dockerfile.
//
// It is a module of its own so that k8s.io/api stays out of mcp-bridge's
// go.mod; scripts/test.sh runs it with `go test ./...` from this directory.
package deploycheck
