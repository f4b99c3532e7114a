#!/usr/bin/env bash
# Runs every fuzz target in the tree for FUZZTIME each (`make fuzz`).
#
# The targets are found at run time, not from a list: `go test -list
# '^Fuzz'` over every package names each package's Fuzz* functions, so a
# new target runs as soon as it is committed. Each runs in its own
# `go test -fuzz` (the go tool fuzzes one target per invocation). A
# failing target does not stop the others; the script names the failures
# at the end and exits 1 (the failing input is under the package's
# testdata/fuzz/<target>/, which go test then replays as a seed).
#
# Knobs: FUZZTIME (20s; any -fuzztime value, e.g. 100x), FUZZ_MATCH (an
# extended regexp over "<import path> <target>", default every target),
# GO (go).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZ_MATCH=${FUZZ_MATCH:-.}

# go test -list prints a package's matching names, then "ok  <pkg> <time>".
listing=$("$GO" test -list '^Fuzz' ./...)
targets=$(awk '
	/^ok[ \t]/ { for (i = 0; i < n; i++) print $2, names[i]; n = 0; next }
	/^Fuzz/ { names[n++] = $1 }
' <<<"$listing" | grep -E -- "$FUZZ_MATCH" || true)
if [ -z "$targets" ]; then
	echo "fuzz: no fuzz target matches FUZZ_MATCH=$FUZZ_MATCH" >&2
	exit 1
fi

total=$(wc -l <<<"$targets")
echo "fuzz: $total targets, $FUZZTIME each"
failed=()
while read -r pkg fn; do
	echo "fuzz $fn in $pkg for $FUZZTIME"
	if ! "$GO" test -run '^$' -fuzz "^$fn\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 2s "$pkg" </dev/null; then
		failed+=("$pkg $fn")
	fi
done <<<"$targets"

if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: ${#failed[@]} of $total targets failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: $total of $total targets ran for $FUZZTIME without a failure"
