#!/usr/bin/env bash
# scripts/bench/run.sh — measure mcp-bridge against its peers and the floors,
# in one run, on this machine, with one load generator and one echo child.
#
#   scripts/bench/run.sh [all|serve|connect|profile|streams] [--quick] [--rounds N] [--skip-npm]
#                        [--levels LIST] [--only REGEX] [--median]
#
#   all       serve and connect (default)
#   serve     stdio server → HTTP: mcp-bridge serve, supergateway 4.0.0
#             (--stateful and stateless), mcp-proxy 6.7.19, and the floors;
#             the HTTP+SSE transport (2024-11-05) of serve and supergateway
#             (--outputTransport sse) beside them: one session, every
#             answer on its one stream
#             (loadgen ↔ echo over a pipe; a bare net/http echo handler)
#   connect   HTTP server → stdio: mcp-bridge connect, mcp-remote 0.15.1,
#             supergateway --streamableHttp, and the floor (loadgen POSTing
#             to the same httpecho server directly)
#   profile   CPU and allocation profiles of both directions (in-process,
#             scripts/bench/profile), `go tool pprof -top` into
#             scripts/bench/results/profile-*.txt
#   streams   mcp-bridge serve with 1,000 and 10,000 concurrent progress
#             streams (5 progress notifications each, 200 ms apart for
#             1,000 as in the serve run, 3 s apart for 10,000 so that all
#             are open at once), peak bridge RSS; with
#             MCP_BRIDGE_BEFORE=PATH also that binary, side by side
#   --quick   small counts (under 3 minutes); the default takes ~10-15
#   --rounds N  repeat the latency/throughput measurements N times and keep
#             the best per measurement (default 2; 1 with --quick): the
#             machine is shared, and one disturbed phase should not decide
#   --skip-npm  do not run npm ci (node_modules already installed)
#   --levels LIST  concurrency levels beside 1 (default 16,64,256), e.g.
#             64,256,1024 for connect's scaling check
#   --only REGEX  run only the configurations whose id matches (ids:
#             serve.bridge, connect.bridge, connect.floor-http, ...; see
#             run_serve and run_connect); npm is not needed unless a peer
#             matches
#   --median  keep the median round per measurement instead of the best
#             (with --rounds 3 on a shared machine)
#   MCP_BRIDGE_BIN=PATH  measure this mcp-bridge binary instead of building
#             one (e.g. the revision before a change); name it with
#             MCP_BRIDGE_REV
#
# Output: scripts/bench/results/<UTC stamp>-<what>-<full|quick>.json (merged
# results) and .md (the tables, also printed to stdout). Logs and per-target JSON go to
# scripts/bench/results/tmp/ (git-ignored). Everything listens on 127.0.0.1
# only (supergateway binds every interface; it has no flag for that). Every
# process started here is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BENCH=$ROOT/scripts/bench

what=all quick=0 npm=1 rounds= levels= only= merge=best
prev=
for a in "$@"; do
	case $prev in
	--rounds) rounds=$a prev= && continue ;;
	--levels) levels=$a prev= && continue ;;
	--only) only=$a prev= && continue ;;
	esac
	case $a in
	--rounds | --levels | --only) prev=$a ;;
	--median) merge=median ;;
	all | serve | connect | profile | streams) what=$a ;;
	--quick) quick=1 ;;
	--skip-npm) npm=0 ;;
	-h | --help)
		sed -n '2,50p' "$0"
		exit 0
		;;
	*)
		echo "run.sh: unknown argument $a (try --help)" >&2
		exit 2
		;;
	esac
done
mode=full
[ $quick = 1 ] && mode=quick
if [ -z "$rounds" ]; then
	rounds=2
	[ $quick = 1 ] && rounds=1
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
TMP=$BENCH/results/tmp/$stamp
BIN=$TMP/bin
mkdir -p "$BIN" "$TMP/mcp-auth"

