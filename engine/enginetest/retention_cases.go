package enginetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

func retentionCases() []testCase {
	return []testCase{
		{"RetentionByTime", testRetentionByTime},
		{"RetentionByBytes", testRetentionByBytes},
		{"RetentionNeverActive", testRetentionNeverActive},
		{"SetConfig", testSetConfig},
		{"RetentionCompactOnly", testRetentionCompactOnly},
		{"StartMovesCounted", testStartMovesCounted},
	}
}

// minuteLog appends 40 one-record batches of ~240 bytes, batch i stamped
// baseTs + i minutes, into a log with 1 KiB segments (about 4 batches a
// segment).
func minuteLog(t *testing.T, h *harness, cfg engine.LogConfig) (engine.Log, *model) {
	t.Helper()
	l := h.create(cfg)
	m := &model{}
	fill(t, l, m, 40, 1, 160, baseTs, int64(time.Minute/time.Millisecond), 0)
	return l, m
}

// checkStart checks the invariants after retention: StartOffset is what
// ApplyRetention returned, it is a batch boundary (whole segments go),
// reads below it are out of range and the log from it is intact.
func checkStart(t *testing.T, l engine.Log, m *model, got int64) {
	t.Helper()
	if got != l.StartOffset() {
		t.Fatalf("ApplyRetention returned %d but StartOffset is %d", got, l.StartOffset())
	}
	boundary := false
	for _, b := range m.batches {
		if record.Batch(b).BaseOffset() == got {
			boundary = true
		}
	}
	if !boundary {
		t.Fatalf("start offset %d after retention is not a batch boundary", got)
	}
	if got > 0 {
		_, err := read(t, l, got-1, 1<<20, -1)
		wantErr(t, "Read below the retained start", err, engine.ErrOffsetOutOfRange)
	}
	if data := scan(t, l, got); !bytes.Equal(data, m.from(got)) {
		t.Fatalf("data from the start offset %d differs after retention", got)
	}
	if l.Size() != int64(len(m.from(got))) {
		t.Fatalf("Size %d after retention, want %d (the batches from %d)", l.Size(), len(m.from(got)), got)
	}
}

// testRetentionByTime: segments whose newest record is older than
// retention.ms go; none that holds a record within it. Kafka
// (UnifiedLog.deleteRetentionMsBreachedSegments): a segment is expired when
// now - its largest timestamp > retention.ms.
func testRetentionByTime(t *testing.T, h *harness) {
	l, m := minuteLog(t, h, engine.LogConfig{SegmentBytes: 1024, RetentionMs: time.Hour, RetentionBytes: -1})
	// Records 0..19 are older than an hour at now; 20.. are not.
	now := epoch0.Add(time.Hour + 20*time.Minute - time.Millisecond)
	h.clock.Advance(now.Sub(epoch0))
	start, err := l.ApplyRetention(now)
	noErr(t, "ApplyRetention", err)
	if start == 0 {
		t.Fatalf("retention by time deleted nothing: 20 of 40 batches (about 5 segments) are expired")
	}
	if start > 20 {
		t.Fatalf("retention by time advanced the start to %d, deleting unexpired records 20..%d", start, start-1)
	}
	checkStart(t, l, m, start)
	again, err := l.ApplyRetention(now)
	noErr(t, "ApplyRetention again", err)
	if again != start {
		t.Fatalf("a second ApplyRetention at the same time moved the start from %d to %d", start, again)
	}
	h.reopen()
	l = h.openID(defaultID, engine.LogConfig{SegmentBytes: 1024, RetentionMs: time.Hour, RetentionBytes: -1})
	if l.StartOffset() != start || l.EndOffset() != 40 {
		t.Fatalf("after reopen start %d end %d, want %d 40", l.StartOffset(), l.EndOffset(), start)
	}
	checkStart(t, l, m, start)
}

// testRetentionByBytes: whole oldest segments go while what remains stays
// at or above retention.bytes. Kafka
// (UnifiedLog.deleteRetentionSizeBreachedSegments): delete a segment only
// if size - segment size >= retention.bytes.
func testRetentionByBytes(t *testing.T, h *harness) {
	const keep = 3000
	l, m := minuteLog(t, h, engine.LogConfig{SegmentBytes: 1024, RetentionMs: -1, RetentionBytes: keep})
	before := l.Size()
	start, err := l.ApplyRetention(h.clock.Now())
	noErr(t, "ApplyRetention", err)
	if start == 0 || l.Size() >= before {
		t.Fatalf("retention by bytes deleted nothing: size %d, retention.bytes %d", before, keep)
	}
	if l.Size() < keep {
		t.Fatalf("retention by bytes left %d bytes, below retention.bytes %d", l.Size(), keep)
	}
	if l.Size() > keep+2*1024 {
		t.Fatalf("retention by bytes left %d bytes, more than retention.bytes %d plus two 1 KiB segments", l.Size(), keep)
	}
	checkStart(t, l, m, start)
}

