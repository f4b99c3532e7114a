#!/usr/bin/env bash
# bench-report.sh measures, in one run, this machine's limits, `sluice perf`
# against `sluice serve` for every backend and against kfake (franz-go's
# fake broker, with its data dir) as the baseline, and a CPU/allocation
# profile of the end-to-end benchmarks; it rewrites the generated section of
# BENCHMARKS.md and the chart docs/bench.svg. `make bench-report` runs it.
#
#   scripts/bench-report.sh                  # about 20 minutes on 2 cores
#   RUNS=1 REC_1K=200000 REC_100=500000 E2E_SECS=1 PROFILE=0 \
#       OUT=/tmp/report.md scripts/bench-report.sh    # a quick smoke run
#
# Method (see the report's own text for what each number means):
#   - limits: dd if=/dev/zero bs=1M count=1024 (1 GiB, stays in the page
#     cache), and `benchreport limits` (page-cache file -> sendfile ->
#     loopback TCP, and memory -> write -> loopback TCP, reader discards);
#   - the floor: `benchreport floor` (bench/floor): the CPU per GB of
#     reading 1 MiB produce frames off loopback TCP, CRC-32C and pwrite, and
#     of the segment backend's append path, on one pinned thread;
#   - workloads: 1 KiB and 100 B records, 1 or 4 producers, acks 1 or all,
#     one partition; one producer to 4 partitions with 1 MB batches and
#     linger 10 ms (issue 16); consume from the start; e2e at a fixed rate;
#   - replicated produce: scripts/bench-replication.sh twice (brokers on CPU 0
#     and the client on CPU 1, then all sharing both cores; ZooKeeper and a
#     3-broker cluster against a single node; REPL=0 skips it);
#   - brokers: `sluice serve` per backend and `kfakeserve --data-dir`, all
#     started at once, pinned with `taskset -c 0`; the load generator
#     (`sluice perf`) is pinned with `taskset -c 1`. Rounds of every workload
#     on every broker are repeated RUNS times, so a burst of outside load
#     hits all brokers alike rather than one;
#   - CPU: the broker's utime+stime from /proc/PID/stat before and after
#     each run, the load generator's from its rusage (benchreport measure);
#   - every command runs under `timeout`; every process started here is
#     stopped by its pid at exit and every file lives under one mktemp -d on
#     the repository's filesystem, removed at exit.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

GO=${GO:-go}
RUNS=${RUNS:-3}
BROKERS=${BROKERS:-"segment pebble memory kfake"}
REC_1K=${REC_1K:-1200000}      # records per 1 KiB produce run (~2-4 s here)
REC_100=${REC_100:-3000000}    # records per 100 B produce run
REC_4P=${REC_4P:-1200000}      # records per 4-partition, 1 MB-batch produce run
FLOOR_MIB=${FLOOR_MIB:-2048}   # MiB per bench/floor run
REPL=${REPL:-1}                # 0: skip scripts/bench-replication.sh (ZooKeeper, 3 brokers)
E2E_SECS=${E2E_SECS:-3}        # length of an e2e run
E2E_RATE=${E2E_RATE:-10000}    # records/s of an e2e run
PERF_TIMEOUT=${PERF_TIMEOUT:-60}
PROFILE=${PROFILE:-1}          # 0: skip the go test profile pass
WARM_MB=${WARM_MB:-8192}       # memory touched through /dev/shm when QUIET_VM=0 or unavailable; 0: none
QUIET_VM=${QUIET_VM:-1}        # 1: pause free page reporting for the run (bench-lib.sh: bench_warm)
PROFILE_BENCHTIME=${PROFILE_BENCHTIME:-1000x}
OUT=${OUT:-$repo/BENCHMARKS.md}
SVG=${SVG:-$repo/docs/bench.svg}

log() { printf 'bench-report: %s\n' "$*" >&2; }

