#!/usr/bin/env bash
# bench-replication.sh measures replicated produce (issue 16): `sluice perf`
# against a three-broker cluster (topic RF 3, min.insync.replicas=2,
# acks=all) and against a single-node broker (RF 1) in the same run, and
# writes a Markdown fragment ($OUT_MD) and JSON lines ($OUT_JSON) for
# BENCHMARKS.md and `make bench-report`.
#
#   scripts/bench-replication.sh                           # about 5 minutes
#   RUNS=1 REC_1K=50000 REC_16K=5000 E2E_SECS=2 STRACE_REC=5000 \
#       OUT_MD=/tmp/repl.md scripts/bench-replication.sh   # a smoke run
#
# Knobs: RUNS (3), SIZES ("1024 16384": record sizes of the produce runs),
# REC_1K (1000000 1 KiB records per produce run), REC_16K (60000 16 KiB
# records), E2E_SECS (5; 0: no e2e runs) and E2E_RATE (10000 records/s) of an
# e2e run, WARM_MB (4096: memory touched and freed first, as
# bench-report.sh does; 0: none), STRACE_REC (20000 1 KiB records of the traced run; 0: none),
# EXTRA ("--set key=value ..." for every broker, e.g. the replica.fetch.*
# keys), PROFILE_DIR (when set: every broker runs with --cpuprofile
# PROFILE_DIR/<name>.cpu, written when it stops), BIN (a sluice binary to
# measure instead of bin/sluice), PERF_TIMEOUT (120 s per
# perf run), BENCH_TMP (/tmp/repl-bench: parent of the work directory),
# BROKER_CPUS and CLIENT_CPUS (CPU placement, below).
#
# CPU placement: BROKER_CPUS (taskset -c list; default 0) for ZooKeeper and
# every broker, the single node included, and CLIENT_CPUS for the load
# generator (default 1 when the brokers are on CPU 0, else the brokers'
# CPUs). The default keeps the brokers on one core and the client on the
# other, so broker CPU per GB is not blurred by the client; BROKER_CPUS=0,1
# is issue 16's wording, "on 2 cores, where three brokers share the CPU":
# brokers and client share both cores, the single node with its client as
# much as the cluster with its.
#
# Method:
#   - one ZooKeeper (Debian's, ZooKeeperServerMain as scripts/cluster.sh
#     and the e2e tests run it), three `sluice serve` in cluster mode (ids
#     1-3) and one single-node `sluice serve`, all started at once, all on
#     127.0.0.1 free ports, segment backend, data under one mktemp -d;
#     brokers and ZooKeeper pinned with `taskset -c $BROKER_CPUS` (0), the
#     load generator with `taskset -c $CLIENT_CPUS` (1);
#   - RUNS rounds, each: produce REC_1K x 1 KiB and REC_16K x 16 KiB records
#     (one producer, acks=all, one partition) to the single node (RF 1) and
#     to the cluster (RF 3, min.insync.replicas=2, created by perf's
#     --replication-factor), then e2e at E2E_RATE for E2E_SECS (1 KiB,
#     linger 0) on RF 1 and RF 3. Every topic is deleted after its run;
#   - warm-up: WARM_MB of memory written to /dev/shm and freed first: this
#     VM's memory is backed by the host on first touch, which would charge
#     page faults to whichever broker writes first (see bench-report.sh);
#   - CPU: utime+stime of every broker from /proc/PID/stat before and after
#     each run, per GB (10^9 bytes) acknowledged, and its system calls
#     (/proc/PID/io syscr, syscw); in the cluster each broker
#     is named by its role for the topic (leader, follower); from each
#     broker's /metrics (http.listeners on a free port) the bytes its Go heap
#     allocated and the Produce and follower Fetch requests it served;
#   - follower fetch efficiency: one more produce run of STRACE_REC 1 KiB
#     records to an RF 3 topic while `strace -f` records the leader's and a
#     follower's read/write/sendfile calls; the table sums their calls and
#     returned bytes. The leader's record bytes to followers should go out by
#     sendfile (2x the produced bytes: two followers), the follower's in by
#     read and to its log by one write of the same bytes;
#   - every command runs under `timeout`; every process started here is
#     stopped by its pid at exit (SIGTERM, then SIGKILL after 10 s) and the
#     work directory is removed.
set -euo pipefail

