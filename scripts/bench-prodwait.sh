#!/usr/bin/env bash
# bench-prodwait.sh: issue 33 point 3, produce with franz-go's defaults (one
# producer, 4 partitions, linger 10 ms, 1 MB batches, acks=all, 5 requests in
# flight) against Sluice (segment) and kfake, interleaved in one run, plus an
# e2e run at 10,000 records/s. Each broker is started fresh and pinned to
# CPU 0, the load generator to CPU 1, as scripts/bench-report.sh does.
#
#   scripts/bench-prodwait.sh [NAME=SLUICE_BINARY ...]
#
# Every NAME=BINARY[,ARG...] is a Sluice build to compare (default: one built
# from this tree, named "sluice"), with extra `sluice serve` arguments split on
# commas and env:K=V ones set in its environment, e.g.
# normal=./sluice,--set,process.scheduling.policy=normal; kfake is always
# measured too, and the first build's `sluice perf` is the load generator.
# Environment: RUNS (rounds, default 3), RECORDS (per produce run, default
# 1000000; 0: no produce runs), E2E_SECS (default 3; 0: no e2e runs),
# SERVE_ARGS (`sluice serve` arguments for every Sluice build), PRODUCE_EXTRA
# (`sluice perf produce` flags that override the shape's, e.g. "--producers 4
# --acks 1").
#
# Prints one line per run, then per workload and broker the medians (min-max)
# of MB/s, broker CPU s/GB and % of the wall time, p50 and p99 latency
# (produce, or end to end), and the broker's run-queue wait (rqwait below).
# Results stay in the printed results.jsonl. The machine is shared: quote the
# load average the script prints with the figures.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
RECORDS=${RECORDS:-1000000}
E2E_SECS=${E2E_SECS:-3}
SERVE_ARGS=${SERVE_ARGS:-}
PRODUCE_EXTRA=${PRODUCE_EXTRA:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/prodwait.XXXXXX")
log() { echo "bench-prodwait: $*" >&2; }

declare -A bin args
names=()
if [ $# -eq 0 ]; then
	timeout 300 go -C "$repo" build -o "$work/sluice" ./cmd/sluice
	bin[sluice]=$work/sluice
	args[sluice]=
	names=(sluice)
fi
for a in "$@"; do
	spec=${a#*=}
	bin[${a%%=*}]=${spec%%,*}
	args[${a%%=*}]=
	[ "$spec" = "${spec#*,}" ] || args[${a%%=*}]=${spec#*,}
	names+=("${a%%=*}")
done
timeout 300 go -C "$repo" build -o "$work/kfakeserve" ./bench/cmd/kfakeserve
timeout 300 go -C "$repo" build -o "$work/benchreport" ./bench/cmd/benchreport
names+=(kfake)
br=$work/benchreport
clk=$(getconf CLK_TCK)
results=$work/results.jsonl
: >"$results"

pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work/data" "$work/sluice" "$work/kfakeserve" "$work/benchreport"
}
trap cleanup EXIT

# start NAME: a fresh broker with an empty data dir; sets pid and port.
start() {
	local b=$1
	rm -rf "$work/data"
	mkdir -p "$work/data"
	port=$("$br" freeport)
	if [ "$b" = kfake ]; then
		taskset -c 0 "$work/kfakeserve" --port "$port" --data-dir "$work/data" >"$work/$b.log" 2>&1 &
	else
		local a envs=() sargs=()
		IFS=, read -ra a <<<"${args[$b]}"
		for x in "${a[@]}"; do
			case $x in
			env:*) envs+=("${x#env:}") ;;
			*) sargs+=("$x") ;;
			esac
		done
		# shellcheck disable=SC2086
		env "${envs[@]}" taskset -c 0 "${bin[$b]}" serve --set "listeners=PLAINTEXT://127.0.0.1:$port" \
			--set "log.dirs=$work/data" --set storage.backend=segment --set "http.listeners=" \
			$SERVE_ARGS "${sargs[@]}" >"$work/$b.log" 2>&1 &
	fi
	pid=$!
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	log "$b did not start"
	cat "$work/$b.log" >&2
	exit 1
}

stop() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
}