work=$(mktemp -d "$repo/.bench-report.XXXXXX")
declare -A broker_pid=() broker_port=()
# stop_brokers stops every broker started here by its pid: SIGTERM, then
# SIGKILL after 5 s.
stop_brokers() {
	local b p
	for p in "${broker_pid[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for b in "${!broker_pid[@]}"; do
		p=${broker_pid[$b]}
		for _ in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null || true
		unset "broker_pid[$b]"
	done
}
# shellcheck source=bench-lib.sh
. "$repo/scripts/bench-lib.sh"
cleanup() {
	stop_brokers
	rm -rf "$work"
	bench_vm_restore
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fstype=$(df --output=fstype "$work" | tail -1 | tr -d ' ')
if [ "$fstype" = tmpfs ]; then
	log "$work is on tmpfs; dd and the data dirs would measure memory, not disk"
	exit 1
fi
if [ "$(nproc)" -lt 2 ]; then
	log "needs 2 CPUs to pin the broker and the load generator apart"
	exit 1
fi

results=$work/results.jsonl
: >"$results"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
date_start=$(date -u '+%Y-%m-%d %H:%M')

log "building"
timeout 300 "$GO" build -o "$work/sluice" ./cmd/sluice
timeout 300 "$GO" build -o "$work/kfakeserve" ./bench/cmd/kfakeserve
timeout 300 "$GO" build -o "$work/benchreport" ./bench/cmd/benchreport
br=$work/benchreport
clk=$(getconf CLK_TCK)

# Warm-up (scripts/bench-lib.sh: bench_warm): free page reporting paused
# for the run and the memory touched once, or WARM_MB through /dev/shm.
bench_warm "$br"
vm_state="free page reporting left on; warm-up ${WARM_MB} MB through /dev/shm"
[ -z "$bench_vm_order" ] || vm_state="free page reporting paused for the run (page_reporting_order $bench_vm_order -> 11), all memory but 3 GiB touched first"

# Limits. dd's summary line is "N bytes (...) copied, S s, R MB/s".
log "limits: dd 1 GiB x$RUNS"
for _ in $(seq "$RUNS"); do
	line=$(LC_ALL=C timeout 120 dd if=/dev/zero of="$work/dd.bin" bs=1M count=1024 2>&1 | tail -1)
	rm -f "$work/dd.bin"
	echo "$line" | awk '{
		for (i = 1; i <= NF; i++) if ($i == "s," || $i == "s") secs = $(i-1)
		printf "{\"kind\":\"limit\",\"name\":\"dd\",\"mbps\":%.1f}\n", $1 / secs / 1e6
	}' >>"$results"
done
log "limits: sendfile and tcp x$RUNS"
timeout 120 "$br" limits -dir "$work" -runs "$RUNS" -seconds 2 >>"$results"
# The floor: read 1 MiB frames off loopback TCP, CRC and pwrite them, on
# CPU 0 while CPU 1 feeds the socket (bench/floor).
log "floor x$RUNS"
timeout 600 "$br" floor -dir "$work" -runs "$RUNS" -total-mib "$FLOOR_MIB" -reader-cpu 0 -writer-cpu 1 >>"$results"

# Brokers, all up at once on CPU 0.
start_broker() {
	local b=$1 port dir
	port=$("$br" freeport)
	dir=$work/data-$b
	mkdir -p "$dir"
	if [ "$b" = kfake ]; then
		taskset -c 0 "$work/kfakeserve" --port "$port" --data-dir "$dir" >"$work/$b.log" 2>&1 &
	else
		# http.listeners= : the brokers run at once and would all
		# bind the default 127.0.0.1:9644; metrics off, as before.
		taskset -c 0 "$work/sluice" serve --set "listeners=PLAINTEXT://127.0.0.1:$port" \
			--set "log.dirs=$dir" --set "storage.backend=$b" --set "http.listeners=" >"$work/$b.log" 2>&1 &
	fi
	broker_pid[$b]=$!
	broker_port[$b]=$port
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		kill -0 "${broker_pid[$b]}" 2>/dev/null || break
		sleep 0.1
	done
	log "$b did not start listening on $port:"
	cat "$work/$b.log" >&2
	exit 1
}
for b in $BROKERS; do
	start_broker "$b"
	log "broker $b: pid ${broker_pid[$b]} port ${broker_port[$b]}"
done

