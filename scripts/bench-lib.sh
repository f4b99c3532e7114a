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

# bench_warm BENCHREPORT: gets the machine's memory ready for measuring.
# The VMs this project runs on hand the memory their guest reports free
# back to the host (virtio free page reporting, /sys/module/page_reporting),
# and the host backs a page again only when it is next written: a write into
# the page cache then costs 0.3 to 3.6 s per GB (1 GiB dd runs back to back,
# 2026-12-03) by luck of which free pages it gets, and that, not the code
# under test, made most of a produce benchmark's spread. With QUIET_VM=1
# (the default) and the knob writable, reporting is paused for the run (its
# order set above the largest free block, so no block qualifies; put back
# by bench_vm_restore, which the caller's exit trap must run) and all of
# MemAvailable but 3 GiB is touched once (`benchreport warm`), so later
# writes find host-backed pages, as on a broker whose page cache has filled
# the machine (the same dd runs: 0.30-0.41 s/GB). A script run by one that
# already did this (BENCH_VM_QUIET=1 in its environment) does nothing.
# Otherwise it touches WARM_MB through /dev/shm and frees it, as before.
bench_page_reporting=/sys/module/page_reporting/parameters/page_reporting_order
bench_vm_order=
bench_warm() {
	local br=$1 shm
	[ "${BENCH_VM_QUIET:-}" != 1 ] || return 0
	if [ "${QUIET_VM:-1}" = 1 ] && [ -w "$bench_page_reporting" ] &&
		bench_vm_order=$(cat "$bench_page_reporting") && echo 11 >"$bench_page_reporting" 2>/dev/null; then
		export BENCH_VM_QUIET=1
		echo "bench: free page reporting paused (page_reporting_order $bench_vm_order -> 11); touching memory" >&2
		timeout 300 "$br" warm -leave-mib 3072 || echo "bench: warm-up failed" >&2
		return 0
	fi
	bench_vm_order=
	if [ "${WARM_MB:-0}" -gt 0 ] && [ -d /dev/shm ]; then
		echo "bench: warm-up: touching $WARM_MB MB of memory through /dev/shm" >&2
		shm=$(mktemp /dev/shm/sluice-warm.XXXXXX)
		timeout 300 dd if=/dev/zero of="$shm" bs=1M count="$WARM_MB" status=none ||
			echo "bench: warm-up incomplete (is /dev/shm smaller than $WARM_MB MB?)" >&2
		rm -f "$shm"
	fi
}

# bench_vm_restore puts free page reporting back as bench_warm found it.
bench_vm_restore() {
	if [ -n "$bench_vm_order" ]; then
		echo "$bench_vm_order" >"$bench_page_reporting" 2>/dev/null || true
		bench_vm_order=
	fi
}
