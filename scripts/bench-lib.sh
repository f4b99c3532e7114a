# bench-lib.sh is sourced by the bench-*.sh scripts: it builds the binary
# and sets up what every one-run, side-by-side benchmark needs.
#
#   bench_setup NAME   cd to the repository, `make -s build`, bin=bin/sluice,
#                      work=a mktemp -d .bench-NAME.XXXXXX (in the repository,
#                      or in $BENCH_TMP when set) removed at exit
#                      (with the broker started by bench_serve, stopped by
#                      its pid), and pin_broker/pin_client: taskset to CPU 0
#                      and CPU 1 when taskset and 2 CPUs are there.
#   bench_serve ADDR ARGS...
#                      starts `sluice serve ARGS...` pinned, logging to
#                      $work/broker.log, and waits (10 s at most) until ADDR
#                      answers; a broker that exits prints its log and fails.

bench_setup() {
	repo=$(cd "$(dirname "${BASH_SOURCE[1]}")/.." && pwd)
	cd "$repo"
	make -s build
	bin=$repo/bin/sluice
	work=$(mktemp -d "${BENCH_TMP:-$repo}/.bench-$1.XXXXXX")
	broker_pid=
	trap bench_cleanup EXIT
	pin_broker=() pin_client=()
	if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
		pin_broker=(taskset -c 0) pin_client=(taskset -c 1)
	fi
}

bench_cleanup() {
	if [ -n "$broker_pid" ]; then kill "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}

bench_serve() {
	local addr=$1
	shift
	"${pin_broker[@]}" "$bin" serve "$@" >"$work/broker.log" 2>&1 &
	broker_pid=$!
	for _ in $(seq 50); do
		"$bin" topic list --bootstrap-server "$addr" --timeout 1s >/dev/null 2>&1 && return 0
		kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log"; exit 1; }
		sleep 0.2
	done
	echo "bench: no broker at $addr after 10 s" >&2
	exit 1
}
