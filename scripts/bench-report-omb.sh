#!/usr/bin/env bash
# bench-report-omb.sh runs `sluice perf omb` (the OpenMessaging Benchmark's
# workload shape: one topic, keyed 1 KiB records, 4 producers and 4
# consumers in one group) against a fresh broker per target and partition
# count in two passes: first a warm-up and a max-rate probe of each broker,
# then each broker (fresh again) at 25/50/75/100% of the highest of those
# probes, so that every broker runs at the same fixed rates, then SEARCH
# (2) bisection steps of SEARCH_DURATION (30s) each between the highest of
# those rates the broker kept and the lowest it did not (`sluice perf omb
# --search`), so that its maximum sustained rate is measured to a quarter
# of the grid's step rather than read off it; and rewrites BENCHMARKS.md's
# marked sections (bench:headline, bench:omb, bench:partitions,
# bench:targets) with `benchreport omb`; the raw
# results stay in docs/bench-omb/ (one JSON file per broker and partition
# count, and the run's meta line). `make bench-report` runs it after
# scripts/bench-report.sh.
#
#   scripts/bench-report-omb.sh                       # defaults below
#   PARTS="100" TARGETS="segment kfake" WARMUP=2s PROBE=5s DURATION=5s SEARCH_DURATION=5s \
#       OUT=/tmp/b.md scripts/bench-report-omb.sh      # a quick smoke run
#
# Each broker is started by `sluice perf omb --broker-cmd` pinned to CPU 0
# (`taskset -c 0`), the load generator runs on CPU 1, and the broker's CPU
# per GB comes from its /proc/PID/stat. kfake is franz-go's kfake with a
# data dir (bench/cmd/kfakeserve), as in scripts/bench-report.sh. Every
# broker is stopped by `sluice perf omb` at the end of its run; every file
# lives under one mktemp -d on the repository's filesystem, removed at exit.
# Before the first broker starts, free page reporting is paused and the
# machine's memory touched once (scripts/bench-lib.sh: bench_warm, QUIET_VM=1
# by default), as scripts/bench-report.sh does: on this VM a write into pages
# the host has not backed costs several times one into pages it has, and an
# uncompressed OMB run writes hundreds of MB/s into the page cache.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
GO=${GO:-go}
PARTS=${PARTS:-"100 1000 10000"}
TARGETS=${TARGETS:-"segment pebble kfake"}
WARMUP=${WARMUP:-10s}
PROBE=${PROBE:-30s}
DURATION=${DURATION:-60s}
SEARCH=${SEARCH:-2}
SEARCH_DURATION=${SEARCH_DURATION:-30s}
OUT=${OUT:-$repo/BENCHMARKS.md}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
QUIET_VM=${QUIET_VM:-1}
# Retention, so that a run fits the disk and kfake's memory: uncompressed,
# a 100-partition run at the fixed rates writes about 50 GB in 4 minutes.
# Each topic keeps at most RETAIN_BYTES a partition in SEGMENT_BYTES
# segments, and both brokers look for what to delete every second
# (log.retention.check.interval.ms for sluice, kfake's retention pass
# log.cleaner.backoff.ms). Real OMB runs keep their brokers' retention too.
RETAIN_BYTES=${RETAIN_BYTES:-67108864}
SEGMENT_BYTES=${SEGMENT_BYTES:-33554432}

log() { printf 'bench-report-omb: %s\n' "$*" >&2; }
work=$(mktemp -d "$repo/.bench-omb.XXXXXX")
# shellcheck source=bench-lib.sh
. "$repo/scripts/bench-lib.sh"
trap 'bench_vm_restore; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

timeout 300 "$GO" build -o "$work/sluice" ./cmd/sluice
timeout 300 "$GO" build -o "$work/kfakeserve" ./bench/cmd/kfakeserve
timeout 300 "$GO" build -o "$work/benchreport" ./bench/cmd/benchreport
bench_warm "$work/benchreport"