# measure_perf B TAGS... -- PERF ARGS...: one measured `sluice perf` run against B.
measure_perf() {
	local b=$1
	shift
	local tags=(-tag "broker=$b")
	while [ "$1" != -- ]; do
		tags+=(-tag "$1")
		shift
	done
	shift
	timeout $((PERF_TIMEOUT + 10)) "$br" measure -pid "${broker_pid[$b]}" -out "$results" \
		-clk-tck "$clk" "${tags[@]}" -- \
		taskset -c 1 timeout "$PERF_TIMEOUT" "$work/sluice" perf "$@" \
		--brokers "127.0.0.1:${broker_port[$b]}" --json --quiet \
		--timeout "$((PERF_TIMEOUT - 5))s" ||
		log "run failed: $b $*"
}

delete_topic() {
	timeout 30 "$work/sluice" topic delete "$2" --bootstrap-server "127.0.0.1:${broker_port[$1]}" \
		>/dev/null 2>&1 || log "could not delete $2 on $1"
}

for run in $(seq "$RUNS"); do
	for size in 1024 100; do
		records=$REC_1K
		[ "$size" = 100 ] && records=$REC_100
		for producers in 1 4; do
			for acks in 1 all; do
				for b in $BROKERS; do
					log "round $run: $b produce size=$size producers=$producers acks=$acks"
					topic=p-$size-$producers-$acks-$run
					measure_perf "$b" workload=produce "size=$size" "producers=$producers" "acks=$acks" -- \
						produce --topic "$topic" --record-size "$size" --records "$records" \
						--producers "$producers" --acks "$acks"
					# Consume from the start what the first produce workload wrote.
					if [ "$producers" = 1 ] && [ "$acks" = 1 ]; then
						log "round $run: $b consume size=$size"
						measure_perf "$b" workload=consume "size=$size" -- consume --topic "$topic"
					fi
					delete_topic "$b" "$topic"
				done
			done
		done
	done
	# The issue-16 setup: one producer, 4 partitions, 1 MB batches, linger 10 ms.
	for acks in 1 all; do
		# The floor again, in the conditions the brokers meet next
		# (render pools it with the runs above).
		log "round $run: floor (pwrite, reserve) before the 4-partition runs, acks=$acks"
		timeout 120 "$br" floor -dir "$work" -runs 1 -total-mib "$FLOOR_MIB" -modes pwrite,reserve \
			-reader-cpu 0 -writer-cpu 1 >>"$results" || log "floor run failed"
		for b in $BROKERS; do
			log "round $run: $b produce 4 partitions, 1 MB batches, acks=$acks"
			topic=p4-$acks-$run
			measure_perf "$b" workload=produce4p size=1024 producers=1 "acks=$acks" -- \
				produce --topic "$topic" --partitions 4 --record-size 1024 --records "$REC_4P" \
				--linger 10ms --batch-max-bytes 1000000 --acks "$acks"
			delete_topic "$b" "$topic"
		done
	done
	for b in $BROKERS; do
		log "round $run: $b e2e ${E2E_RATE}/s"
		topic=e2e-$run
		measure_perf "$b" workload=e2e size=1024 -- e2e --topic "$topic" --record-size 1024 \
			--duration "${E2E_SECS}s" --target-rate "$E2E_RATE" --linger 0
		delete_topic "$b" "$topic"
	done
done

stop_brokers

# Replicated produce: a 3-broker cluster on ZooKeeper against a single node,
# in its own runs (scripts/bench-replication.sh), included as a section: once
# with every broker on CPU 0 and the client on CPU 1, once with brokers and
# client sharing both cores (the issue's "on 2 cores, where three brokers
# share the CPU").
extra=
repl_json=
if [ "$REPL" != 0 ] && [ -x scripts/bench-replication.sh ]; then
	{
		echo "### Replicated produce (\`scripts/bench-replication.sh\`)"
		echo
	} >"$work/replication.md"
	: >"$work/replication.jsonl"
	for placement in "0 1" "0,1 0,1"; do
		set -- $placement
		log "replicated produce, brokers on CPU $1, client on CPU $2 (scripts/bench-replication.sh)"
		if BROKER_CPUS=$1 CLIENT_CPUS=$2 RUNS=$RUNS WARM_MB=0 OUT_MD="$work/replication-part.md" \
			OUT_JSON="$work/replication-part.jsonl" BIN="$work/sluice" \
			timeout 1200 scripts/bench-replication.sh >"$work/replication.log" 2>&1; then
			{
				echo "#### Brokers on CPU $1, client on CPU $2"
				echo
				cat "$work/replication-part.md"
				echo
			} >>"$work/replication.md"
			cat "$work/replication-part.jsonl" >>"$work/replication.jsonl"
			extra=$work/replication.md
			repl_json=$work/replication.jsonl
		else
			log "replicated produce failed: $(tail -5 "$work/replication.log")"
		fi
	done