# rqwait: ns the broker's threads waited on a run queue, runnable but not
# running (/proc/PID/task/*/schedstat, field 2): the time the broker had
# work and no CPU, which the CPU time does not show.
rqwait() { cat /proc/"$pid"/task/*/schedstat 2>/dev/null | awk '{s += $2} END {printf "%.0f\n", s}'; }

run() {
	local b=$1 w=$2 rq0
	shift 2
	rq0=$(rqwait)
	timeout 90 "$br" measure -pid "$pid" -out "$results" -clk-tck "$clk" -tag "broker=$b" -tag "workload=$w" -- \
		taskset -c 1 timeout 80 "${bin[${names[0]}]}" perf "$@" --brokers "127.0.0.1:$port" --json --quiet --timeout 75s ||
		log "run failed: $b $w"
	echo $(($(rqwait) - rq0)) >>"$work/rqwait"
}

log "load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, results in $results"
for r in $(seq "$RUNS"); do
	for b in "${names[@]}"; do
		start "$b"
		n=0
		if [ "$RECORDS" != 0 ]; then
			n=$((n + 1))
			# shellcheck disable=SC2086 # PRODUCE_EXTRA is split into flags
			run "$b" produce4p produce --topic p4 --partitions 4 --record-size 1024 --records "$RECORDS" \
				--linger 10ms --batch-max-bytes 1000000 --acks all $PRODUCE_EXTRA
		fi
		if [ "$E2E_SECS" != 0 ]; then
			n=$((n + 1))
			run "$b" e2e e2e --topic e2e --record-size 1024 --duration "${E2E_SECS}s" --target-rate 10000 --linger 0
		fi
		stop
		tail -n "$n" "$results" | python3 -c '
import json, sys
rq = [int(x) for x in open(sys.argv[2]).read().split()][-int(sys.argv[3]):]
for i, l in enumerate(sys.stdin):
    r = json.loads(l); res = r.get("result") or {}
    mb = res.get("mb_per_sec") or 0
    gb = (res.get("bytes") or 0) / 1e9
    lat = res.get("e2e_latency_ms") or res.get("produce_latency_ms") or {}
    print("round %s %-10s %-9s %7.1f MB/s  cpu %5.2f s  %5.2f s/GB  runq %6.0f ms  p50 %6.2f p99 %7.2f ms" % (sys.argv[1], r["tags"]["broker"], r["tags"]["workload"],
        mb, r["broker_cpu_s"], r["broker_cpu_s"] / gb if gb else 0, rq[i] / 1e6, lat.get("p50", 0), lat.get("p99", 0)))
' "$r" "$work/rqwait" "$n"
	done
done
log "load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$results" "$work/rqwait" <<'EOF'
import json, sys, statistics as st
rows = {}
rq = [int(x) for x in open(sys.argv[2]).read().split()]
for i, l in enumerate(open(sys.argv[1])):
    r = json.loads(l); res = r.get("result") or {}
    gb = (res.get("bytes") or 0) / 1e9
    lat = res.get("e2e_latency_ms") or res.get("produce_latency_ms") or {}
    k = (r["tags"]["workload"], r["tags"]["broker"])
    rows.setdefault(k, []).append((res.get("mb_per_sec") or 0, r["broker_cpu_s"] / gb if gb else 0,
                                   r["broker_cpu_s"] / r["wall_s"] * 100, lat.get("p99", 0), rq[i] / 1e6, lat.get("p50", 0)))
def f(v, fmt):
    return (fmt % st.median(v)) + " (" + (fmt % min(v)) + "-" + (fmt % max(v)) + ")"
print("%-9s %-10s %-16s %-19s %-13s %-22s %-22s %s" % ("workload", "broker", "MB/s", "CPU s/GB", "CPU %", "p50 ms", "p99 ms", "run-queue wait ms"))
for (w, b), v in sorted(rows.items()):
    print("%-9s %-10s %-16s %-19s %-13s %-22s %-22s %s" % (w, b, f([x[0] for x in v], "%.0f"), f([x[1] for x in v], "%.2f"),
          f([x[2] for x in v], "%.0f"), f([x[5] for x in v], "%.2f"), f([x[3] for x in v], "%.2f"), f([x[4] for x in v], "%.0f")))
EOF
