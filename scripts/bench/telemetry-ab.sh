#!/usr/bin/env bash
# scripts/bench/telemetry-ab.sh — telemetry off against on (metrics + every
# span exported to a discarding OTLP sink), in short interleaved phases.
#
#   scripts/bench/telemetry-ab.sh serve|connect [ROUNDS] [CALLS] [MODE]
#
# Two long-lived mcp-bridge processes, one with telemetry off (A) and one
# with it on (B), get the same load in turns: loadgen ab runs CALLS tool
# calls (default 20,000) at 64 in flight against A, then B, then B, then
# A, ... for ROUNDS rounds (default 20), each phase over ~1-2 s. Half the
# rounds run with A started first, half with B started first (in A/A runs
# the process started second was ~2% faster). It prints each round's
# calls/s and CPU s per 10,000 calls of each process tree (serve: bridge
# and echo child; connect: the bridge), then the share of A that B gets
# over all rounds: the median of the rounds and the pooled ratio.
#
# Both bridges run at --log-level warn, so that serve's access log (one
# info line per request, on by default) is not part of either side; set
# TELEMETRY_AB_LOG_LEVEL=info to measure them as they run by default.
#
# MODE (default "on") is what B turns on: on (metrics + traces, every
# span sampled: what issue 12 measures), metrics, traces, or
# traces-unsampled (OTEL_TRACES_SAMPLER=always_off: spans begun, the
# context passed on, none exported) — to see which part costs what.
#
# TELEMETRY_AB_INFLIGHT (default 64) sets the calls in flight, e.g. 256.
#
# MODE "binary" compares two builds instead, both with telemetry off: A is
# the tree at git revision $TELEMETRY_AB_BASE (e.g. the last release or
# the session's first commit), B this tree — a regression check for a
# change that is not about telemetry.
#
# Why this design (docs/benchmarks.md): this shared 2-core VM drifts by
# 10-40% within a minute. run.sh's phases (~2 s after a fresh start) and
# telemetry-ab.sh's first form (80,000 calls, a fresh process each) put a
# minute between the phases compared; here they are seconds apart, and
# the processes are warm.
set -euo pipefail
what=${1:?usage: telemetry-ab.sh serve|connect [ROUNDS] [CALLS] [MODE]}
rounds=${2:-20}
calls=${3:-20000}
mode=${4:-on}
loglevel=${TELEMETRY_AB_LOG_LEVEL:-warn}
inflight=${TELEMETRY_AB_INFLIGHT:-64}
case $inflight in '' | *[!0-9]*) echo "telemetry-ab.sh: TELEMETRY_AB_INFLIGHT is a number, not $inflight" >&2; exit 2 ;; esac
case $what in serve | connect) ;; *) echo "telemetry-ab.sh: serve or connect, not $what" >&2; exit 2 ;; esac
case $mode in on | metrics | traces | traces-unsampled | binary) ;; *) echo "telemetry-ab.sh: MODE is on, metrics, traces, traces-unsampled or binary, not $mode" >&2; exit 2 ;; esac
if [ $((rounds % 2)) -ne 0 ] || [ "$rounds" -lt 2 ]; then
	echo "telemetry-ab.sh: ROUNDS must be even (half with each process started first)" >&2
	exit 2
fi

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
BIN_A=$BIN/mcp-bridge BIN_B=$BIN/mcp-bridge
if [ "$mode" = binary ]; then
	if [ -z "${TELEMETRY_AB_BASE:-}" ]; then
		echo "telemetry-ab.sh: MODE binary needs TELEMETRY_AB_BASE=<git revision> (A's tree)" >&2
		exit 2
	fi
	mkdir -p "$TMP/base"
	git archive "$TELEMETRY_AB_BASE" | tar -x -C "$TMP/base"
	(cd "$TMP/base" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/mcp-bridge-base" ./cmd/mcp-bridge) || exit 1
	BIN_A=$BIN/mcp-bridge-base
fi

. scripts/bench/wait_http.sh # wait_http URL
httpecho() { # httpecho NAME: starts one, sets its URL base in $url, pid in $pid
	local p
	p=$("$LG" freeport)
	"$BIN/httpecho" -listen "127.0.0.1:$p" >"$TMP/$1.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	url=http://127.0.0.1:$p
	wait_http "$url/healthz" || exit 1
}
httpecho sink
sink=$url
if [ "$what" = connect ]; then
	httpecho remote
	remote=$url/mcp
fi

# telemetry on|off: sets $env (KEY=VALUE words) and $flags for a bridge.
telemetry() {
	env=() flags=()
	[ "$1" = off ] && return 0
	case $mode in
	binary) ;;
	on) env=("OTEL_EXPORTER_OTLP_ENDPOINT=$sink") flags=(--metrics-listen "127.0.0.1:$("$LG" freeport)") ;;
	metrics) flags=(--metrics-listen "127.0.0.1:$("$LG" freeport)") ;;
	traces) env=("OTEL_EXPORTER_OTLP_ENDPOINT=$sink") ;;
	traces-unsampled) env=("OTEL_EXPORTER_OTLP_ENDPOINT=$sink" OTEL_TRACES_SAMPLER=always_off) ;;
	esac
}

