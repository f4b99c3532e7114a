package enginetest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluice/sluice/engine"
)

func truncateCases() []testCase {
	return []testCase{
		{"Truncate", testTruncate},
		{"TruncateAcrossSegments", testTruncateAcrossSegments},
		{"TruncateBelowStart", testTruncateBelowStart},
		{"DeleteBefore", testDeleteBefore},
		{"DeleteBeforeCutsEpochs", testDeleteBeforeCutsEpochs},
	}
}

// testTruncate: Truncate on a batch boundary drops everything from there,
// cuts the epoch history, and the next append continues at that offset.
// Kafka (UnifiedLog.truncateTo): a target at or past the end is a no-op.
func testTruncate(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	var m model
	fill(t, l, &m, 2, 2, 20, baseTs, 10, 1) // 0..3 epoch 1
	fill(t, l, &m, 1, 2, 20, baseTs, 10, 3) // 4..5 epoch 3
	fill(t, l, &m, 1, 2, 20, baseTs, 10, 4) // 6..7 epoch 4

	noErr(t, "Truncate(100) past the end", l.Truncate(100))
	if l.EndOffset() != 8 {
		t.Fatalf("Truncate past the end changed EndOffset to %d, want 8 (Kafka: no-op)", l.EndOffset())
	}
	noErr(t, "Truncate(EndOffset)", l.Truncate(8))
	if l.EndOffset() != 8 {
		t.Fatalf("Truncate(EndOffset) changed EndOffset to %d", l.EndOffset())
	}

	noErr(t, "Truncate(4)", l.Truncate(4))
	m.truncate(4)
	if l.EndOffset() != 4 {
		t.Fatalf("EndOffset after Truncate(4) = %d", l.EndOffset())
	}
	if got, want := l.LeaderEpochs(), []engine.EpochEntry{ep(1, 0)}; !epochsEqual(got, want) {
		t.Fatalf("LeaderEpochs after Truncate(4) = %v, want %v", got, want)
	}
	if l.Size() != m.size() {
		t.Fatalf("Size after Truncate %d, want %d", l.Size(), m.size())
	}
	if _, bs := mustRead(t, l, 4, 1<<20, -1); len(bs) != 0 {
		t.Fatalf("Read(4) after Truncate(4) returned %d batches", len(bs))
	}
	_, err := read(t, l, 6, 1<<20, -1)
	wantErr(t, "Read(6) after Truncate(4)", err, engine.ErrOffsetOutOfRange)
	if got := scan(t, l, 0); !bytes.Equal(got, m.from(0)) {
		t.Fatalf("bytes after Truncate differ")
	}

	info := appendOK(t, l, &m, MakeBatch(3, baseTs+99, 20, 9), leader(5))
	if info.FirstOffset != 4 {
		t.Fatalf("append after Truncate(4) at %d", info.FirstOffset)
	}
	want := []engine.EpochEntry{ep(1, 0), ep(5, 4)}
	if got := l.LeaderEpochs(); !epochsEqual(got, want) {
		t.Fatalf("LeaderEpochs after append %v, want %v", got, want)
	}
	h.reopen()
	l = h.openID(defaultID, engine.LogConfig{})
	if l.EndOffset() != 7 || !epochsEqual(l.LeaderEpochs(), want) {
		t.Fatalf("after reopen: end %d epochs %v; want 7 %v", l.EndOffset(), l.LeaderEpochs(), want)
	}
	if got := scan(t, l, 0); !bytes.Equal(got, m.from(0)) {
		t.Fatalf("bytes after Truncate and reopen differ")
	}

	noErr(t, "Truncate(0)", l.Truncate(0))
	if l.EndOffset() != 0 || l.Size() != 0 || len(l.LeaderEpochs()) != 0 {
		t.Fatalf("after Truncate(0): end %d size %d epochs %v; want empty", l.EndOffset(), l.Size(), l.LeaderEpochs())
	}
	if info := appendOK(t, l, nil, MakeBatch(1, baseTs, 5, 1), leader(6)); info.FirstOffset != 0 {
		t.Fatalf("append after Truncate(0) at %d", info.FirstOffset)
	}
}

