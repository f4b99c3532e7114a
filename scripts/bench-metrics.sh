#!/usr/bin/env bash
# bench-metrics.sh measures what the Prometheus metrics cost a producer:
# `sluice perf produce` MB/s against a broker with metrics on
# (http.listeners set, /metrics scraped every second) and against the same
# broker with metrics off (http.listeners=), in one run. It prints a
# Markdown table for BENCHMARKS.md ("Metrics").
#
#   scripts/bench-metrics.sh                     # about 1 minute
#   RUNS=1 DURATION=2s scripts/bench-metrics.sh  # a quick smoke run
#
# Method: one single-node broker (`sluice serve`, segment backend,
# defaults) per round, pinned to CPU 0 with `taskset -c 0`, the load
# generator to CPU 1, when taskset and 2 CPUs are there. Rounds alternate
# off, on, off, on, ... (RUNS of each), each on a fresh data dir: DURATION
# of 1 KiB records, acks=all, one partition. During the "on" rounds a curl
# loop scrapes http://127.0.0.1:HTTP_PORT/metrics every second (so the
# scrape cost is included) and the number of scrapes and the size of the
# last one are reported. Medians with min–max. Files live under one
# mktemp -d in the repository, removed at exit; the brokers started here
# are stopped by their pid.
set -euo pipefail

RUNS=${RUNS:-3}
DURATION=${DURATION:-8s}
PORT=${PORT:-29292}
HTTP_PORT=${HTTP_PORT:-29293}
RECORD_SIZE=${RECORD_SIZE:-1024}
PERF_TIMEOUT=${PERF_TIMEOUT:-120}

# shellcheck source=bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
bench_setup metrics
command -v curl >/dev/null || { echo "bench-metrics: needs curl" >&2; exit 1; }

scraper_pid=
stop_scraper() {
	if [ -n "$scraper_pid" ]; then kill "$scraper_pid" 2>/dev/null || true; wait "$scraper_pid" 2>/dev/null || true; fi
	scraper_pid=
}
stop_broker() {
	if [ -n "$broker_pid" ]; then kill "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
	broker_pid=
}
trap 'stop_scraper; bench_cleanup' EXIT

# broker_cpu_ticks prints the broker's user+system CPU time so far, in
# clock ticks (/proc/PID/stat fields 14 and 15): CPU per GB is steadier
# than MB/s on a shared machine.
TICKS=$(getconf CLK_TCK)
broker_cpu_ticks() { awk '{print $14 + $15}' "/proc/$broker_pid/stat"; }

results=$work/results.jsonl
for run in $(seq "$RUNS"); do
	for mode in off on; do
		data=$work/data-$mode-$run
		http=()
		if [ "$mode" = on ]; then
			http=(--set "http.listeners=http://127.0.0.1:$HTTP_PORT")
		else
			http=(--set "http.listeners=")
		fi
		bench_serve "127.0.0.1:$PORT" --set "listeners=PLAINTEXT://127.0.0.1:$PORT" --set "log.dirs=$data" "${http[@]}"
		rm -f "$work/scrapes"
		if [ "$mode" = on ]; then
			curl -sf "http://127.0.0.1:$HTTP_PORT/metrics" >/dev/null ||
				{ echo "bench-metrics: no /metrics on 127.0.0.1:$HTTP_PORT" >&2; cat "$work/broker.log" >&2; exit 1; }
			(
				while :; do
					curl -sf -o "$work/last-scrape" "http://127.0.0.1:$HTTP_PORT/metrics" && echo >>"$work/scrapes"
					sleep 1
				done
			) &
			scraper_pid=$!
		fi
		cpu0=$(broker_cpu_ticks)
		timeout "$PERF_TIMEOUT" "${pin_client[@]}" "$bin" perf produce --bootstrap-server "127.0.0.1:$PORT" \
			--topic "bench-$mode-$run" --record-size "$RECORD_SIZE" --acks all --duration "$DURATION" \
			--json --quiet >"$work/out.json"
		cpu1=$(broker_cpu_ticks)
		stop_scraper
		scrapes=0
		[ -f "$work/scrapes" ] && scrapes=$(wc -l <"$work/scrapes")
		bytes=0
		[ "$mode" = on ] && [ -f "$work/last-scrape" ] && bytes=$(wc -c <"$work/last-scrape")
		jq -c --arg m "$mode" --argjson r "$run" --argjson s "$scrapes" --argjson b "$bytes" \
			--argjson cpu "$(((cpu1 - cpu0) * 1000 / TICKS))" \
			'{metrics: $m, run: $r, mb_per_sec, records_per_sec, errors, scrapes: $s, scrape_bytes: $b,
			  broker_cpu_s_per_gb: ($cpu / 1000 / (.bytes / 1e9))}' \
			"$work/out.json" | tee -a "$results" >&2
		stop_broker
	done
done

echo
echo "| metrics | produce MB/s median (min–max) | records/s median | vs off | broker CPU s/GB median (min–max) | scrapes during the runs | /metrics size |"
echo "|---|---|---|---|---|---|---|"
jq -rs '
	def med: sort | .[length / 2 | floor];
	group_by(.metrics) | map({key: .[0].metrics, value: {mb: ([.[].mb_per_sec] | med), lo: ([.[].mb_per_sec] | min), hi: ([.[].mb_per_sec] | max),
		rps: ([.[].records_per_sec] | med), cpu: ([.[].broker_cpu_s_per_gb] | med), cpulo: ([.[].broker_cpu_s_per_gb] | min), cpuhi: ([.[].broker_cpu_s_per_gb] | max), scrapes: ([.[].scrapes] | add), bytes: ([.[].scrape_bytes] | max)}}) | from_entries as $s |
	["off", "on"][] as $m | $s[$m] as $x |
	"| \($m) | \($x.mb * 10 | round / 10) (\($x.lo * 10 | round / 10)–\($x.hi * 10 | round / 10)) | \($x.rps | round) | \(($x.mb / $s.off.mb * 100 | round))% | \($x.cpu * 100 | round / 100) (\($x.cpulo * 100 | round / 100)–\($x.cpuhi * 100 | round / 100)) | \($x.scrapes) | \(if $x.bytes > 0 then "\($x.bytes / 1024 | round) KiB" else "–" end) |"
' "$results"