# ---- cleanup: every background process we start is recorded here (and
# forgotten once it has been waited for) and killed on exit; loadgen stops
# what it starts itself when it gets SIGTERM.
PIDS=()
forget() {
	local keep=() p
	for p in "${PIDS[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
	done
	sleep 0.3
	for p in "${PIDS[@]}"; do
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*" >&2; }
need() { command -v "$1" >/dev/null || { echo "run.sh: $1 is required" >&2; exit 1; }; }
need go
need node
need npm
need curl

# Enough descriptors for 1,000 open streams on each side.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

step "build (into $BIN)"
if [ -n "${MCP_BRIDGE_BIN:-}" ]; then
	cp "$MCP_BRIDGE_BIN" "$BIN/mcp-bridge"
else
	# As scripts/release.sh builds what users download: static (no libc
	# mapped, 1.4 MiB less idle RSS than a cgo build), symbols stripped.
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/mcp-bridge" ./cmd/mcp-bridge
fi
go build -o "$BIN/" ./scripts/bench/loadgen ./scripts/bench/echo ./scripts/bench/httpecho ./scripts/bench/report ./scripts/bench/profile
LG=$BIN/loadgen

NM=$BENCH/node_modules
# selected ID: whether --only lets configuration ID run
selected() { [ -z "$only" ] || [[ $1 =~ $only ]]; }
peers=0
for id in serve.sg-stateful serve.sg-stateless serve.sg-sse serve.mcp-proxy connect.mcp-remote connect.sg-streamable; do
	selected "$id" && peers=1
done
case $what in profile | streams) peers=0 ;; esac
if [ $peers = 1 ]; then
	if [ $npm = 1 ]; then
		step "npm ci (supergateway 4.0.0, mcp-proxy 6.7.19, mcp-remote 0.15.1)"
		(cd "$BENCH" && npm ci --no-audit --no-fund --loglevel=error)
	fi
	for p in supergateway/dist/index.js mcp-proxy/dist/bin/mcp-proxy.mjs mcp-remote/dist/proxy.js; do
		[ -f "$NM/$p" ] || { echo "run.sh: $NM/$p is missing (npm ci in scripts/bench)" >&2; exit 1; }
	done
fi

# ---- measurement settings
if [ $quick = 1 ]; then
	COMMON=(-warmup 100 -lat-n 300 -n 3000 -phase-max 2s -streams 1000 -stream-steps 2 -stream-delay 250ms -large-reps 1 -idle-wait 300ms)
	SLOW=(-warmup 5 -lat-n 20 -n 60 -phase-max 3s -streams 50 -stream-steps 2 -stream-delay 250ms -large 1MiB -large-reps 1 -idle-wait 300ms)
else
	COMMON=(-warmup 300 -lat-n 2000 -n 20000 -phase-max 6s -streams 1000 -stream-steps 5 -stream-delay 200ms -large-reps 5 -idle-wait 500ms)
	SLOW=(-warmup 10 -lat-n 100 -n 300 -phase-max 6s -streams 200 -stream-steps 5 -stream-delay 200ms -large-reps 1 -idle-wait 500ms)
fi
ECHO=$BIN/echo
RESULTS=()
ROUND=1
# Later rounds repeat only start-up, latency and throughput.
LATER=(-streams 0 -large "" -idle-wait 0)

if [ -n "$levels" ]; then
	COMMON+=(-levels "$levels")
	SLOW+=(-levels "$levels")
fi

# suite ID NAME GROUP ROLE [loadgen flags...] [-- command...]
suite() {
	local id=$1 name=$2 group=$3 role=$4
	shift 4
	selected "$id" || return 0
	local out=$TMP/$id.r$ROUND.json lp
	# In the background so that a signal reaches the trap at once.
	"$LG" suite -round "$ROUND" -id "$id" -name "$name" -group "$group" -role "$role" -out "$out" -log "$TMP/$id.log" "$@" &
	lp=$!
	PIDS+=("$lp")
	if wait "$lp"; then
		RESULTS+=("$out")
	else
		echo "run.sh: $id did not produce results (see $TMP/$id.log)" >&2
	fi
	forget "$lp"
}
port() { "$LG" freeport; }