# run_omb LABEL TARGET N OUT ARGS...: a fresh broker of TARGET (segment,
# pebble, kfake) with its own data dir, `sluice perf omb` against it with
# ARGS, the result in OUT (removed if the run wrote nothing).
run_omb() {
	local label=$1 t=$2 n=$3 out=$4
	shift 4
	local port dir cmd
	port=$("$work/benchreport" freeport)
	dir=$(mktemp -d "$work/data-$t-$n.XXXXXX")
	case $t in
	kfake) cmd="taskset -c 0 $work/kfakeserve --port $port --data-dir $dir --config log.cleaner.backoff.ms=1000" ;;
	*) cmd="taskset -c 0 $work/sluice serve --set storage.backend=$t --set log.dirs=$dir --set listeners=PLAINTEXT://127.0.0.1:$port --set http.listeners= --set schema.registry.listeners= --set log.retention.check.interval.ms=1000" ;;
	esac
	if ! timeout "$RUN_TIMEOUT" taskset -c 1 "$work/sluice" perf omb --brokers "127.0.0.1:$port" --broker-cmd "$cmd" \
		--partitions "$n" --warmup "$WARMUP" --target "$label" --json \
		--topic-config "retention.bytes=$RETAIN_BYTES" --topic-config "segment.bytes=$SEGMENT_BYTES" "$@" >"$out"; then
		log "$label, $n partitions: failed or had errors (kept in the report if it wrote a result)"
	fi
	[ -s "$out" ] || rm -f "$out"
	discard_data "$dir" "$n"
}

# discard_data DIR N: frees the disk space of a run over N partitions.
# Above 1,000 partitions the files are emptied, not deleted, and the tree
# goes at exit: this machine's root file system is ext4 without a journal,
# where the inode allocator passes over every inode freed in the last 60 s
# (300 s more while its inode table block is dirty, which the next files
# created beside it make it: ialloc.c recently_deleted), so each file the
# next broker creates scanned past the previous run's 30,000 deleted ones.
# `perf record` of a 10,000-partition probe started after such a delete
# had 14-19% of the broker's CPU in recently_deleted and the block
# lookups under it, even after a sync and a 65 s pause; alternating
# probes of one build gave 46,765 and 45,947 records/s after a 40 s pause
# against 32,778 and 28,796 without.
discard_data() {
	if [ "$2" -ge 1000 ]; then
		find "$1" -type f -exec truncate -s 0 {} +
	else
		rm -rf "$1"
	fi
}

label_of() { case $1 in kfake) echo kfake ;; *) echo "sluice-$1" ;; esac; }

for n in $PARTS; do
	# Pass 1: each broker's maximum (the probe at the unlimited rate).
	for t in $TARGETS; do
		label=$(label_of "$t")
		log "$label, $n partitions: probe"
		run_omb "$label" "$t" "$n" "$work/probe-$label-$n.json" --probe "$PROBE" --rates none
	done
	# Pass 2: every broker at the same fixed rates, fractions of the
	# highest probe, so that each rate compares brokers at one offered
	# load (OMB's fixed-rate workloads), not each at its own maximum.
	probes=("$work"/probe-*-"$n".json)
	if ! max=$("$work/benchreport" ombmax "${probes[@]}"); then
		log "$n partitions: no probe acked anything; no fixed rates"
		continue
	fi
	log "$n partitions: the shared maximum is $max records/s"
	for t in $TARGETS; do
		label=$(label_of "$t")
		log "$label, $n partitions: fixed rates of $max records/s"
		run_omb "$label" "$t" "$n" "$work/rates-$label-$n.json" --max-rate "$max" --duration "$DURATION" \
			--search "$SEARCH" --search-duration "$SEARCH_DURATION"
		if [ -s "$work/probe-$label-$n.json" ] && [ -s "$work/rates-$label-$n.json" ]; then
			"$work/benchreport" ombmerge -out "$work/omb-$label-$n.json" "$work/probe-$label-$n.json" "$work/rates-$label-$n.json"
		fi
	done
done

meta="Run $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo '+local changes'), \
$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; \
uncompressed batches, topic retention.bytes=$RETAIN_BYTES segment.bytes=$SEGMENT_BYTES; warm-up $WARMUP, probe $PROBE, $DURATION per rate at fractions of the highest probe of the partition count (the same rates for every broker), then $SEARCH search steps of $SEARCH_DURATION (each broker's own); broker on CPU 0, clients on CPU 1; one run."
# Keep the results beside the page, so it can be re-rendered without a
# re-run: benchreport omb -out BENCHMARKS.md -meta ... docs/bench-omb/*.json
results=${RESULTS:-$repo/docs/bench-omb}
mkdir -p "$results"
rm -f "$results"/omb-*.json
cp "$work"/omb-*.json "$results"/
printf '%s\n' "$meta" >"$results/meta.txt"
"$work/benchreport" omb -out "$OUT" -meta "$meta" "$results"/omb-*.json
log "rewrote the marked sections of $OUT"
