#!/usr/bin/env bash
# bench-report-sections.sh runs the `go test -bench` suites behind
# BENCHMARKS.md's workload sections (consumer groups, share groups, tiered
# storage, schema registry, the storage engine over many partitions) and
# rewrites each one's marked table (<!-- bench:NAME --> ... <!-- /bench:NAME -->)
# with `benchreport gobench`: a row per benchmark, the median of its runs and
# their range. `make bench-report` runs it after scripts/bench-report.sh and
# scripts/bench-report-omb.sh; the raw output stays in docs/bench-sections/.
#
#   scripts/bench-report-sections.sh                 # every section, ~25 minutes on 2 cores
#   SECTIONS="share tiered-s3" scripts/bench-report-sections.sh
#   QUICK=1 OUT=/tmp/b.md scripts/bench-report-sections.sh   # one short run each (a smoke test)
#
# The tiered-storage section starts Versity's S3 gateway and the cluster
# section ZooKeeper, as their tests do (`make test-deps` installs both).
# Every run is under `timeout`; nothing outlives the script.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
GO=${GO:-go}
OUT=${OUT:-$repo/BENCHMARKS.md}
RESULTS=${RESULTS:-$repo/docs/bench-sections}
QUICK=${QUICK:-0}
SECTIONS=${SECTIONS:-"stabilization share tiered-s3 schema-validation registry-login schema-cluster manyparts"}
RUN_TIMEOUT=${RUN_TIMEOUT:-1200}

log() { printf 'bench-report-sections: %s\n' "$*" >&2; }
work=$(mktemp -d "$repo/.bench-sections.XXXXXX")
trap 'rm -rf "$work"' EXIT
timeout 300 "$GO" build -o "$work/benchreport" ./bench/cmd/benchreport
mkdir -p "$RESULTS"

# section NAME PKG BENCH BENCHTIME COUNT QUICK_BENCHTIME COLS [go test flags...]
section() {
	local name=$1 pkg=$2 bench=$3 benchtime=$4 count=$5 quick=$6 cols=$7
	shift 7
	case " $SECTIONS " in *" $name "*) ;; *) return 0 ;; esac
	if [ "$QUICK" = 1 ]; then benchtime=$quick count=1; fi
	local cmd="go test -run '^\$' -bench '$bench' -benchtime $benchtime -count $count${*:+ $*} $pkg"
	log "$name: $cmd"
	local raw="$work/$name.txt"
	if ! (timeout "$RUN_TIMEOUT" "$GO" test -run '^$' -bench "$bench" -benchtime "$benchtime" -count "$count" "$@" "$pkg" | tee "$raw" >&2); then
		log "$name: the benchmark failed; its table is left as it was"
		return 0
	fi
	cp "$raw" "$RESULTS/$name.txt"
	local meta
	# BENCHMARKS.md and the raw results are what this script writes.
	meta="Run $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)$(git diff --quiet -- . ':!BENCHMARKS.md' ':!docs/bench-sections' || echo '+local changes'), \
$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; \
\`$cmd\`; median of $count run(s), range in brackets."
	"$work/benchreport" gobench -out "$OUT" -section "$name" -meta "$meta" -cols "$cols" \
		-strip "$(printf '%s' "$bench" | sed 's/^\^//; s/\$$//')/" "$raw"
}

section stabilization ./server/ '^BenchmarkConsumerGroupStabilization$' 1x 3 1x \
	'ms/stabilize=ms from the join until settled'
section share ./bench/ '^BenchmarkShareGroupConsume$' 100000x 3 5000x \
	'MB/s,ack-p50-ms=ack p50 ms,ack-p99-ms=ack p99 ms,B/op'
section tiered-s3 ./server/ '^BenchmarkTieredS3$' 3x 1 1x \
	'MB/s'
section schema-validation ./schemareg/ '^BenchmarkProduceSchemaValidation$' 1000000x 1 20000x \
	'ns/op=ns/record,MB/s,records/s'
section registry-login ./schemareg/ '^BenchmarkRegistryRead$' 3000x 5 300x \
	'ns/op=ns/request,allocs/op=allocs/request'
section schema-cluster ./schemareg/ '^BenchmarkClusterProduceSchemaValidation$' 1000000x 1 20000x \
	'ns/op=ns/record,MB/s,records/s'
section manyparts ./segment/ '^BenchmarkAppendManyPartitions$' 20000x 3 2000x \
	'ns/op,reopens/op,B/op,allocs/op' -benchmem
log "rewrote the marked sections of $OUT"
