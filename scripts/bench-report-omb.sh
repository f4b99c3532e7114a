#!/usr/bin/env bash
# bench-report-omb.sh runs `sluice perf omb` (the OpenMessaging Benchmark's
# workload shape: one topic, keyed 1 KiB records, 4 producers and 4
# consumers in one group, a warm-up, a max-rate probe, then 25/50/75/100%
# of that rate) against a fresh broker per target and partition count, and
# rewrites BENCHMARKS.md's marked sections (bench:headline, bench:omb,
# bench:partitions, bench:targets) with `benchreport omb`; the raw
# results stay in docs/bench-omb/ (one JSON file per broker and partition
# count, and the run's meta line). `make bench-report` runs it after
# scripts/bench-report.sh.
#
#   scripts/bench-report-omb.sh                       # defaults below
#   PARTS="100" TARGETS="segment kfake" WARMUP=2s PROBE=5s DURATION=5s \
#       OUT=/tmp/b.md scripts/bench-report-omb.sh      # a quick smoke run
#
# Each broker is started by `sluice perf omb --broker-cmd` pinned to CPU 0
# (`taskset -c 0`), the load generator runs on CPU 1, and the broker's CPU
# per GB comes from its /proc/PID/stat. kfake is franz-go's kfake with a
# data dir (bench/cmd/kfakeserve), as in scripts/bench-report.sh. Every
# broker is stopped by `sluice perf omb` at the end of its run; every file
# lives under one mktemp -d on the repository's filesystem, removed at exit.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
GO=${GO:-go}
PARTS=${PARTS:-"100 10000"}
TARGETS=${TARGETS:-"segment pebble kfake"}
WARMUP=${WARMUP:-10s}
PROBE=${PROBE:-30s}
DURATION=${DURATION:-60s}
OUT=${OUT:-$repo/BENCHMARKS.md}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}

log() { printf 'bench-report-omb: %s\n' "$*" >&2; }
work=$(mktemp -d "$repo/.bench-omb.XXXXXX")
trap 'rm -rf "$work"' EXIT

timeout 300 "$GO" build -o "$work/sluice" ./cmd/sluice
timeout 300 "$GO" build -o "$work/kfakeserve" ./bench/cmd/kfakeserve
timeout 300 "$GO" build -o "$work/benchreport" ./bench/cmd/benchreport

for n in $PARTS; do
	for t in $TARGETS; do
		port=$("$work/benchreport" freeport)
		dir="$work/data-$t-$n"
		mkdir -p "$dir"
		case $t in
		kfake)
			cmd="taskset -c 0 $work/kfakeserve --port $port --data-dir $dir"
			label=kfake ;;
		*)
			cmd="taskset -c 0 $work/sluice serve --set storage.backend=$t --set log.dirs=$dir --set listeners=PLAINTEXT://127.0.0.1:$port --set http.listeners= --set schema.registry.listeners="
			label=sluice-$t ;;
		esac
		log "$label, $n partitions"
		if ! timeout "$RUN_TIMEOUT" taskset -c 1 "$work/sluice" perf omb --brokers "127.0.0.1:$port" --broker-cmd "$cmd" \
			--partitions "$n" --warmup "$WARMUP" --probe "$PROBE" --duration "$DURATION" --target "$label" --json \
			>"$work/omb-$label-$n.json"; then
			log "$label, $n partitions: failed or had errors (kept in the report if it wrote a result)"
		fi
		[ -s "$work/omb-$label-$n.json" ] || rm -f "$work/omb-$label-$n.json"
		rm -rf "$dir"
	done
done

meta="Run $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo '+local changes'), \
$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; \
warm-up $WARMUP, probe $PROBE, $DURATION per rate; broker on CPU 0, clients on CPU 1; one run."
# Keep the results beside the page, so it can be re-rendered without a
# re-run: benchreport omb -out BENCHMARKS.md -meta ... docs/bench-omb/*.json
results=${RESULTS:-$repo/docs/bench-omb}
mkdir -p "$results"
rm -f "$results"/omb-*.json
cp "$work"/omb-*.json "$results"/
printf '%s\n' "$meta" >"$results/meta.txt"
"$work/benchreport" omb -out "$OUT" -meta "$meta" "$results"/omb-*.json
log "rewrote the marked sections of $OUT"
