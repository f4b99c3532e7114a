#!/usr/bin/env bash
# bench-transactions.sh measures what transactions cost: `sluice perf
# produce` idempotent against transactional with a commit every 100 ms, and
# `sluice perf consume` of the transactional topic with read_committed
# against read_uncommitted, in one run against one single-node broker. It
# prints a Markdown table for BENCHMARKS.md ("Transactions").
#
#   scripts/bench-transactions.sh                     # about 1 minute
#   RUNS=1 DURATION=2s scripts/bench-transactions.sh  # a quick smoke run
#
# Method: the broker (`sluice serve`, segment backend, defaults) pinned to
# CPU 0 with `taskset -c 0`, the load generator to CPU 1, when taskset and
# 2 CPUs are there. Each round produces for DURATION (RECORD_SIZE-byte
# values, acks=all, idempotent, linger 5 ms, one producer, PARTITIONS
# partitions) into a new topic without transactions, then into another
# with --transactional-id and --transaction-ms TXN_MS (each commit flushes
# the producer and waits for EndTxn, as a transactional application does);
# then reads the transactional topic from its start to its end twice, with
# read_committed and read_uncommitted, the order alternating between
# rounds. RUNS rounds, medians with min–max. Files live under one mktemp -d
# in the repository, removed at exit; the broker started here is stopped
# by its pid.
set -euo pipefail

RUNS=${RUNS:-3}
DURATION=${DURATION:-5s}
RECORD_SIZE=${RECORD_SIZE:-1024}
PARTITIONS=${PARTITIONS:-3}
TXN_MS=${TXN_MS:-100}
PORT=${PORT:-29193}
PERF_TIMEOUT=${PERF_TIMEOUT:-120}

# shellcheck source=bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
bench_setup transactions
bench_serve "127.0.0.1:$PORT" --set "listeners=PLAINTEXT://127.0.0.1:$PORT" --set "log.dirs=$work/data" --set "http.listeners=" --log-json

perf() { # perf MODE ARGS...: one `sluice perf` run, its JSON summary on stdout
	timeout "$PERF_TIMEOUT" "${pin_client[@]}" "$bin" perf "$@" --bootstrap-server "127.0.0.1:$PORT" --json --quiet
}

results=$work/results.jsonl
row() { # row NAME RUN < summary: one result line
	jq -c --arg n "$1" --argjson r "$2" \
		'{name: $n, run: $r, mb_per_sec, records_per_sec, records, errors, stopped_by, transactions: (.transactions // 0), seconds,
		  p99: (.produce_latency_ms.p99 // null), commit_p50: (.commit_latency_ms.p50 // null)}' | tee -a "$results" >&2
}
for run in $(seq "$RUNS"); do
	common=(--record-size "$RECORD_SIZE" --partitions "$PARTITIONS" --acks all --duration "$DURATION")
	perf produce --topic "bench-idem-$run" "${common[@]}" | row idempotent "$run"
	perf produce --topic "bench-txn-$run" "${common[@]}" --transactional-id "bench-txn-$run" --transaction-ms "$TXN_MS" |
		row transactional "$run"
	order=(read_committed read_uncommitted)
	[ $((run % 2)) = 0 ] && order=(read_uncommitted read_committed)
	for iso in "${order[@]}"; do
		perf consume --topic "bench-txn-$run" --isolation "$iso" | row "$iso" "$run"
	done
	for t in "bench-idem-$run" "bench-txn-$run"; do
		"$bin" topic delete "$t" --bootstrap-server "127.0.0.1:$PORT" >/dev/null
	done
	sleep 1
done

echo
echo "| measurement | MB/s median (min–max) | records/s median | vs baseline | notes (medians) |"
echo "|---|---|---|---|---|"
jq -rs --arg ms "$TXN_MS" '
	def med: sort | .[length / 2 | floor];
	def r1: . * 10 | round / 10;
	group_by(.name) | map({key: .[0].name, value: {mb: ([.[].mb_per_sec] | med), lo: ([.[].mb_per_sec] | min), hi: ([.[].mb_per_sec] | max),
		rps: ([.[].records_per_sec] | med), errors: ([.[].errors] | add), records: ([.[].records] | med),
		tps: ([.[] | .transactions / .seconds] | med), p99: ([.[].p99] | med), commit: ([.[].commit_p50] | med)}}) | from_entries as $s |
	def line($n; $lab; $base; note): $s[$n] as $x |
		"| \($lab) | \($x.mb | r1) (\($x.lo | r1)–\($x.hi | r1)) | \($x.rps | round) | \(if $base then "\($x.mb / $s[$base].mb * 100 | round)% of \($base)" else "baseline" end) | \($x | note) errors \($x.errors) |";
	line("idempotent"; "produce, idempotent"; null; "produce p99 \(.p99 | r1) ms;"),
	line("transactional"; "produce, transactional, commit every \($ms) ms"; "idempotent";
		"produce p99 \(.p99 | r1) ms; \(.tps | r1) commits/s, commit (flush + EndTxn) p50 \(.commit | r1) ms;"),
	line("read_uncommitted"; "consume transactional topic, read_uncommitted"; null; "\(.records) records read;"),
	line("read_committed"; "consume transactional topic, read_committed"; "read_uncommitted"; "\(.records) records read;")
' "$results"
