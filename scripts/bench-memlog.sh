#!/usr/bin/env bash
# bench-memlog.sh measures the broker CPU per GB of the memory backend
# (storage.backend=memory) against franz-go's kfake (memory only, and with
# --data-dir) and the segment backend, interleaved in one run (issue 33
# point 4). Every broker is started once, pinned to CPU 0; `sluice perf` runs
# pinned to CPU 1; each round runs every workload on every broker in turn, so
# a burst of outside load hits all of them alike. Workloads: one producer
# to 4 partitions with 1 MB batches and linger 10 ms, acks=all (issue 16's
# shape), and 1 KiB records to one partition from 1 or 4 producers with
# acks 1 or all, as scripts/bench-report.sh runs them, plus a consume from
# the start of the first of those.
#
#   scripts/bench-memlog.sh                        # about 6 minutes here
#   BASE=/path/to/old/sluice scripts/bench-memlog.sh   # adds broker memory-base
#   RUNS=1 RECORDS=300000 scripts/bench-memlog.sh  # a quick smoke run
#   WORKLOADS='1p-100B:--record-size 100 --acks all' RECORDS=3000000 scripts/bench-memlog.sh
#
# Broker CPU is utime+stime from /proc/PID/stat before and after each run
# (benchreport measure); CPU per GB divides it by the bytes produced. It
# prints one line per run and a table of medians (min-max) per workload.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
GO=${GO:-go}
RUNS=${RUNS:-3}
RECORDS=${RECORDS:-1200000}
PERF_TIMEOUT=${PERF_TIMEOUT:-60}
BROKERS=${BROKERS:-"memory kfake-mem kfake-disk segment"}
BASE=${BASE:-}

work=$(mktemp -d "$repo/.bench-memlog.XXXXXX")
declare -A pid=() port=()
cleanup() {
	local p
	for p in "${pid[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pid[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

timeout 300 "$GO" build -o "$work/sluice" ./cmd/sluice
timeout 300 "$GO" build -o "$work/kfakeserve" ./bench/cmd/kfakeserve
timeout 300 "$GO" build -o "$work/benchreport" ./bench/cmd/benchreport
br=$work/benchreport
clk=$(getconf CLK_TCK)
if [ -n "$BASE" ]; then
	cp "$BASE" "$work/sluice-base"
	BROKERS="memory-base $BROKERS"
fi

start() {
	local b=$1 p dir bin=$work/sluice backend
	p=$("$br" freeport)
	dir=$work/data-$b
	mkdir -p "$dir"
	case $b in
	kfake-mem) taskset -c 0 "$work/kfakeserve" --port "$p" >"$work/$b.log" 2>&1 & ;;
	kfake-disk) taskset -c 0 "$work/kfakeserve" --port "$p" --data-dir "$dir" >"$work/$b.log" 2>&1 & ;;
	*)
		backend=$b
		if [ "$b" = memory-base ]; then bin=$work/sluice-base backend=memory; fi
		taskset -c 0 "$bin" serve --set "listeners=PLAINTEXT://127.0.0.1:$p" \
			--set "log.dirs=$dir" --set "storage.backend=$backend" --set "http.listeners=" >"$work/$b.log" 2>&1 &
		;;
	esac
	pid[$b]=$!
	port[$b]=$p
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "bench-memlog: $b did not start" >&2
	cat "$work/$b.log" >&2
	exit 1
}
for b in $BROKERS; do start "$b"; done

results=$work/results.jsonl
: >"$results"
# name: perf arguments; WORKLOADS (one "name:args" a line) replaces them.
workloads=(
	"4p-all:--partitions 4 --record-size 1024 --linger 10ms --batch-max-bytes 1000000 --acks all"
	"1p-1prod-1:--record-size 1024 --producers 1 --acks 1"
	"1p-1prod-all:--record-size 1024 --producers 1 --acks all"
	"1p-4prod-1:--record-size 1024 --producers 4 --acks 1"
	"1p-4prod-all:--record-size 1024 --producers 4 --acks all"
)
if [ -n "${WORKLOADS:-}" ]; then
	mapfile -t workloads <<<"$WORKLOADS"
fi
# run_perf BROKER WORKLOAD RUN PERF-ARGS...: one measured `sluice perf` run.
run_perf() {
	local b=$1 name=$2 run=$3
	shift 3
	timeout $((PERF_TIMEOUT + 10)) "$br" measure -pid "${pid[$b]}" -out "$results" -clk-tck "$clk" \
		-tag "broker=$b" -tag "workload=$name" -tag "run=$run" -- \
		taskset -c 1 timeout "$PERF_TIMEOUT" "$work/sluice" perf "$@" \
		--brokers "127.0.0.1:${port[$b]}" --json --quiet \
		--timeout "$((PERF_TIMEOUT - 5))s" || echo "bench-memlog: run failed: $b $name" >&2
	tail -1 "$results" | jq -r '"\(.tags.workload) \(.tags.broker) run \(.tags.run): \(.result.mb_per_sec // 0 | floor) MB/s, broker \(.broker_cpu_s * 100 | round / 100) s CPU, \(if .result.bytes then (.broker_cpu_s / (.result.bytes / 1e9) * 1000 | round / 1000) else "-" end) s/GB"' >&2
}
for run in $(seq "$RUNS"); do
	for w in "${workloads[@]}"; do
		name=${w%%:*}
		# shellcheck disable=SC2206
		args=(${w#*:})
		for b in $BROKERS; do
			topic=t-$name-$run
			run_perf "$b" "$name" "$run" produce --topic "$topic" --records "$RECORDS" "${args[@]}"
			# Consume from the start what the first 1-partition run wrote.
			if [ "$name" = 1p-1prod-1 ]; then
				run_perf "$b" consume-1p "$run" consume --topic "$topic"
			fi
			timeout 30 "$work/sluice" topic delete "$topic" --bootstrap-server "127.0.0.1:${port[$b]}" >/dev/null 2>&1 ||
				echo "bench-memlog: could not delete $topic on $b" >&2
		done
	done
done

# Table: medians (min-max) of MB/s and s/GB per workload and broker, and
# each broker's s/GB over kfake-mem's medians.
jq -s -r '
	def med: sort | .[(length - 1) / 2 | floor];
	def r(n): . * n | round / n;
	map(select(.result.bytes > 0) | {w: .tags.workload, b: .tags.broker, mbps: .result.mb_per_sec,
		spg: (.broker_cpu_s / (.result.bytes / 1e9))})
	| group_by(.w) | .[] | . as $g
	| ($g | map(select(.b == "kfake-mem")) | map(.spg) | if length > 0 then med else null end) as $k
	| ($g | group_by(.b) | .[] |
		"| \(.[0].w) | \(.[0].b) | \(map(.mbps) | med | round) (\(map(.mbps) | min | round)-\(map(.mbps) | max | round)) | \(map(.spg) | med | r(100)) (\(map(.spg) | min | r(100))-\(map(.spg) | max | r(100))) | \(if $k then (map(.spg) | med) / $k | r(100) | tostring + "x" else "-" end) |")
' "$results"