start_serve() { # start_serve off|on: a serve bridge; sets $url and $pid
	local p
	p=$("$LG" freeport)
	telemetry "$1"
	local bin=$BIN_B
	[ "$1" = off ] && bin=$BIN_A
	env "${env[@]}" "$bin" serve --listen "127.0.0.1:$p" --log-level "$loglevel" "${flags[@]}" -- "$BIN/echo" \
		>"$TMP/serve-$1.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	url=http://127.0.0.1:$p/mcp
	wait_http "http://127.0.0.1:$p/readyz" || exit 1
}

half() { # half FIRST N: N rounds, the bridge FIRST (off or on) started first
	local out=$TMP/ab-$1.json
	if [ "$what" = serve ]; then
		local a_url a_pid b_url b_pid
		if [ "$1" = off ]; then
			start_serve off && a_url=$url a_pid=$pid
			start_serve on && b_url=$url b_pid=$pid
		else
			start_serve on && b_url=$url b_pid=$pid
			start_serve off && a_url=$url a_pid=$pid
		fi
		"$LG" ab -rounds "$2" -n "$calls" -c "$inflight" -url-a "$a_url" -pid-a "$a_pid" -url-b "$b_url" -pid-b "$b_pid" -out "$out"
		kill "$a_pid" "$b_pid"
	else
		local benv=() first=()
		telemetry on
		for e in "${env[@]}"; do benv+=(-env-b "$e"); done
		[ "$1" = on ] && first=(-b-first)
		"$LG" ab -transport stdio -rounds "$2" -n "$calls" -c "$inflight" "${first[@]}" \
			-cmd-a "$BIN_A connect --log-level $loglevel $remote" \
			-cmd-b "$BIN_B connect --log-level $loglevel ${flags[*]} $remote" "${benv[@]}" -out "$out"
	fi
}

if [ "$mode" = binary ]; then
	echo "$what: the tree at $TELEMETRY_AB_BASE (A) against this tree (B), both with telemetry off, --log-level $loglevel, $rounds rounds of $calls calls at $inflight in flight; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
else
	echo "$what: telemetry off (A) against $mode (B), --log-level $loglevel, $rounds rounds of $calls calls at $inflight in flight; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
echo "-- $((rounds / 2)) rounds, A started first"
half off $((rounds / 2))
echo "-- $((rounds / 2)) rounds, B started first"
half on $((rounds / 2))
python3 - "$TMP/ab-off.json" "$TMP/ab-on.json" <<'EOF'
import json, statistics, sys
rows = [r for f in sys.argv[1:] for r in json.load(open(f))["rounds"]]
ratio = [100 * r["calls_per_sec"][1] / r["calls_per_sec"][0] for r in rows]
cpu = [100 * r["cpu_s_per_10k"][1] / r["cpu_s_per_10k"][0] for r in rows if r["cpu_s_per_10k"][0] > 0]
pooled = 100 * sum(r["calls_per_sec"][1] for r in rows) / sum(r["calls_per_sec"][0] for r in rows)
print(f"== all {len(rows)} rounds: B/A calls/s median {statistics.median(ratio):.1f}%, pooled {pooled:.1f}% "
      f"(quartiles {statistics.quantiles(ratio, n=4)[0]:.1f}-{statistics.quantiles(ratio, n=4)[2]:.1f}%); "
      f"CPU per call B/A median {statistics.median(cpu):.1f}%")
EOF