fi

# Profile pass: the in-process end-to-end benchmarks of the segment backend.
profdir=$work/prof
mkdir -p "$profdir"
if [ "$PROFILE" != 0 ]; then
	for kind in Produce Consume; do
		log "profile: $kind/backend=segment"
		TMPDIR=$work timeout 300 "$GO" test -run '^$' -bench "^Benchmark$kind\$/^backend=segment\$" \
			-benchtime "$PROFILE_BENCHTIME" -benchmem -o "$profdir/bench.test" \
			-cpuprofile "$profdir/$kind.cpu" -memprofile "$profdir/$kind.mem" ./bench/ \
			>"$profdir/$kind.bench" 2>&1 || log "profile $kind failed: $(tail -3 "$profdir/$kind.bench")"
		if [ -s "$profdir/$kind.cpu" ]; then
			timeout 60 "$GO" tool pprof -top -nodecount 15 "$profdir/bench.test" "$profdir/$kind.cpu" \
				>"$profdir/$kind.cpu.top" 2>/dev/null || true
			# The broker's side only: the client shares the process.
			timeout 60 "$GO" tool pprof -top -cum -nodecount 25 \
				-focus 'sluice/sluice/(server|replication|segment|record|mmapindex|zerocopy)' \
				"$profdir/bench.test" "$profdir/$kind.cpu" >"$profdir/$kind.cpucum.top" 2>/dev/null || true
			timeout 60 "$GO" tool pprof -top -sample_index=alloc_space -nodecount 12 \
				"$profdir/bench.test" "$profdir/$kind.mem" >"$profdir/$kind.mem.top" 2>/dev/null || true
		fi
	done
fi

# The 4 GiB dd figure of the storage section, when it is there.
dd4g=$(grep -o 'Buffered sequential write baseline (dd bs=1M count=4096): \*\*[0-9]* MB/s' "$OUT" 2>/dev/null |
	grep -o '[0-9]* MB/s' | grep -o '[0-9]*' || true)

mkdir -p "$(dirname "$SVG")"
report=$work/report.md
cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
mem_gib=$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)
timeout 60 "$br" render -results "$results" -svg "$SVG" -svg-ref "$(realpath --relative-to="$(dirname "$OUT")" "$SVG")" \
	-date "$date_start UTC" -commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	-machine "nproc $(nproc), $cpu_model, $mem_gib GiB RAM, $fstype; $vm_state" \
	-load-start "$load_start" -load-end "$(cut -d' ' -f1-3 /proc/loadavg)" \
	-dd4g "${dd4g:-0}" -profiles "$profdir" -extra "$extra" -repl-results "$repl_json" \
	-params "RUNS=$RUNS REC_1K=$REC_1K REC_100=$REC_100 REC_4P=$REC_4P FLOOR_MIB=$FLOOR_MIB E2E_SECS=$E2E_SECS E2E_RATE=$E2E_RATE QUIET_VM=$QUIET_VM WARM_MB=$WARM_MB" \
	>"$report"

# Keep the raw results beside the chart, so the report can be re-rendered
# (benchreport render -results ...) or checked without a re-run.
cp "$results" "$(dirname "$SVG")/bench-results.jsonl"
[ -z "$repl_json" ] || cp "$repl_json" "$(dirname "$SVG")/bench-replication-results.jsonl"

# Replace the generated section of OUT (between the markers) or append it.
begin='<!-- bench-report:begin -->'
end='<!-- bench-report:end -->'
if [ -f "$OUT" ] && grep -qF "$begin" "$OUT"; then
	awk -v b="$begin" -v e="$end" -v f="$report" '
		$0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
		$0 == e { skip = 0 }
		!skip' "$OUT" >"$work/out.md"
	cat "$work/out.md" >"$OUT"
else
	{ echo; echo "$begin"; cat "$report"; echo "$end"; } >>"$OUT"
fi
log "wrote $OUT and $SVG ($(date -u '+%H:%M') UTC, started $date_start)"
