#!/usr/bin/env bash
# bench-security.sh measures what TLS and SASL cost: `sluice perf produce`
# and `sluice perf consume` MB/s over PLAINTEXT, SSL and SASL_SSL
# (SCRAM-SHA-512), in one run against one single-node broker with the three
# listeners. It prints a Markdown table for BENCHMARKS.md ("TLS and SASL").
#
#   scripts/bench-security.sh                    # about 2 minutes
#   RUNS=1 DURATION=1s scripts/bench-security.sh  # a quick smoke run
#   RAW=/tmp/sec.jsonl scripts/bench-security.sh  # also keep one JSON line per run
#
# Method: certificates from `sluice cert`; the broker (`sluice serve`,
# segment backend, no authorizer: this measures transport and
# authentication, not ACL checks) pinned to CPU 0 with `taskset -c 0`, the
# load generator to CPU 1, when taskset and 2 CPUs are there. Each round runs
# produce (--duration DURATION, 1 KiB records, acks=all, one partition, a
# topic of its own) then consume of that topic from offset 0 to its high
# watermark, for each protocol in turn, so outside load on this shared
# machine hits all three alike; RUNS rounds, medians with min–max. Every
# client connects with --command-config and a librdkafka-style properties
# file. Broker CPU is utime+stime from /proc/PID/stat around each run.
# Files live under one mktemp -d in the repository, removed at exit; the
# broker started here is stopped by its pid.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

RUNS=${RUNS:-3}
DURATION=${DURATION:-5s}
PORT=${PORT:-29092} # PLAINTEXT; SSL is PORT+1, SASL_SSL PORT+2
PERF_TIMEOUT=${PERF_TIMEOUT:-120}
RAW=${RAW:-}

make -s build
bin=$repo/bin/sluice
work=$(mktemp -d "$repo/.bench-security.XXXXXX")
broker_pid=
cleanup() {
	if [ -n "$broker_pid" ]; then kill "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

pin_broker=() pin_client=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	pin_broker=(taskset -c 0) pin_client=(taskset -c 1)
fi

"$bin" cert ca --out "$work/ca" >/dev/null
"$bin" cert broker --ca "$work/ca" --hosts 127.0.0.1,localhost --out "$work/broker" >/dev/null

cat >"$work/server.properties" <<EOF
listeners=PLAINTEXT://127.0.0.1:$PORT,SSL://127.0.0.1:$((PORT + 1)),SASL_SSL://127.0.0.1:$((PORT + 2))
log.dirs=$work/data
http.listeners=
ssl.keystore.type=PEM
ssl.keystore.location=$work/broker/broker.keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$work/broker/ca.crt
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";
EOF
"${pin_broker[@]}" "$bin" serve --config "$work/server.properties" >"$work/broker.log" 2>&1 &
broker_pid=$!

cat >"$work/plaintext.properties" <<EOF
bootstrap.servers=127.0.0.1:$PORT
EOF
cat >"$work/ssl.properties" <<EOF
bootstrap.servers=127.0.0.1:$((PORT + 1))
security.protocol=SSL
ssl.ca.location=$work/broker/ca.crt
EOF
cat >"$work/admin.properties" <<EOF
bootstrap.servers=127.0.0.1:$((PORT + 2))
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.username=admin
sasl.password=admin-secret
ssl.ca.location=$work/broker/ca.crt
EOF
cat >"$work/sasl_ssl.properties" <<EOF
bootstrap.servers=127.0.0.1:$((PORT + 2))
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.username=bench
sasl.password=bench-secret
ssl.ca.location=$work/broker/ca.crt
EOF

for i in $(seq 50); do
	"$bin" topic list --command-config "$work/plaintext.properties" --timeout 1s >/dev/null 2>&1 && break
	kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log"; exit 1; }
	sleep 0.2
done
"$bin" user create bench --mechanism SCRAM-SHA-512 --password bench-secret --command-config "$work/admin.properties" >/dev/null

clk=$(getconf CLK_TCK)
broker_cpu() { awk -v t="$clk" '{printf "%.3f", ($14 + $15) / t}' "/proc/$broker_pid/stat"; }

# One untimed produce so that the first measured run does not pay for
# warming up the broker and the page cache.
"${pin_client[@]}" "$bin" perf produce --command-config "$work/plaintext.properties" --topic warmup \
	--duration 2s --quiet >/dev/null
"$bin" topic delete warmup --command-config "$work/plaintext.properties" >/dev/null

results=$work/results.jsonl
for run in $(seq "$RUNS"); do
	for proto in plaintext ssl sasl_ssl; do
		topic=bench-$proto-$run
		for mode in produce consume; do
			args=(--topic "$topic" --json --quiet --command-config "$work/$proto.properties")
			if [ "$mode" = produce ]; then args+=(--duration "$DURATION" --record-size 1024 --acks all); fi
			c0=$(broker_cpu)
			timeout "$PERF_TIMEOUT" "${pin_client[@]}" "$bin" perf "$mode" "${args[@]}" >"$work/out.json"
			c1=$(broker_cpu)
			jq -c --arg p "$proto" --argjson r "$run" --argjson cpu "$(echo "$c1 - $c0" | bc)" \
				'{protocol: $p, run: $r, mode, mb_per_sec, bytes, seconds, errors, broker_cpu_s: $cpu}' \
				"$work/out.json" | tee -a "$results" >&2
		done
		"$bin" topic delete "$topic" --command-config "$work/plaintext.properties" >/dev/null
	done
done
[ -n "$RAW" ] && cp "$results" "$RAW"

# Median (min–max) of MB/s and broker CPU s/GB per protocol and mode.
echo
echo "| protocol | produce MB/s median (min–max) | vs PLAINTEXT | broker CPU s/GB | consume MB/s median (min–max) | vs PLAINTEXT | broker CPU s/GB |"
echo "|---|---|---|---|---|---|---|"
jq -rs '
	def med: sort | .[length / 2 | floor];
	def stats(m): [.[] | select(.mode == m)] as $r |
		{mb: ([$r[].mb_per_sec] | med), lo: ([$r[].mb_per_sec] | min), hi: ([$r[].mb_per_sec] | max),
		 cpu: ([$r[] | .broker_cpu_s / .bytes * 1e9] | med)};
	group_by(.protocol) | map({key: .[0].protocol, value: {produce: stats("produce"), consume: stats("consume")}}) | from_entries as $s |
	["plaintext", "ssl", "sasl_ssl"][] as $p | $s[$p] as $x |
	def cell(m): "\($x[m].mb | round) (\($x[m].lo | round)–\($x[m].hi | round)) | \(($x[m].mb / $s.plaintext[m].mb * 100 | round))% | \($x[m].cpu * 100 | round / 100)";
	"| \({plaintext: "PLAINTEXT", ssl: "SSL", sasl_ssl: "SASL_SSL (SCRAM-SHA-512)"}[$p]) | \(cell("produce")) | \(cell("consume")) |"
' "$results"