// testRetentionNeverActive: even when every record is expired and
// retention.bytes is tiny, the active segment (the newest data) stays.
func testRetentionNeverActive(t *testing.T, h *harness) {
	l, m := minuteLog(t, h, engine.LogConfig{SegmentBytes: 1024, RetentionMs: time.Minute, RetentionBytes: 1})
	now := epoch0.Add(1000 * time.Hour)
	h.clock.Advance(now.Sub(epoch0))
	start, err := l.ApplyRetention(now)
	noErr(t, "ApplyRetention", err)
	if start == 0 {
		t.Fatalf("nothing deleted although every segment but the active one is expired")
	}
	if start > 39 || l.EndOffset() != 40 {
		t.Fatalf("retention removed the active data: start %d end %d", start, l.EndOffset())
	}
	checkStart(t, l, m, start)
	if info := appendOK(t, l, m, MakeBatch(1, now.UnixMilli(), 10, 1), leader(0)); info.FirstOffset != 40 {
		t.Fatalf("append after retention at %d, want 40", info.FirstOffset)
	}
}

// testSetConfig: a changed config applies to the open log: retention turned
// on deletes, and a smaller segment size makes later appends roll.
func testSetConfig(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{RetentionMs: -1, RetentionBytes: -1})
	m := &model{}
	fill(t, l, m, 20, 1, 160, baseTs, 1, 0)
	start, err := l.ApplyRetention(h.clock.Now().Add(1000 * time.Hour))
	noErr(t, "ApplyRetention with unlimited retention", err)
	if start != 0 {
		t.Fatalf("unlimited retention deleted up to %d", start)
	}
	// One big segment so far: shrink segments, append more, and cap bytes.
	noErr(t, "SetConfig", l.SetConfig(engine.LogConfig{SegmentBytes: 1024, RetentionMs: -1, RetentionBytes: 2000}))
	fill(t, l, m, 20, 1, 160, baseTs+100, 1, 0)
	start, err = l.ApplyRetention(h.clock.Now())
	noErr(t, "ApplyRetention after SetConfig", err)
	if start < 20 {
		t.Fatalf("after SetConfig(segment.bytes=1024, retention.bytes=2000) the start is %d: the first, pre-change segment (offsets 0..19) should be gone", start)
	}
	checkStart(t, l, m, start)
}

// testRetentionCompactOnly: cleanup.policy=compact turns time and size
// retention off (the cleaner, not retention, bounds a compacted log), and
// altering the policy to compact,delete turns them back on, as Kafka's
// UnifiedLog.deleteOldSegments does.
func testRetentionCompactOnly(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1024, RetentionMs: time.Minute, RetentionBytes: 1, Compact: true}
	l, m := minuteLog(t, h, cfg)
	now := epoch0.Add(1000 * time.Hour)
	h.clock.Advance(now.Sub(epoch0))
	start, err := l.ApplyRetention(now)
	noErr(t, "ApplyRetention", err)
	if start != 0 || l.StartOffset() != 0 {
		t.Fatalf("cleanup.policy=compact: retention deleted up to %d (start %d)", start, l.StartOffset())
	}
	checkStart(t, l, m, 0)
	cfg.Delete = true
	noErr(t, "SetConfig(compact,delete)", l.SetConfig(cfg))
	start, err = l.ApplyRetention(now)
	noErr(t, "ApplyRetention after SetConfig", err)
	if start == 0 {
		t.Fatalf("cleanup.policy=compact,delete: nothing deleted although every segment but the active one is expired")
	}
	checkStart(t, l, m, start)
}

// testStartMovesCounted: every operation that moves a log's start offset
// counts in engine.StartMoves, which the fetch path trusts to tell that
// the log start offsets it answered are current (server/fetch_session.go):
// retention, DeleteBefore, TruncateFullyAndStartAt and a Truncate below
// the start. Other tests of the package may count too, so this checks
// that the count grew, which an engine that forgets to count fails unless
// another test happened to move a start at the same moment.
func testStartMovesCounted(t *testing.T, h *harness) {
	l, _ := minuteLog(t, h, engine.LogConfig{SegmentBytes: 1024, RetentionMs: time.Hour, RetentionBytes: -1})
	moved := func(what string, op func() error) {
		t.Helper()
		before, start := engine.StartMoves(), l.StartOffset()
		noErr(t, what, op())
		if l.StartOffset() == start {
			t.Fatalf("%s left the start offset at %d", what, start)
		}
		if engine.StartMoves() == before {
			t.Fatalf("%s moved the start offset %d -> %d without counting it in engine.StartMoves", what, start, l.StartOffset())
		}
	}
	now := epoch0.Add(time.Hour + 20*time.Minute - time.Millisecond)
	h.clock.Advance(now.Sub(epoch0))
	moved("ApplyRetention", func() error { _, err := l.ApplyRetention(now); return err })
	moved("DeleteBefore", func() error { return l.DeleteBefore(l.StartOffset() + 3) })
	moved("TruncateFullyAndStartAt", func() error { return fullTruncater(t, h, l).TruncateFullyAndStartAt(l.EndOffset() + 10) })
	moved("Truncate below the start", func() error { return l.Truncate(l.StartOffset() - 5) })
}