run_serve() {
	step "serve: stdio MCP server → Streamable HTTP (child: scripts/bench/echo)"
	local p
	suite serve.floor-stdio "echo over a pipe (floor)" serve floor "${C[@]}" -transport stdio -- "$ECHO"
	p=$(port)
	suite serve.floor-http "net/http echo handler (floor)" serve floor "${C[@]}" -url "http://127.0.0.1:$p/mcp" -- "$BIN/httpecho" -listen "127.0.0.1:$p"
	p=$(port)
	suite serve.bridge "mcp-bridge serve" serve bridge "${C[@]}" -url "http://127.0.0.1:$p/mcp" -- "$BIN/mcp-bridge" serve --listen "127.0.0.1:$p" --log-level warn -- "$ECHO"
	p=$(port)
	suite serve.bridge-metrics "mcp-bridge serve (metrics on)" serve bridge "${C[@]}" -url "http://127.0.0.1:$p/mcp" -- "$BIN/mcp-bridge" serve --listen "127.0.0.1:$p" --log-level warn --metrics-listen "127.0.0.1:$(port)" -- "$ECHO"
	if selected serve.bridge-telemetry; then
		# Metrics scraped by nobody and every span exported (the default
		# sampler keeps all) to an OTLP sink: the worst case of both on.
		local up he
		start_httpecho serve-otlp
		p=$(port)
		suite serve.bridge-telemetry "mcp-bridge serve (metrics + traces on)" serve bridge "${C[@]}" -env "OTEL_EXPORTER_OTLP_ENDPOINT=${up%/mcp}" -url "http://127.0.0.1:$p/mcp" -- "$BIN/mcp-bridge" serve --listen "127.0.0.1:$p" --log-level warn --metrics-listen "127.0.0.1:$(port)" -- "$ECHO"
		stop_bg "$he"
	fi
	p=$(port)
	suite serve.bridge-legacy "mcp-bridge serve (2025 session)" serve bridge "${C[@]}" -era legacy -url "http://127.0.0.1:$p/mcp" -- "$BIN/mcp-bridge" serve --listen "127.0.0.1:$p" --log-level warn -- "$ECHO"
	p=$(port)
	suite serve.bridge-sse "mcp-bridge serve (HTTP+SSE, 2024-11-05)" serve bridge "${C[@]}" -transport sse -era legacy -url "http://127.0.0.1:$p/sse" -- "$BIN/mcp-bridge" serve --listen "127.0.0.1:$p" --log-level warn -- "$ECHO"
	p=$(port)
	suite serve.sg-sse "supergateway --outputTransport sse" serve peer "${C[@]}" -transport sse -era legacy -url "http://127.0.0.1:$p/sse" -- node "$NM/supergateway/dist/index.js" --stdio "$ECHO" --outputTransport sse --port "$p" --logLevel none
	p=$(port)
	suite serve.sg-stateful "supergateway --stateful" serve peer "${C[@]}" -era legacy -url "http://127.0.0.1:$p/mcp" -- node "$NM/supergateway/dist/index.js" --stdio "$ECHO" --outputTransport streamableHttp --stateful --port "$p" --logLevel none
	p=$(port)
	suite serve.sg-stateless "supergateway (stateless, child per request)" serve peer "${S[@]}" -era legacy -url "http://127.0.0.1:$p/mcp" -- node "$NM/supergateway/dist/index.js" --stdio "$ECHO" --outputTransport streamableHttp --port "$p" --logLevel none
	p=$(port)
	suite serve.mcp-proxy "mcp-proxy" serve peer "${C[@]}" -era legacy -url "http://127.0.0.1:$p/mcp" -- node "$NM/mcp-proxy/dist/bin/mcp-proxy.mjs" --port "$p" --host 127.0.0.1 --server stream -- "$ECHO"
	if [ $quick = 0 ]; then
		p=$(port)
		suite serve.mcp-proxy-modern "mcp-proxy (2026-07-28 clients)" serve peer "${C[@]}" -url "http://127.0.0.1:$p/mcp" -- node "$NM/mcp-proxy/dist/bin/mcp-proxy.mjs" --port "$p" --host 127.0.0.1 --server stream -- "$ECHO"
	fi
}

