#!/usr/bin/env bash
# scripts/bench/many-remotes.sh — one stdio host entry for three remote MCP
# servers (issue #26): one `mcp-bridge connect --config FILE` vs three
# `mcp-bridge connect URL` processes vs three mcp-remote 0.15.1 processes,
# against three scripts/bench/httpecho remotes. Summed RSS of the process
# trees (idle after every server answered, peak under load) and calls/s at
# 1 and 16 calls in flight, spread round-robin over the three servers
# (scripts/bench/manyremotes).
#
#   scripts/bench/many-remotes.sh [--skip-npm] [-n CALLS] [-c CONCURRENCY]
#
# Output: the table on stderr and scripts/bench/results/<UTC stamp>-many-remotes.json.
# Everything listens on 127.0.0.1; every process started is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH=$PWD/scripts/bench
npm=1 extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--skip-npm) npm=0 ;;
	-n | -c) extra+=("$1" "$2") && shift ;;
	*) echo "many-remotes.sh: unknown argument $1" >&2 && exit 2 ;;
	esac
	shift
done
stamp=$(date -u +%Y%m%dT%H%M%SZ)
TMP=$BENCH/results/tmp/$stamp-many-remotes
BIN=$TMP/bin
mkdir -p "$BIN" "$TMP/mcp-auth"
# The binary users install (run.sh builds it the same way).
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/mcp-bridge" ./cmd/mcp-bridge
go build -o "$BIN/" ./scripts/bench/httpecho ./scripts/bench/manyremotes
if [ $npm = 1 ]; then
	(cd "$BENCH" && npm ci --no-audit --no-fund --loglevel=error)
fi
"$BIN/manyremotes" -httpecho "$BIN/httpecho" -bridge "$BIN/mcp-bridge" \
	-mcp-remote "$BENCH/node_modules/mcp-remote/dist/proxy.js" -tmp "$TMP" \
	-out "$BENCH/results/$stamp-many-remotes.json" "${extra[@]}"
echo "results: scripts/bench/results/$stamp-many-remotes.json" >&2
