#!/usr/bin/env bash
# bench-compaction.sh measures what log compaction costs a producer: `sluice
# perf produce` MB/s into a compacted topic while the cleaner runs on it,
# against a delete-policy topic, in one run against one single-node broker.
# It prints a Markdown table for BENCHMARKS.md ("Compaction").
#
#   scripts/bench-compaction.sh                     # about 1 minute
#   RUNS=1 DURATION=2s scripts/bench-compaction.sh  # a quick smoke run
#
# Method: the broker (`sluice serve`, segment backend, default cleaner:
# 1 thread, 128 MiB dedupe buffer; log.cleaner.backoff.ms=100 so that it
# starts on a rolled segment at once) pinned to CPU 0 with `taskset -c 0`,
# the load generator to CPU 1, when taskset and 2 CPUs are there. Each round
# produces for DURATION (256-byte values, 8-byte keys cycling over KEYS
# values, acks=all, one partition) into a delete topic, then into a
# compact topic (min.cleanable.dirty.ratio=0.1), each topic with
# segment.bytes=8 MiB, so the compacted one rolls and is cleaned while it
# is written; each topic is deleted after its run, so that only the
# compacted run has the cleaner working; RUNS rounds, medians with min–max. The cleaner's rounds and
# MB read during each run come from the broker log; the broker's peak RSS
# (VmHWM) is read at the end. Files live under one mktemp -d in the
# repository, removed at exit; the broker started here is stopped by its
# pid.
set -euo pipefail

RUNS=${RUNS:-3}
DURATION=${DURATION:-8s}
KEYS=${KEYS:-100000}
PORT=${PORT:-29192}
PERF_TIMEOUT=${PERF_TIMEOUT:-120}

# shellcheck source=bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
bench_setup compaction
bench_serve "127.0.0.1:$PORT" --set "listeners=PLAINTEXT://127.0.0.1:$PORT" --set "log.dirs=$work/data" \
	--set "http.listeners=" --set log.cleaner.backoff.ms=100 --log-json

cleaned_mb() { # total MB the cleaner read so far, and its rounds
	grep '"cleaner: cleaned log"' "$work/broker.log" | jq -s '[length, ([.[].readMB] | add // 0)] | @tsv' -r
}

results=$work/results.jsonl
for run in $(seq "$RUNS"); do
	for policy in delete compact; do
		topic=bench-$policy-$run
		cfg=(--topic-config segment.bytes=8388608 --topic-config "cleanup.policy=$policy")
		[ "$policy" = compact ] && cfg+=(--topic-config min.cleanable.dirty.ratio=0.1)
		read -r r0 m0 < <(cleaned_mb)
		timeout "$PERF_TIMEOUT" "${pin_client[@]}" "$bin" perf produce --bootstrap-server "127.0.0.1:$PORT" \
			--topic "$topic" "${cfg[@]}" --keys "$KEYS" --record-size 256 --acks all --duration "$DURATION" \
			--json --quiet >"$work/out.json"
		read -r r1 m1 < <(cleaned_mb)
		# Gone before the next run, so that its cleaning does not run
		# into the next run's measurement.
		"$bin" topic delete "$topic" --bootstrap-server "127.0.0.1:$PORT" >/dev/null
		sleep 1
		jq -c --arg p "$policy" --argjson r "$run" --argjson rounds "$((r1 - r0))" --argjson mb "$(echo "$m1 - $m0" | bc)" \
			'{policy: $p, run: $r, mb_per_sec, records_per_sec, errors, cleaner_rounds: $rounds, cleaner_read_mb: $mb}' \
			"$work/out.json" | tee -a "$results" >&2
	done
done
hwm=$(awk '/VmHWM/ {printf "%d", $2 / 1024}' "/proc/$broker_pid/status")

echo
echo "| topic | produce MB/s median (min–max) | records/s median | vs delete | cleaner rounds during the runs | MB the cleaner read |"
echo "|---|---|---|---|---|---|"
jq -rs '
	def med: sort | .[length / 2 | floor];
	group_by(.policy) | map({key: .[0].policy, value: {mb: ([.[].mb_per_sec] | med), lo: ([.[].mb_per_sec] | min), hi: ([.[].mb_per_sec] | max),
		rps: ([.[].records_per_sec] | med), rounds: ([.[].cleaner_rounds] | add), cmb: ([.[].cleaner_read_mb] | add)}}) | from_entries as $s |
	["delete", "compact"][] as $p | $s[$p] as $x |
	"| \($p) | \($x.mb * 10 | round / 10) (\($x.lo * 10 | round / 10)–\($x.hi * 10 | round / 10)) | \($x.rps | round) | \(($x.mb / $s.delete.mb * 100 | round))% | \($x.rounds) | \($x.cmb | round) |"
' "$results"
echo
echo "Broker peak RSS (VmHWM): $hwm MiB"
