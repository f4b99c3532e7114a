#!/usr/bin/env bash
# bench-storage.sh measures the storage backends against this machine's own
# buffered sequential write bandwidth, in one run, and prints a markdown
# table (the one kept in BENCHMARKS.md).
#
#   scripts/bench-storage.sh            # BENCHTIME=200ms COUNT=3
#   BENCHTIME=1s COUNT=5 scripts/bench-storage.sh
#
# Baseline: dd if=/dev/zero bs=1M count=4096 (4 GiB, no fsync: page cache
# plus writeback, which is also what an append without fsync does) into a
# temp dir on the repository's filesystem (not /tmp when /tmp is tmpfs).
# The benchmarks' data dirs (b.TempDir) go to the same filesystem via
# TMPDIR. Every temp file is removed at exit.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
BENCHTIME=${BENCHTIME:-200ms}
COUNT=${COUNT:-3}
DD_COUNT=${DD_COUNT:-4096}
GO=${GO:-go}

work=$(mktemp -d "$repo/.bench-storage.XXXXXX")
trap 'rm -rf "$work"' EXIT
fstype=$(df --output=fstype "$work" | tail -1 | tr -d ' ')
if [ "$fstype" = tmpfs ]; then
	echo "bench-storage: $work is on tmpfs; the baseline would measure memory, not disk" >&2
	exit 1
fi

# Baseline: dd's summary line is "N bytes (...) copied, S s, R MB/s".
# Compute MB/s (10^6 bytes/s, as go test reports) from N and S.
dd_line=$(LC_ALL=C dd if=/dev/zero of="$work/dd.bin" bs=1M count="$DD_COUNT" 2>&1 | tail -1)
rm -f "$work/dd.bin"
dd_mbs=$(echo "$dd_line" | awk '{
	for (i = 1; i <= NF; i++) if ($i == "s," || $i == "s") secs = $(i-1)
	printf "%.0f", $1 / secs / 1e6
}')
echo "bench-storage: dd: $dd_line" >&2

# Engine benchmarks, data dirs on the same filesystem.
raw="$work/bench.txt"
TMPDIR="$work" GOFLAGS=-buildvcs=false "$GO" test -run '^$' -bench 'BenchmarkEngine' \
	-benchtime "$BENCHTIME" -count "$COUNT" "$repo/bench/" | tee "$raw" >&2

echo
echo "Buffered sequential write baseline (dd bs=1M count=$DD_COUNT): **$dd_mbs MB/s** (filesystem $fstype)"
echo
echo "| benchmark | backend | batch | MB/s median (min–max) | allocs/op | vs dd |"
echo "|---|---|---|---|---|---|"
# Benchmark lines: name-P  N  ns/op  MB/s-value MB/s  B/op  allocs/op.
awk -v dd="$dd_mbs" '
/^BenchmarkEngine/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	mbs = ""; allocs = ""
	for (i = 2; i <= NF; i++) {
		if ($i == "MB/s") mbs = $(i-1)
		if ($i == "allocs/op") allocs = $(i-1)
	}
	if (!(name in n)) order[++k] = name
	n[name]++; v[name, n[name]] = mbs; a[name, n[name]] = allocs
}
END {
	for (j = 1; j <= k; j++) {
		name = order[j]; c = n[name]
		# sort the c values (insertion sort; c is small)
		for (x = 1; x <= c; x++) s[x] = v[name, x] + 0
		for (x = 2; x <= c; x++) { t = s[x]; y = x - 1; while (y >= 1 && s[y] > t) { s[y+1] = s[y]; y-- } s[y+1] = t }
		med = (c % 2) ? s[(c+1)/2] : (s[c/2] + s[c/2+1]) / 2
		for (x = 1; x <= c; x++) al[x] = a[name, x] + 0
		for (x = 2; x <= c; x++) { t = al[x]; y = x - 1; while (y >= 1 && al[y] > t) { al[y+1] = al[y]; y-- } al[y+1] = t }
		amed = al[int((c+1)/2)]
		split(name, parts, "/")
		kind = parts[1]; sub(/^BenchmarkEngine/, "", kind)
		backend = parts[2]; sub(/^backend=/, "", backend)
		batch = (3 in parts) ? parts[3] : "16KiB x64 reads"; sub(/^batch=/, "", batch)
		ratio = (kind == "Append" && dd > 0) ? sprintf("%.0f%%", 100 * med / dd) : "n/a"
		printf "| %s | %s | %s | %.0f (%.0f–%.0f) | %s | %s |\n", kind, backend, batch, med, s[1], s[c], amed, ratio
	}
}' "$raw"
echo
echo "Command: BENCHTIME=$BENCHTIME COUNT=$COUNT scripts/bench-storage.sh; $(date -u +%Y-%m-%dT%H:%MZ); nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
