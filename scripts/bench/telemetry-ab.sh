#!/usr/bin/env bash
# scripts/bench/telemetry-ab.sh — telemetry off against on (metrics + every
# span exported to a discarding OTLP sink), long phases, alternating.
#
#   scripts/bench/telemetry-ab.sh serve|connect [PAIRS] [CALLS]
#
# Each pair runs one phase of CALLS tool calls (default 80,000) at 64 in
# flight with telemetry off, then one with it on, each through a fresh
# mcp-bridge process; PAIRS (default 4) pairs in a row. It prints calls/s
# and the bridge's CPU s per 10,000 calls (serve: with its echo child) for
# every phase, and the share of off of each pair.
#
# Why beside run.sh: run.sh's phases are ~2 s after a fresh start, and the
# same configuration moves by up to 40% between its rounds on a shared
# 2-core machine; a ratio of two such medians cannot tell 5% from 10%.
# Long phases, off and on alternated, can (docs/benchmarks.md).
set -euo pipefail
what=${1:?usage: telemetry-ab.sh serve|connect [PAIRS] [CALLS]}
pairs=${2:-4}
calls=${3:-80000}
case $what in serve | connect) ;; *) echo "telemetry-ab.sh: serve or connect, not $what" >&2; exit 2 ;; esac

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TMP=$(mktemp -d)
BIN=$TMP/bin
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$BIN"
# As scripts/release.sh and run.sh build it.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/mcp-bridge" ./cmd/mcp-bridge
go build -o "$BIN/" ./scripts/bench/loadgen ./scripts/bench/echo ./scripts/bench/httpecho
LG=$BIN/loadgen

httpecho() { # httpecho NAME: starts one, sets its URL base in $url, pid in $pid
	local p
	p=$("$LG" freeport)
	"$BIN/httpecho" -listen "127.0.0.1:$p" >"$TMP/$1.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	url=http://127.0.0.1:$p
	for _ in $(seq 200); do
		curl -fs "$url/healthz" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "telemetry-ab.sh: httpecho did not come up" >&2
	exit 1
}
httpecho sink
sink=$url
if [ "$what" = connect ]; then
	httpecho remote
	remote=$url/mcp remote_pid=$pid
fi

phase() { # phase off|on: one measured phase; prints "calls/s cpu_s_per_10k"
	local env=() extra=() p
	if [ "$1" = on ]; then
		env=(-env "OTEL_EXPORTER_OTLP_ENDPOINT=$sink")
		extra=(--metrics-listen "127.0.0.1:$("$LG" freeport)")
	fi
	local common=(-round 1 -id "$what-$1" -name "$what $1" -group "$what" -role bridge -out "$TMP/r.json" -log "$TMP/r.log"
		-warmup 300 -lat-n 100 -levels 64 -n "$calls" -phase-max 60s -streams 0 -large "" -idle-wait 0)
	if [ "$what" = connect ]; then
		"$LG" suite "${common[@]}" -server-pid "$remote_pid" -transport stdio "${env[@]}" -- \
			"$BIN/mcp-bridge" connect --log-level warn "${extra[@]}" "$remote" >/dev/null
	else
		p=$("$LG" freeport)
		"$LG" suite "${common[@]}" -url "http://127.0.0.1:$p/mcp" "${env[@]}" -- \
			"$BIN/mcp-bridge" serve --listen "127.0.0.1:$p" --log-level warn "${extra[@]}" -- "$BIN/echo" >/dev/null
	fi
	python3 - "$TMP/r.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
t = [x for x in r["throughput"] if x["name"] == "c64"][0]
print(round(t["calls_per_sec"]), t["cpu_s_per_10k"])
EOF
}

echo "$what, $calls calls at 64 in flight a phase; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %12s %12s %12s %12s %8s\n' pair "off calls/s" "on calls/s" "off CPU/10k" "on CPU/10k" "on/off"
for i in $(seq "$pairs"); do
	read -r offc offcpu < <(phase off)
	read -r onc oncpu < <(phase on)
	printf '%-5s %12s %12s %12s %12s %7.1f%%\n' "$i" "$offc" "$onc" "$offcpu" "$oncpu" "$(python3 -c "print(100*$onc/$offc)")"
done