// testTruncateAcrossSegments: truncating into an older segment removes
// the newer segments whole and the tail of the one that holds the offset.
func testTruncateAcrossSegments(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1024}
	l := h.create(cfg)
	var m model
	fill(t, l, &m, 30, 2, 100, baseTs, 10, 0) // 0..59, ~4 batches a segment
	for _, cut := range []int64{50, 22, 6} {
		t.Run(fmt.Sprintf("to=%d", cut), func(t *testing.T) {
			noErr(t, "Truncate", l.Truncate(cut))
			m.truncate(cut)
			if l.EndOffset() != cut || l.Size() != m.size() {
				t.Fatalf("end %d size %d, want %d %d", l.EndOffset(), l.Size(), cut, m.size())
			}
			if got := scan(t, l, 0); !bytes.Equal(got, m.from(0)) {
				t.Fatalf("bytes differ after Truncate(%d)", cut)
			}
			fill(t, l, &m, 3, 2, 100, baseTs, 10, 0)
			if got := scan(t, l, 0); !bytes.Equal(got, m.from(0)) {
				t.Fatalf("bytes differ after appending past Truncate(%d)", cut)
			}
		})
	}
	h.reopen()
	l = h.openID(defaultID, cfg)
	if got := scan(t, l, 0); !bytes.Equal(got, m.from(0)) {
		t.Fatalf("bytes differ after reopen")
	}
}

// testTruncateBelowStart: Truncate below a start offset that DeleteBefore
// moved up restarts the log empty at the offset with no epoch history
// (Kafka: UnifiedLog.truncateTo calls truncateFullyAndStartAt), which a
// reopen keeps; a negative offset is refused and changes nothing.
func testTruncateBelowStart(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1024}
	l := h.create(cfg)
	fill(t, l, nil, 5, 2, 100, baseTs, 10, 1) // 0..9 epoch 1
	fill(t, l, nil, 5, 2, 100, baseTs, 10, 3) // 10..19 epoch 3
	noErr(t, "DeleteBefore(6)", l.DeleteBefore(6))

	wantErr(t, "Truncate(-1)", l.Truncate(-1), engine.ErrOffsetOutOfRange)
	if l.StartOffset() != 6 || l.EndOffset() != 20 {
		t.Fatalf("refused Truncate(-1) changed start/end to %d/%d", l.StartOffset(), l.EndOffset())
	}
	noErr(t, "Truncate(3)", l.Truncate(3))
	if l.StartOffset() != 3 || l.EndOffset() != 3 || l.Size() != 0 || len(l.LeaderEpochs()) != 0 {
		t.Fatalf("after Truncate(3) below start 6: start %d end %d size %d epochs %v; want 3 3 0 none",
			l.StartOffset(), l.EndOffset(), l.Size(), l.LeaderEpochs())
	}
	fill(t, l, nil, 2, 2, 100, baseTs, 10, 4) // 3..6 epoch 4
	want := []engine.EpochEntry{ep(4, 3)}
	if got := l.LeaderEpochs(); !epochsEqual(got, want) {
		t.Fatalf("epochs after Truncate(3) and appends: %v, want %v", got, want)
	}
	h.reopen()
	l = h.openID(defaultID, cfg)
	if l.StartOffset() != 3 || l.EndOffset() != 7 || !epochsEqual(l.LeaderEpochs(), want) {
		t.Fatalf("after reopen: start %d end %d epochs %v; want 3 7 %v", l.StartOffset(), l.EndOffset(), l.LeaderEpochs(), want)
	}
}