RUNS=${RUNS:-3}
SIZES=${SIZES:-1024 16384}
WARM_MB=${WARM_MB:-4096}
REC_1K=${REC_1K:-1000000}
REC_16K=${REC_16K:-60000}
E2E_SECS=${E2E_SECS:-5}
E2E_RATE=${E2E_RATE:-10000}
STRACE_REC=${STRACE_REC:-20000}
PERF_TIMEOUT=${PERF_TIMEOUT:-120}
EXTRA=${EXTRA:-}
PROFILE_DIR=${PROFILE_DIR:-}
OUT_MD=${OUT_MD:-/dev/stdout}
OUT_JSON=${OUT_JSON:-}
export BENCH_TMP=${BENCH_TMP:-/tmp/repl-bench}
ZK_CP=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar

log() { printf 'bench-replication: %s\n' "$*" >&2; }

command -v java >/dev/null && [ -f /usr/share/java/zookeeper.jar ] ||
	{ log "java or zookeeper missing; run make test-deps"; exit 1; }
[ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null ||
	{ log "needs taskset and 2 CPUs to pin the brokers and the load generator apart"; exit 1; }
command -v jq >/dev/null || { log "needs jq"; exit 1; }
[ "$STRACE_REC" = 0 ] || command -v strace >/dev/null || { log "needs strace (or STRACE_REC=0)"; exit 1; }
[ -z "$PROFILE_DIR" ] || mkdir -p "$PROFILE_DIR"
PROFILE_DIR=${PROFILE_DIR:+$(cd "$PROFILE_DIR" && pwd)}
mkdir -p "$BENCH_TMP"

# shellcheck source=bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
bench_setup replication
BROKER_CPUS=${BROKER_CPUS:-0}
if [ -z "${CLIENT_CPUS:-}" ]; then
	CLIENT_CPUS=$BROKER_CPUS
	[ "$BROKER_CPUS" != 0 ] || CLIENT_CPUS=1
fi
pin_broker=(taskset -c "$BROKER_CPUS") pin_client=(taskset -c "$CLIENT_CPUS")
broker_ncpu=$(taskset -c "$BROKER_CPUS" nproc)
# BIN: measure another build of sluice (e.g. an older commit's, for a
# before/after comparison in the same conditions) instead of bin/sluice.
[ -z "${BIN:-}" ] || bin=$(realpath "$BIN")
timeout 300 go build -o "$work/benchreport" ./bench/cmd/benchreport
clk=$(getconf CLK_TCK)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
date_start=$(date -u '+%Y-%m-%d %H:%M')

# pids: every process started here but the single node (bench-lib's
# broker_pid), in start order; ZooKeeper first, stopped last.
declare -a pids=()
declare -A bpid=() bport=() hport=() # by broker name: single, 1, 2, 3
strace_pids=()
cleanup() {
	local p
	bench_vm_restore
	for p in "${strace_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for ((i = ${#pids[@]} - 1; i >= 1; i--)); do kill "${pids[$i]}" 2>/dev/null || true; done
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		p=${pids[$i]}
		[ "$i" != 0 ] || kill "$p" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	done
	if [ -n "$broker_pid" ]; then
		kill "$broker_pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$broker_pid" 2>/dev/null || true
		broker_pid=
	fi
	bench_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

freeport() { timeout 10 "$work/benchreport" freeport; }

# ZooKeeper: tickTime 500 ms allows 1 s sessions; no admin server.
zk_port=$(freeport)
mkdir -p "$work/zookeeper"
cat >"$work/zoo.cfg" <<CFG
tickTime=500
dataDir=$work/zookeeper
clientPort=$zk_port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok
CFG
"${pin_broker[@]}" java -Xmx256m -XX:+UseSerialGC -cp "$ZK_CP" -Dzookeeper.admin.enableServer=false \
	org.apache.zookeeper.server.ZooKeeperServerMain "$work/zoo.cfg" >"$work/zookeeper.log" 2>&1 &
pids+=($!)

# The single node, then the cluster brokers as soon as ZooKeeper answers.
prof() { [ -z "$PROFILE_DIR" ] || echo "--cpuprofile=$PROFILE_DIR/$1.cpu"; }
bport[single]=$(freeport)
hport[single]=$(freeport)
# shellcheck disable=SC2046
"${pin_broker[@]}" "$bin" serve $(prof single) --set "listeners=PLAINTEXT://127.0.0.1:${bport[single]}" \
	--set "log.dirs=$work/data-single" --set "http.listeners=http://127.0.0.1:${hport[single]}" >"$work/broker.log" 2>&1 &
broker_pid=$!
bpid[single]=$broker_pid

ready=
for _ in $(seq 300); do
	kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/zookeeper.log" >&2; log "zookeeper exited"; exit 1; }
	if { exec 3<>"/dev/tcp/127.0.0.1/$zk_port"; } 2>/dev/null; then
		printf ruok >&3
		ans=$(timeout 2 cat <&3 || true)
		exec 3>&-
		[ "$ans" = imok ] && { ready=1; break; }
	fi
	sleep 0.1
done
[ -n "$ready" ] || { log "zookeeper not ready after 30 s"; exit 1; }
sleep 1 # ruok answers a moment before sessions are served
for id in 1 2 3; do
	bport[$id]=$(freeport)
	hport[$id]=$(freeport)
	# shellcheck disable=SC2046,SC2086
	"${pin_broker[@]}" "$bin" serve $(prof "broker-$id") --set broker.id=$id \
		--set "listeners=PLAINTEXT://127.0.0.1:${bport[$id]}" --set "http.listeners=http://127.0.0.1:${hport[$id]}" \
		--set "log.dirs=$work/data-$id" --set "zookeeper.connect=127.0.0.1:$zk_port/sluice" \
		--set zookeeper.session.timeout.ms=6000 $EXTRA >"$work/broker-$id.log" 2>&1 &
	pids+=($!)
	bpid[$id]=$!
done
cluster="127.0.0.1:${bport[1]},127.0.0.1:${bport[2]},127.0.0.1:${bport[3]}"
for b in single 1 2 3; do
	up=
	for _ in $(seq 150); do
		timeout 5 "$bin" topic list --bootstrap-server "127.0.0.1:${bport[$b]}" --timeout 1s >/dev/null 2>&1 && { up=1; break; }
		kill -0 "${bpid[$b]}" 2>/dev/null || break
		sleep 0.2
	done
	if [ -z "$up" ]; then
		log "broker $b not up; its log:"
		if [ "$b" = single ]; then cat "$work/broker.log" >&2; else cat "$work/broker-$b.log" >&2; fi
		exit 1
	fi
	log "broker $b: pid ${bpid[$b]} port ${bport[$b]}"
done

results=$work/results.jsonl
: >"$results"

bench_warm "$work/benchreport" # scripts/bench-lib.sh

# cpu B: utime+stime of broker B in clock ticks.
cpu() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/${bpid[$1]}/stat"; }

# sysc B: broker B's read-like and write-like system calls so far
# (/proc/PID/io syscr and syscw: every read/recv and write/send/sendfile
# call, whatever its size) as a JSON object; zeros when unreadable.
sysc() {
	awk '/^syscr:/ { r = $2 } /^syscw:/ { w = $2 } END { printf "{\"r\":%d,\"w\":%d}\n", r, w }' "/proc/${bpid[$1]}/io" 2>/dev/null ||
		echo '{"r":0,"w":0}'
}

# counters B: a JSON object of broker B's counters from its /metrics: bytes
# the Go heap allocated, Produce requests and follower Fetch requests served.
counters() {
	timeout 5 curl -sf "http://127.0.0.1:${hport[$1]}/metrics" | awk '
		/^go_memstats_alloc_bytes_total / { a = $2 }
		/^kafka_network_requestmetrics_requests_total\{request="Produce",/ { p += $2 }
		/^kafka_network_requestmetrics_requests_total\{request="FetchFollower",/ { f += $2 }
		END { printf "{\"alloc_bytes\":%.0f,\"produce_requests\":%.0f,\"follower_fetches\":%.0f}\n", a, p, f }' ||
		echo '{"alloc_bytes":0,"produce_requests":0,"follower_fetches":0}'
}

# leader_of TOPIC: the broker id leading partition 0 of TOPIC in the cluster.
leader_of() {
	timeout 30 "$bin" topic describe "$1" --bootstrap-server "$cluster" |
		awk '$1 == "0" && $2 ~ /^[0-9]+$/ { print $2; exit }'
}

# measure TARGET ROUND WORKLOAD SIZE TOPIC -- PERF ARGS...: one `sluice perf`
# run against the single node (TARGET rf1) or the cluster (rf3), with every
# broker's CPU before and after; appends one JSON line to $results.
measure() {
	local target=$1 round=$2 workload=$3 size=$4 topic=$5
	shift 6
	local seeds=$cluster names=(1 2 3) b before=() after=() cbefore=() cafter=() sbefore=() safter=() out rc=0 start end
	if [ "$target" = rf1 ]; then seeds=127.0.0.1:${bport[single]} names=(single); fi
	for b in "${names[@]}"; do cbefore+=("$(counters "$b")"); sbefore+=("$(sysc "$b")"); before+=("$(cpu "$b")"); done
	start=$(date +%s.%N)
	out=$("${pin_client[@]}" timeout "$PERF_TIMEOUT" "$bin" perf "$@" --topic "$topic" --brokers "$seeds" \
		--json --quiet --timeout "$((PERF_TIMEOUT - 5))s") || rc=$?
	end=$(date +%s.%N)
	for b in "${names[@]}"; do after+=("$(cpu "$b")"); safter+=("$(sysc "$b")"); cafter+=("$(counters "$b")"); done
	[ "$rc" = 0 ] || log "run failed ($rc): $target $workload size=$size: $(echo "$out" | jq -r .first_error 2>/dev/null)"
	local leader=single roles i role
	[ "$target" = rf1 ] || leader=$(leader_of "$topic")
	roles=$(for i in "${!names[@]}"; do
		role=follower
		[ "${names[$i]}" = "$leader" ] && role=leader
		[ "$target" = rf1 ] && role=single
		jq -nc --arg broker "${names[$i]}" --arg role "$role" --argjson b "${cbefore[$i]}" --argjson a "${cafter[$i]}" \
			--argjson sb "${sbefore[$i]}" --argjson sa "${safter[$i]}" \
			--argjson cpu "$(echo "${after[$i]} ${before[$i]} $clk" | awk '{ printf "%.3f", ($1 - $2) / $3 }')" \
			'{broker: $broker, role: $role, cpu_s: $cpu, alloc_bytes: ($a.alloc_bytes - $b.alloc_bytes),
			  produce_requests: ($a.produce_requests - $b.produce_requests),
			  follower_fetches: ($a.follower_fetches - $b.follower_fetches),
			  syscr: ($sa.r - $sb.r), syscw: ($sa.w - $sb.w)}'
	done | jq -sc .)
	echo "${out:-null}" | jq -c --arg target "$target" --argjson round "$round" --arg workload "$workload" \
		--argjson size "$size" --argjson exit "$rc" --argjson brokers "$roles" \
		--argjson wall "$(echo "$end $start" | awk '{ printf "%.3f", $1 - $2 }')" \
		--arg bcpus "$BROKER_CPUS" --arg ccpus "$CLIENT_CPUS" \
		'{kind: "run", target: $target, round: $round, workload: $workload, size: $size, exit: $exit,
		  wall_s: $wall, broker_cpus: $bcpus, client_cpus: $ccpus, brokers: $brokers, result: .}' >>"$results"
	delete_topic "$target" "$topic"
}

delete_topic() {
	local seeds=$cluster
	[ "$1" = rf1 ] && seeds=127.0.0.1:${bport[single]}
	timeout 30 "$bin" topic delete "$2" --bootstrap-server "$seeds" >/dev/null 2>&1 || log "could not delete $2 ($1)"
}

# target_args TARGET: the topic settings of a target.
target_args() {
	if [ "$1" = rf3 ]; then
		echo --replication-factor 3 --topic-config min.insync.replicas=2
	else
		echo --replication-factor 1
	fi
}

for round in $(seq "$RUNS"); do
	for size in $SIZES; do
		records=$REC_1K
		[ "$size" = 16384 ] && records=$REC_16K
		for target in rf1 rf3; do
			log "round $round: produce $target size=$size records=$records"
			# shellcheck disable=SC2046
			measure "$target" "$round" produce "$size" "p-$target-$size-$round" -- produce \
				--record-size "$size" --records "$records" --acks all $(target_args "$target")
		done
	done
	for target in rf1 rf3; do
		[ "$E2E_SECS" != 0 ] || break
		log "round $round: e2e $target ${E2E_RATE}/s"
		# shellcheck disable=SC2046
		measure "$target" "$round" e2e 1024 "e2e-$target-$round" -- e2e --record-size 1024 \
			--duration "${E2E_SECS}s" --target-rate "$E2E_RATE" --linger 0 --acks all $(target_args "$target")
	done
done

# Follower fetch efficiency: the leader's and a follower's syscalls during
# one produce run. The topic is created first so the leader is known.
if [ "$STRACE_REC" != 0 ]; then
	topic=strace-rf3
	timeout 30 "$bin" topic create "$topic" --bootstrap-server "$cluster" --partitions 1 \
		--replication-factor 3 --config min.insync.replicas=2 >/dev/null
	leader=
	for _ in $(seq 50); do
		leader=$(leader_of "$topic" || true)
		[ -n "$leader" ] && break
		sleep 0.2
	done
	follower=1
	[ "$leader" = 1 ] && follower=2
	log "strace: leader $leader, follower $follower, $STRACE_REC records"
	calls='read,readv,recvfrom,recvmsg,write,writev,pwrite64,pwritev,sendto,sendmsg,sendfile'
	for b in "$leader" "$follower"; do
		timeout $((PERF_TIMEOUT + 30)) strace -f -qq -e trace="$calls" -e signal=none \
			-o "$work/strace-$b.txt" -p "${bpid[$b]}" 2>"$work/strace-$b.err" &
		strace_pids+=($!)
	done
	sleep 2 # attached (strace -p returns nothing to wait on)
	rc=0
	"${pin_client[@]}" timeout "$PERF_TIMEOUT" "$bin" perf produce --topic "$topic" --brokers "$cluster" \
		--record-size 1024 --records "$STRACE_REC" --acks all --json --quiet \
		--timeout "$((PERF_TIMEOUT - 5))s" >"$work/strace-perf.json" || rc=$?
	sleep 1 # the followers' last fetches
	for p in "${strace_pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	for p in "${strace_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	strace_pids=()
	produced=$(jq -r '.bytes // 0' "$work/strace-perf.json")
	for b in "$leader" "$follower"; do
		role=follower
		[ "$b" = "$leader" ] && role=leader
		# Lines: "PID name(args) = N", or split by another thread into
		# "PID name(args <unfinished ...>" and "PID <... name resumed>...) = N".
		awk -v role="$role" -v produced="$produced" -v exit_="$rc" '
			{
				name = ""
				if (match($0, /<\.\.\. [a-z0-9_]+ resumed>/)) {
					name = substr($0, RSTART + 5, RLENGTH - 14)
				} else if ($0 ~ /<unfinished \.\.\.>$/) {
					next
				} else if (match($0, /^[0-9]+ +[a-z0-9_]+\(/)) {
					name = $0; sub(/^[0-9]+ +/, "", name); sub(/\(.*/, "", name)
				}
				if (name == "" || !match($0, /= -?[0-9]+/)) next
				r = substr($0, RSTART + 2, RLENGTH - 2) + 0
				calls[name]++
				if (r > 0) bytes[name] += r
			}
			END {
				printf "{\"kind\":\"syscalls\",\"role\":\"%s\",\"produced_bytes\":%d,\"exit\":%d,\"calls\":{", role, produced, exit_
				sep = ""
				for (n in calls) { printf "%s\"%s\":{\"calls\":%d,\"bytes\":%d}", sep, n, calls[n], bytes[n]; sep = "," }
				print "}}"
			}' "$work/strace-$b.txt" >>"$results"
	done
	delete_topic rf3 "$topic"
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# Stop the brokers now (SIGTERM) so that --cpuprofile files get written.
cleanup_profiles() {
	local p
	for p in "${bpid[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${bpid[@]}"; do
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	done
}
[ -z "$PROFILE_DIR" ] || cleanup_profiles

[ -z "$OUT_JSON" ] || cp "$results" "$OUT_JSON"

# --- the report ---
# med: "median (min-max)" of the numbers on stdin, with printf format $1.
med() {
	sort -g | awk -v f="$1" '{ v[NR] = $1 } END {
		if (NR == 0) { print "n/a"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		if (NR == 1) printf f "\n", m
		else printf f " (" f "–" f ")\n", m, v[1], v[NR]
	}'
}
# sel FILTER: the values FILTER (jq, on the successful run lines) yields.
sel() { jq -r "select(.kind == \"run\" and .exit == 0) | $1" "$results"; }

{
	echo "Measured $date_start UTC, commit $(git describe --always --dirty 2>/dev/null || echo unknown)${BIN:+, binary given by BIN}," \
		"nproc $(nproc), load average $load_start at start, $load_end at end."
	echo "Each figure: median of $RUNS rounds (min–max); one producer, one partition, acks=all."
	echo
	echo "Placement: brokers and ZooKeeper on CPU $BROKER_CPUS, the load generator on CPU $CLIENT_CPUS." \
		"\"Broker CPUs busy\": the brokers' CPU seconds (all three for RF 3) over the run's seconds," \
		"as a share of the $broker_ncpu CPU(s) they may use."
	echo
	echo "| records | RF 1 MB/s | RF 3 MB/s | RF 3 / RF 1 | RF 1 produce p99 ms | RF 3 produce p99 ms | broker CPUs busy RF 1 | RF 3 |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	for size in $SIZES; do
		q="select(.workload == \"produce\" and .size == $size)"
		ratio=$(for round in $(seq "$RUNS"); do
			a=$(sel "$q | select(.target == \"rf1\" and .round == $round) | .result.mb_per_sec")
			c=$(sel "$q | select(.target == \"rf3\" and .round == $round) | .result.mb_per_sec")
			# Full precision: rounding here and again in med turned 0.3946 into "0.40x".
			if [ -n "$a" ] && [ -n "$c" ]; then echo "$c $a" | awk '{ printf "%.6f\n", $1 / $2 }'; fi
		done | med "%.2fx")
		printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$((size / 1024)) KiB" \
			"$(sel "$q | select(.target == \"rf1\") | .result.mb_per_sec" | med %.0f)" \
			"$(sel "$q | select(.target == \"rf3\") | .result.mb_per_sec" | med %.0f)" "$ratio" \
			"$(sel "$q | select(.target == \"rf1\") | .result.produce_latency_ms.p99" | med %.1f)" \
			"$(sel "$q | select(.target == \"rf3\") | .result.produce_latency_ms.p99" | med %.1f)" \
			"$(sel "$q | select(.target == \"rf1\") | 100 * ([.brokers[].cpu_s] | add) / .result.seconds / $broker_ncpu" | med %.0f%%)" \
			"$(sel "$q | select(.target == \"rf3\") | 100 * ([.brokers[].cpu_s] | add) / .result.seconds / $broker_ncpu" | med %.0f%%)"
	done
	[ "$E2E_SECS" = 0 ] || {
	echo
	echo "End-to-end latency (produce to consume, ms) at $E2E_RATE records/s of 1 KiB for ${E2E_SECS} s, linger 0:"
	echo
	echo "| topic | p50 | p99 | p99.9 | records consumed / acked |"
	echo "|---|---:|---:|---:|---:|"
	for target in rf1 rf3; do
		q="select(.workload == \"e2e\" and .target == \"$target\") | .result"
		label="RF 1 (single node)"
		[ "$target" = rf3 ] && label="RF 3, min.insync.replicas=2"
		printf '| %s | %s | %s | %s | %s |\n' "$label" \
			"$(sel "$q | .e2e_latency_ms.p50" | med %.2f)" "$(sel "$q | .e2e_latency_ms.p99" | med %.2f)" \
			"$(sel "$q | .e2e_latency_ms.p99_9" | med %.2f)" \
			"$(sel "$q | \"\(.consumed)/\(.records)\"" | paste -sd' ')"
	done
	}
	echo
	echo "Broker CPU (utime+stime) per GB acknowledged, seconds; the cluster's brokers by their role for the topic:"
	echo
	echo "| workload | single node | leader | follower (each) | cluster total | total / single |"
	echo "|---|---:|---:|---:|---:|---:|"
	wls=()
	for size in $SIZES; do wls+=("produce $size"); done
	[ "$E2E_SECS" = 0 ] || wls+=("e2e 1024")
	# per_gb ROLE EXPR FMT: the median (min–max) per GB acknowledged of EXPR,
	# a jq expression on one broker's entry, for the single node (ROLE
	# single), the cluster's leader or each of its followers, in the
	# workload $q selects.
	per_gb() {
		local per="(1e9 / .result.bytes)"
		case $1 in
		single) sel "$q | select(.target == \"rf1\") | $per as \$k | .brokers[0] | ($2) * \$k" ;;
		*) sel "$q | select(.target == \"rf3\") | $per as \$k | .brokers[] | select(.role == \"$1\") | ($2) * \$k" ;;
		esac | med "$3"
	}
	# wl_label WORKLOAD SIZE: a workload's row name.
	wl_label() {
		if [ "$1" = e2e ]; then echo "e2e $E2E_RATE/s"; else echo "produce $(($2 / 1024)) KiB"; fi
	}
	for wl in "${wls[@]}"; do
		# shellcheck disable=SC2086
		set -- $wl
		q="select(.workload == \"$1\" and .size == $2)"
		per="(1e9 / .result.bytes)"
		tot=$(sel "$q | select(.target == \"rf3\") | ([.brokers[].cpu_s] | add) * $per" | med %.2f)
		rel=$(for round in $(seq "$RUNS"); do
			a=$(sel "$q | select(.target == \"rf1\" and .round == $round) | .brokers[0].cpu_s * $per")
			c=$(sel "$q | select(.target == \"rf3\" and .round == $round) | ([.brokers[].cpu_s] | add) * $per")
			if [ -n "$a" ] && [ -n "$c" ]; then echo "$c $a" | awk '$2 > 0 { printf "%.6f\n", $1 / $2 }'; fi
		done | med "%.1fx")
		printf '| %s | %s | %s | %s | %s | %s |\n' "$(wl_label "$1" "$2")" "$(per_gb single .cpu_s %.2f)" \
			"$(per_gb leader .cpu_s %.2f)" "$(per_gb follower .cpu_s %.2f)" "$tot" "$rel"
	done
	echo
	echo "Per GB acknowledged (from each broker's /metrics: go_memstats_alloc_bytes_total and" \
		"kafka_network_requestmetrics_requests_total): MB the Go heap allocated, and the leader's" \
		"Produce and follower Fetch requests:"
	echo
	echo "| workload | single node alloc MB | leader alloc MB | follower alloc MB (each) | leader Produce requests | leader follower Fetches |"
	echo "|---|---:|---:|---:|---:|---:|"
	for wl in "${wls[@]}"; do
		# shellcheck disable=SC2086
		set -- $wl
		q="select(.workload == \"$1\" and .size == $2)"
		printf '| %s | %s | %s | %s | %s | %s |\n' "$(wl_label "$1" "$2")" \
			"$(per_gb single '.alloc_bytes / 1e6' %.0f)" "$(per_gb leader '.alloc_bytes / 1e6' %.0f)" \
			"$(per_gb follower '.alloc_bytes / 1e6' %.0f)" \
			"$(per_gb leader .produce_requests %.0f)" "$(per_gb leader .follower_fetches %.0f)"
	done
	echo
	echo "System calls per GB acknowledged (/proc/PID/io syscr and syscw: read-like and write-like calls," \
		"sendfile included, whatever their size), read / write:"
	echo
	echo "| workload | single node | leader | follower (each) |"
	echo "|---|---:|---:|---:|"
	for wl in "${wls[@]}"; do
		# shellcheck disable=SC2086
		set -- $wl
		q="select(.workload == \"$1\" and .size == $2)"
		printf '| %s | %s / %s | %s / %s | %s / %s |\n' "$(wl_label "$1" "$2")" \
			"$(per_gb single .syscr %.0f)" "$(per_gb single .syscw %.0f)" \
			"$(per_gb leader .syscr %.0f)" "$(per_gb leader .syscw %.0f)" \
			"$(per_gb follower .syscr %.0f)" "$(per_gb follower .syscw %.0f)"
	done
	if [ "$STRACE_REC" != 0 ]; then
		echo
		echo "Follower fetch efficiency: syscalls of the leader and of one follower (\`strace -f -p\`) while" \
			"$STRACE_REC records of 1 KiB were produced to an RF 3 topic ($(jq -r 'select(.kind == "syscalls") | .produced_bytes' "$results" | head -1 |
				awk '{ printf "%.1f MB", $1 / 1e6 }') acknowledged); MB = returned bytes / 10^6:"
		echo
		echo "| broker | sendfile calls | sendfile MB | write+writev+pwrite calls | MB | read+readv calls | MB |"
		echo "|---|---:|---:|---:|---:|---:|---:|"
		jq -r 'select(.kind == "syscalls") |
			[.role,
			 (.calls.sendfile.calls // 0), ((.calls.sendfile.bytes // 0) / 1e6),
			 ([.calls.write, .calls.writev, .calls.pwrite64, .calls.pwritev, .calls.sendto, .calls.sendmsg | .calls? // 0] | add),
			 ([.calls.write, .calls.writev, .calls.pwrite64, .calls.pwritev, .calls.sendto, .calls.sendmsg | .bytes? // 0] | add / 1e6),
			 ([.calls.read, .calls.readv, .calls.recvfrom, .calls.recvmsg | .calls? // 0] | add),
			 ([.calls.read, .calls.readv, .calls.recvfrom, .calls.recvmsg | .bytes? // 0] | add / 1e6)] |
			"| \(.[0]) | \(.[1]) | \(.[2] * 10 | round / 10) | \(.[3]) | \(.[4] * 10 | round / 10) | \(.[5]) | \(.[6] * 10 | round / 10) |"' "$results"
	fi
	echo
	echo "Command: \`BROKER_CPUS=$BROKER_CPUS CLIENT_CPUS=$CLIENT_CPUS RUNS=$RUNS SIZES='$SIZES' WARM_MB=$WARM_MB REC_1K=$REC_1K REC_16K=$REC_16K E2E_SECS=$E2E_SECS E2E_RATE=$E2E_RATE" \
		"STRACE_REC=$STRACE_REC${EXTRA:+ EXTRA='$EXTRA'} scripts/bench-replication.sh\`"
} >"$OUT_MD"
log "wrote ${OUT_MD}${OUT_JSON:+ and $OUT_JSON} ($(date -u '+%H:%M') UTC, started $date_start)"