run_connect() {
	step "connect: Streamable HTTP server (scripts/bench/httpecho) → stdio"
	local up he
	start_httpecho connect
	suite connect.floor-http "POST to httpecho directly (floor)" connect floor "${C[@]}" -url "$up" -server-pid "$he"
	suite connect.bridge "mcp-bridge connect" connect bridge "${C[@]}" -server-pid "$he" -transport stdio -- "$BIN/mcp-bridge" connect --log-level warn "$up"
	if selected connect.bridge-telemetry; then
		local mcp=$up echo=$he
		start_httpecho connect-otlp # a second httpecho as the OTLP sink
		suite connect.bridge-telemetry "mcp-bridge connect (metrics + traces on)" connect bridge "${C[@]}" -server-pid "$echo" -transport stdio -env "OTEL_EXPORTER_OTLP_ENDPOINT=${up%/mcp}" -- "$BIN/mcp-bridge" connect --log-level warn --metrics-listen "127.0.0.1:$(port)" "$mcp"
		stop_bg "$he"
		up=$mcp he=$echo
	fi
	suite connect.bridge-legacy "mcp-bridge connect (2025 session)" connect bridge "${C[@]}" -server-pid "$he" -transport stdio -era legacy -- "$BIN/mcp-bridge" connect --log-level warn "$up"
	suite connect.mcp-remote "mcp-remote" connect peer "${C[@]}" -server-pid "$he" -transport stdio -era legacy -env "MCP_REMOTE_CONFIG_DIR=$TMP/mcp-auth" -- node "$NM/mcp-remote/dist/proxy.js" "$up" --silent
	suite connect.sg-streamable "supergateway --streamableHttp" connect peer "${C[@]}" -server-pid "$he" -transport stdio -era legacy -- node "$NM/supergateway/dist/index.js" --streamableHttp "$up" --logLevel none
	stop_bg "$he"
}

# start_httpecho TAG: an httpecho upstream on a free port, logging to
# $TMP/TAG.httpecho.log; sets the caller's up (its MCP URL) and he (its pid)
start_httpecho() {
	local p
	p=$(port)
	up="http://127.0.0.1:$p/mcp"
	"$BIN/httpecho" -listen "127.0.0.1:$p" >"$TMP/$1.httpecho.log" 2>&1 &
	he=$!
	PIDS+=("$he")
	wait_http "http://127.0.0.1:$p/healthz"
}

# stop_bg PID: SIGTERM a background process started here, reap it, forget it
stop_bg() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	forget "$1"
}

# wait_http URL (scripts/bench/wait_http.sh)
. "$BENCH/wait_http.sh"

# profile_serve TAG LOADGEN-FLAGS...: one in-process serve under one load
profile_serve() {
	local tag=$1 p sp
	shift
	p=$(port)
	"$BIN/profile" serve -listen "127.0.0.1:$p" -cpuprofile "$TMP/$tag.cpu.prof" -memprofile "$TMP/$tag.mem.prof" -- "$ECHO" 2>"$TMP/$tag.log" &
	sp=$!
	PIDS+=("$sp")
	wait_http "http://127.0.0.1:$p/readyz"
	"$LG" run -url "http://127.0.0.1:$p/mcp" -out "$TMP/$tag.load.json" "$@"
	stop_bg "$sp"
}

# profile_connect TAG UPSTREAM LOADGEN-FLAGS...: one in-process connect under one load
profile_connect() {
	local tag=$1 up=$2
	shift 2
	"$LG" run -transport stdio -out "$TMP/$tag.load.json" -log "$TMP/$tag.log" "$@" -- \
		"$BIN/profile" connect -cpuprofile "$TMP/$tag.cpu.prof" -memprofile "$TMP/$tag.mem.prof" "$up"
}

# tops TAG TITLE: go tool pprof -top views of one profile pair
tops() {
	local tag=$1 title=$2 pp=(go tool pprof -nodecount=15)
	echo "# $title"
	echo "# load: $(tr -d '\n ' <"$TMP/$tag.load.json" | head -c 400)"
	echo
	echo "## CPU, top 15 by cumulative time"
	"${pp[@]}" -top -cum "$BIN/profile" "$TMP/$tag.cpu.prof" 2>/dev/null
	echo
	echo "## CPU, top 15 by flat time"
	"${pp[@]}" -top "$BIN/profile" "$TMP/$tag.cpu.prof" 2>/dev/null
	echo
	echo "## CPU, mcp-bridge's own functions by cumulative time"
	"${pp[@]}" -top -cum -show='mcp-bridge/mcp-bridge/' "$BIN/profile" "$TMP/$tag.cpu.prof" 2>/dev/null
	echo
	echo "## allocations, top 15 by bytes (flat)"
	"${pp[@]}" -sample_index=alloc_space -top "$BIN/profile" "$TMP/$tag.mem.prof" 2>/dev/null
	echo
	echo "## allocations, top 15 by objects (flat)"
	"${pp[@]}" -sample_index=alloc_objects -top "$BIN/profile" "$TMP/$tag.mem.prof" 2>/dev/null
	echo
}

