#!/usr/bin/env bash
# scale.sh runs bench/cmd/scale (issue 15) against bin/sluice: partitions
# created in steps on each backend, with RSS per partition, fds, mappings,
# Metadata and CreateTopics latency, and stop and restart times. The tool
# sets the broker's soft `ulimit -n` itself (NOFILE, default 20000).
# It prints each backend's Markdown table and appends JSON lines to
# $OUT (default scale.jsonl in the repository).
#
#   scripts/scale.sh                                   # both backends
#   BACKENDS=pebble PEBBLE_STEPS=1000,100000 scripts/scale.sh
#
# A step that fails (e.g. KAFKA_STORAGE_ERROR when the segment backend
# runs out of descriptors) is reported with its error and the run goes on
# to the stop and restart measurements at the count reached.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
GO=${GO:-go}
BACKENDS=${BACKENDS:-segment pebble}
SEGMENT_STEPS=${SEGMENT_STEPS:-1000,5000,10000,20000}
PEBBLE_STEPS=${PEBBLE_STEPS:-1000,10000,50000,100000}
NOFILE=${NOFILE:-20000}
OUT=${OUT:-$repo/scale.jsonl}

$GO build -o bin/sluice ./cmd/sluice
$GO build -o bin/scale ./bench/cmd/scale
work=$(mktemp -d "$repo/.scale.XXXXXX")
trap 'rm -rf "$work"' EXIT

status=0
for b in $BACKENDS; do
	case $b in
	segment) steps=$SEGMENT_STEPS ;;
	pebble) steps=$PEBBLE_STEPS ;;
	*) steps=$SEGMENT_STEPS ;;
	esac
	echo "== $b: steps $steps, ulimit -n $NOFILE"
	./bin/scale --bin bin/sluice --backend "$b" --steps "$steps" --nofile "$NOFILE" \
		--dir "$work" --json "$OUT" || status=1
done
exit $status
