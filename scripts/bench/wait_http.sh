# scripts/bench/wait_http.sh — sourced by run.sh and telemetry-ab.sh.
#
# wait_http URL: until it answers 2xx (a server just started; 10 s at
# most). It returns 1, naming the calling script, when it never does.
wait_http() {
	local _
	for _ in $(seq 200); do
		curl -fs "$1" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "$(basename "$0"): $1 did not come up" >&2
	return 1
}
