package segment

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/engine"
)

// checkpointSeeds are checkpoint files, good and damaged, for both fuzz
// targets.
var checkpointSeeds = []string{
	"",
	"0\n0\n",
	"0\n2\na 0 5\nb-c 7 1099511627776\n",
	"0\n2\n0 0\n3 100\n",
	"0\n1\n0 0",         // no final newline
	"0\r\n1\r\n0 0\r\n", // CRLF
	"0\r\n2\r\na 0 5\r\nb-c 7 1099511627776\r\n",
	"0\r\n1\r\na 0 5",   // CRLF, no final line end
	"0\n1\r\na 0 5\r\n", // LF and CRLF mixed
	"1\n0\n",
	"0\n2\na 0 1\n",
	"0\n1\na 0 x\n",
	"0\n1\na 0 -4\n",
	"0\n1\na 0\n",
	"0\n-1\n",
	"0\n2\na 0 1\na 0 2\n", // one partition twice
	"0\n1\n+3 +4\n",
	"0\n1\n2147483648 0\n",
	"0\n1\n\xff\xfe 0 0\n",
}

// FuzzParseOffsetCheckpoint parses arbitrary bytes as an offset checkpoint
// (recovery-point-offset-checkpoint, log-start-offset-checkpoint and the
// high watermarks' replication-offset-checkpoint share the format and the
// parser). Invariants:
//
//   - it never panics, and a failure wraps errBadCheckpoint;
//   - it never returns more entries than the input can hold: past the
//     two header lines, each entry takes at least 6 bytes ("t 0 0\n", the
//     last one's newline optional);
//   - every entry it returns is writable: a topic without whitespace, a
//     partition and an offset >= 0;
//   - re-parsing is stable: writing the result and parsing that gives the
//     same entries.
func FuzzParseOffsetCheckpoint(f *testing.F) {
	for _, s := range checkpointSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseOffsetCheckpoint("fuzz", data)
		if err != nil {
			if !errors.Is(err, errBadCheckpoint) {
				t.Fatalf("error %v does not wrap errBadCheckpoint", err)
			}
			return
		}
		if max := (len(data) + 1) / 6; len(m) > max {
			t.Fatalf("%d entries from %d bytes (at most %d)", len(m), len(data), max)
		}
		for id, off := range m {
			if id.Topic == "" || strings.ContainsAny(id.Topic, " \t\r\n\v\f") || id.Partition < 0 || off < 0 {
				t.Fatalf("entry %q/%d: %d cannot be written back", id.Topic, id.Partition, off)
			}
		}
		again, err := parseOffsetCheckpoint("fuzz", appendOffsetCheckpoint(nil, m))
		if err != nil {
			t.Fatalf("re-parse of %v: %v", m, err)
		}
		if !maps.Equal(again, m) {
			t.Fatalf("re-parse gave %v, want %v", again, m)
		}
	})
}

// FuzzParseEpochCheckpoint parses arbitrary bytes as a
// leader-epoch-checkpoint. Invariants:
//
//   - it never panics, and a failure wraps errBadCheckpoint;
//   - it never returns more entries than the input can hold: past the two
//     header lines, each entry takes at least 4 bytes ("0 0\n", the last
//     one's newline optional);
//   - every entry has an epoch and a start offset >= 0;
//   - re-parsing is stable: writing the entries and parsing that gives
//     the same entries, and writing them again the same bytes;
//   - engine.NewEpochCache accepts the entries without panicking.
func FuzzParseEpochCheckpoint(f *testing.F) {
	for _, s := range checkpointSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseEpochCheckpoint("fuzz", data)
		if err != nil {
			if !errors.Is(err, errBadCheckpoint) {
				t.Fatalf("error %v does not wrap errBadCheckpoint", err)
			}
			return
		}
		if max := (len(data) + 1) / 4; len(entries) > max {
			t.Fatalf("%d entries from %d bytes (at most %d)", len(entries), len(data), max)
		}
		for _, e := range entries {
			if e.Epoch < 0 || e.StartOffset < 0 {
				t.Fatalf("entry %+v is negative", e)
			}
		}
		enc := appendEpochCheckpoint(nil, entries)
		again, err := parseEpochCheckpoint("fuzz", enc)
		if err != nil {
			t.Fatalf("re-parse of %v: %v", entries, err)
		}
		if !slices.Equal(again, entries) {
			t.Fatalf("re-parse gave %v, want %v", again, entries)
		}
		if enc2 := appendEpochCheckpoint(nil, again); !bytes.Equal(enc2, enc) {
			t.Fatalf("re-encoding changed the bytes: %q, then %q", enc, enc2)
		}
		engine.NewEpochCache(entries)
	})
}