run_profile() {
	step "profile: mcp-bridge serve and connect in-process (scripts/bench/profile) under loadgen"
	local out=$BENCH/results n=40000 big=20 he up
	if [ $quick = 1 ]; then
		n=8000 big=5
	fi
	profile_serve serve-small -c 64 -n "$n"
	profile_serve serve-large -c 1 -n "$big" -size 16777216 -warmup 2

	start_httpecho profile
	profile_connect connect-small "$up" -c 64 -n "$n"
	profile_connect connect-large "$up" -c 1 -n "$big" -size 16777216 -warmup 2
	stop_bg "$he"

	local dir date
	date=$(date -u +%FT%TZ)
	for dir in serve connect; do
		{
			tops "$dir-small" "mcp-bridge $dir: $n tools/call of echo (128 B results), 64 in flight, 2026-07-28 ($date)"
			tops "$dir-large" "mcp-bridge $dir: $big tools/call of echo with 16 MiB results, 1 in flight, 2026-07-28 ($date)"
		} >"$out/profile-$dir.txt"
		echo "wrote scripts/bench/results/profile-$dir.txt (profiles: ${TMP#"$ROOT"/}/$dir-*.prof)" >&2
	done
}

# run_streams: concurrent progress streams through one mcp-bridge serve (and
# the MCP_BRIDGE_BEFORE build beside it), peak RSS of the bridge process.
# --max-inflight is raised: the default (1,024) would refuse most of 10,000.
run_streams() {
	step "streams: 1,000 and 10,000 concurrent progress streams through mcp-bridge serve"
	local n delay p bin tag
	local -A bins=([after]="$BIN/mcp-bridge")
	if [ -n "${MCP_BRIDGE_BEFORE:-}" ]; then
		cp "$MCP_BRIDGE_BEFORE" "$BIN/mcp-bridge-before"
		bins[before]="$BIN/mcp-bridge-before"
	fi
	for n in 1000 10000; do
		delay=200ms
		[ $n = 10000 ] && delay=3s
		for tag in before after; do
			bin=${bins[$tag]:-}
			[ -n "$bin" ] || continue
			p=$(port)
			suite "serve.bridge-$tag-$n" "mcp-bridge serve ($tag), $n streams" serve bridge \
				-warmup 300 -lat-n 300 -phase-max 6s -levels "" -large "" -idle-wait 500ms \
				-streams "$n" -stream-steps 5 -stream-delay "$delay" \
				-url "http://127.0.0.1:$p/mcp" -- "$bin" serve --listen "127.0.0.1:$p" --log-level warn --max-inflight 20000 -- "$ECHO"
		done
	done
}

t0=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
case $what in
profile)
	run_profile
	exit 0
	;;
streams)
	run_streams
	;;
*)
	for ROUND in $(seq "$rounds"); do
		C=("${COMMON[@]}") S=("${SLOW[@]}")
		if [ "$ROUND" -gt 1 ]; then
			C+=("${LATER[@]}") S+=("${LATER[@]}")
		fi
		[ "$rounds" -gt 1 ] && step "round $ROUND of $rounds"
		case $what in serve | all) run_serve ;; esac
		case $what in connect | all) run_connect ;; esac
	done
	;;
esac

step "loopback copy floor"
"$LG" copyfloor -out "$TMP/copy.json"

step "report ($((SECONDS - t0)) s of measurements)"
name=$stamp-$what-$mode
cmd="scripts/bench/run.sh $*"
# The product revision measured (MCP_BRIDGE_REV overrides, e.g. for a copy
# of the tree without .git).
rev=${MCP_BRIDGE_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${MCP_BRIDGE_REV:-}" ] && [ -n "$(git status --porcelain -- bridge cmd httpclient lineio stdiohost 2>/dev/null)" ]; then
	rev="$rev+uncommitted changes"
fi
"$BIN/report" -mode "$mode" -merge "$merge" -command "${cmd% }" -rev "$rev" -copy "$TMP/copy.json" \
	-load "before: $load_start, after: $(cut -d' ' -f1-3 /proc/loadavg)" \
	-out "$BENCH/results/$name.json" -md "$BENCH/results/$name.md" "${RESULTS[@]}"
echo >&2
echo "results: scripts/bench/results/$name.json (and .md); logs: ${TMP#"$ROOT"/}" >&2