// testDeleteBefore: DeleteBefore advances StartOffset (even into the middle
// of a batch, whose batch stays readable from there), below it reads are
// out of range, it never moves back, past the end is ErrOffsetOutOfRange,
// and the start offset survives a clean reopen (Kafka keeps it in
// log-start-offset-checkpoint).
func testDeleteBefore(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	var m model
	fill(t, l, &m, 5, 2, 20, baseTs, 10, 0) // 0..9
	noErr(t, "DeleteBefore(3)", l.DeleteBefore(3))
	if l.StartOffset() != 3 {
		t.Fatalf("StartOffset %d after DeleteBefore(3)", l.StartOffset())
	}
	if _, bs := mustRead(t, l, 3, 1<<20, -1); bs[0].base != 2 {
		t.Fatalf("Read(3) starts at batch %d, want 2 (the batch that holds 3)", bs[0].base)
	}
	_, err := read(t, l, 2, 1<<20, -1)
	wantErr(t, "Read(2) below StartOffset", err, engine.ErrOffsetOutOfRange)
	noErr(t, "DeleteBefore(1) below start", l.DeleteBefore(1))
	if l.StartOffset() != 3 {
		t.Fatalf("DeleteBefore below the start moved StartOffset to %d", l.StartOffset())
	}
	wantErr(t, "DeleteBefore(11) past the end", l.DeleteBefore(11), engine.ErrOffsetOutOfRange)
	if l.StartOffset() != 3 || l.EndOffset() != 10 {
		t.Fatalf("failed DeleteBefore changed start/end to %d/%d", l.StartOffset(), l.EndOffset())
	}

	h.reopen()
	l = h.openID(defaultID, engine.LogConfig{})
	if l.StartOffset() != 3 || l.EndOffset() != 10 {
		t.Fatalf("after reopen start %d end %d, want 3 10", l.StartOffset(), l.EndOffset())
	}

	noErr(t, "DeleteBefore(EndOffset)", l.DeleteBefore(10))
	if l.StartOffset() != 10 || l.EndOffset() != 10 {
		t.Fatalf("after DeleteBefore(end): start %d end %d, want 10 10", l.StartOffset(), l.EndOffset())
	}
	if _, bs := mustRead(t, l, 10, 1<<20, -1); len(bs) != 0 {
		t.Fatalf("Read(10) on an emptied log returned %d batches", len(bs))
	}
	if info := appendOK(t, l, &m, MakeBatch(2, baseTs, 5, 1), leader(0)); info.FirstOffset != 10 {
		t.Fatalf("append after DeleteBefore(end) at %d, want 10", info.FirstOffset)
	}
	h.reopen()
	l = h.openID(defaultID, engine.LogConfig{})
	if l.StartOffset() != 10 || l.EndOffset() != 12 {
		t.Fatalf("after second reopen start %d end %d, want 10 12", l.StartOffset(), l.EndOffset())
	}
	if got := scan(t, l, 10); !bytes.Equal(got, m.from(10)) {
		t.Fatalf("bytes from 10 differ")
	}
}

// testDeleteBeforeCutsEpochs: Kafka (UnifiedLog.maybeIncrementLogStartOffset
// calls leaderEpochCache.truncateFromStart): when the start offset moves,
// the epoch history starts there too.
func testDeleteBeforeCutsEpochs(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	fill(t, l, nil, 2, 2, 20, baseTs, 10, 1) // 0..3
	fill(t, l, nil, 2, 2, 20, baseTs, 10, 2) // 4..7
	fill(t, l, nil, 1, 2, 20, baseTs, 10, 3) // 8..9
	noErr(t, "DeleteBefore(5)", l.DeleteBefore(5))
	want := []engine.EpochEntry{ep(2, 5), ep(3, 8)}
	if got := l.LeaderEpochs(); !epochsEqual(got, want) {
		t.Fatalf("LeaderEpochs after DeleteBefore(5) = %v, want %v", got, want)
	}
}
