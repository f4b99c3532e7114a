package enginetest

import (
	"bytes"
	"encoding/binary"
	"maps"
	"testing"

	"github.com/sluice/sluice/engine"
)

// optionalCases check the optional capabilities of package engine. A case
// skips a backend that lacks the capability; the backends in this
// repository assert at compile time that they have each one, except
// "memory", which is no engine.Maintainer (it has nothing to make
// durable).
func optionalCases() []testCase {
	return []testCase{
		{"TruncateFullyAndStartAt", testTruncateFullyAndStartAt},
		{"TruncateFullyAndStartAtBelowEnd", testTruncateFullyAndStartAtBelowEnd},
		{"HighWatermarks", testHighWatermarks},
		{"Maintainer", testMaintainer},
	}
}

// setBase sets the baseOffset and partitionLeaderEpoch of the batch at the
// start of b, as a leader's append would have (both lie outside the CRC).
func setBase(b []byte, base int64, epoch int32) {
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
}

func fullTruncater(t *testing.T, h *harness, l engine.Log) engine.FullTruncater {
	t.Helper()
	ft, ok := l.(engine.FullTruncater)
	if !ok {
		t.Skipf("the %s backend's %T is not an engine.FullTruncater", h.backend, l)
	}
	return ft
}

// testTruncateFullyAndStartAt: Kafka (UnifiedLog.truncateFullyAndStartAt,
// used when a follower's fetch offset is below the leader's log start): the
// log restarts empty at an offset above its end, epoch history cleared;
// reads below it are out of range; leader and follower appends continue
// there; a clean reopen keeps all of it, with later segments rolling
// normally.
func testTruncateFullyAndStartAt(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1024}
	l := h.create(cfg)
	fill(t, l, nil, 10, 2, 100, baseTs, 10, 1) // 0..19, several segments
	ft := fullTruncater(t, h, l)

	wantErr(t, "TruncateFullyAndStartAt(-1)", ft.TruncateFullyAndStartAt(-1), engine.ErrOffsetOutOfRange)
	if l.StartOffset() != 0 || l.EndOffset() != 20 {
		t.Fatalf("a refused restart changed start/end to %d/%d", l.StartOffset(), l.EndOffset())
	}

	const at = 1000
	noErr(t, "TruncateFullyAndStartAt(1000)", ft.TruncateFullyAndStartAt(at))
	check := func(when string, end int64) {
		t.Helper()
		if l.StartOffset() != at || l.EndOffset() != end {
			t.Fatalf("%s: start %d end %d, want %d %d", when, l.StartOffset(), l.EndOffset(), at, end)
		}
		for _, off := range []int64{0, 19, 20, at - 1} {
			_, err := read(t, l, off, 1<<20, -1)
			wantErr(t, when+": Read below the new start", err, engine.ErrOffsetOutOfRange)
		}
		if ts, _, ok, err := l.OffsetForTimestamp(baseTs); err != nil || (ok && ts < at) {
			t.Fatalf("%s: OffsetForTimestamp(%d) = %d, %v, %v; want nothing below %d", when, baseTs, ts, ok, err, at)
		}
	}
	check("after restart", at)
	if l.Size() != 0 || len(l.LeaderEpochs()) != 0 {
		t.Fatalf("after restart: size %d epochs %v, want 0 and none", l.Size(), l.LeaderEpochs())
	}
	if _, bs := mustRead(t, l, at, 1<<20, -1); len(bs) != 0 {
		t.Fatalf("Read(%d) of the emptied log returned %d batches", at, len(bs))
	}

	var m model
	info := appendOK(t, l, &m, MakeBatch(3, baseTs+50, 100, 7), leader(4))
	if info.FirstOffset != at {
		t.Fatalf("leader append after restart at %d, want %d", info.FirstOffset, at)
	}
	// A follower append carries the leader's offsets and must start at
	// the new end.
	fb := MakeBatch(2, baseTs+60, 100, 8)
	setBase(fb, at+3, 5)
	appendOK(t, l, &m, fb, engine.AppendOptions{})
	fill(t, l, &m, 10, 2, 100, baseTs+70, 10, 5) // rolls segments past the restart
	want := []engine.EpochEntry{ep(4, at), ep(5, at+3)}
	check("after appends", at+25)
	if got := l.LeaderEpochs(); !epochsEqual(got, want) {
		t.Fatalf("LeaderEpochs after appends %v, want %v", got, want)
	}
	if got := scan(t, l, at); !bytes.Equal(got, m.from(at)) {
		t.Fatalf("bytes after restart and appends differ")
	}

	h.reopen()
	l = h.openID(defaultID, cfg)
	check("after reopen", at+25)
	if got := l.LeaderEpochs(); !epochsEqual(got, want) {
		t.Fatalf("LeaderEpochs after reopen %v, want %v", got, want)
	}
	if got := scan(t, l, at); !bytes.Equal(got, m.from(at)) {
		t.Fatalf("bytes after reopen differ")
	}

	// Restarting an emptied log with nothing appended is durable too.
	ft = fullTruncater(t, h, l)
	noErr(t, "TruncateFullyAndStartAt(5000)", ft.TruncateFullyAndStartAt(5000))
	h.reopen()
	l = h.openID(defaultID, cfg)
	if l.StartOffset() != 5000 || l.EndOffset() != 5000 || l.Size() != 0 || len(l.LeaderEpochs()) != 0 {
		t.Fatalf("restart with no append, reopened: start %d end %d size %d epochs %v; want 5000 5000 0 none",
			l.StartOffset(), l.EndOffset(), l.Size(), l.LeaderEpochs())
	}
	if info := appendOK(t, l, nil, MakeBatch(1, baseTs, 5, 1), leader(9)); info.FirstOffset != 5000 {
		t.Fatalf("append after reopen at %d, want 5000", info.FirstOffset)
	}
}

// testTruncateFullyAndStartAtBelowEnd: the restart offset may also lie
// inside the log (even inside a batch) or below its start; the log is
// emptied all the same, which Truncate would not do.
func testTruncateFullyAndStartAtBelowEnd(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1024}
	l := h.create(cfg)
	fill(t, l, nil, 10, 2, 100, baseTs, 10, 1) // 0..19
	ft := fullTruncater(t, h, l)
	noErr(t, "DeleteBefore(6)", l.DeleteBefore(6))
	for _, at := range []int64{11, 3, 0} { // inside a batch, below start, zero
		noErr(t, "TruncateFullyAndStartAt", ft.TruncateFullyAndStartAt(at))
		if l.StartOffset() != at || l.EndOffset() != at || l.Size() != 0 || len(l.LeaderEpochs()) != 0 {
			t.Fatalf("after restart at %d: start %d end %d size %d epochs %v", at,
				l.StartOffset(), l.EndOffset(), l.Size(), l.LeaderEpochs())
		}
		fill(t, l, nil, 4, 2, 100, baseTs, 10, 2)
		if got := l.LeaderEpochs(); !epochsEqual(got, []engine.EpochEntry{ep(2, at)}) {
			t.Fatalf("epochs after restart at %d and appends: %v", at, got)
		}
	}
	h.reopen()
	l = h.openID(defaultID, cfg)
	if l.StartOffset() != 0 || l.EndOffset() != 8 {
		t.Fatalf("after reopen start %d end %d, want 0 8", l.StartOffset(), l.EndOffset())
	}
}

// testHighWatermarks: engine.HighWatermarkStore keeps the last saved set,
// whole, across a clean reopen; a new store has none; returned maps are the
// caller's; negative offsets are refused; Close ends it.
func testHighWatermarks(t *testing.T, h *harness) {
	hs, ok := h.store.(engine.HighWatermarkStore)
	if !ok {
		t.Skipf("the %s backend's %T is not an engine.HighWatermarkStore", h.backend, h.store)
	}
	got, err := hs.HighWatermarks()
	noErr(t, "HighWatermarks of a new store", err)
	if got == nil || len(got) != 0 {
		t.Fatalf("HighWatermarks of a new store = %v, want an empty map", got)
	}
	first := map[engine.PartitionID]int64{
		{Topic: "orders", Partition: 0}:              42,
		{Topic: "orders", Partition: 11}:             0,
		{Topic: "my.topic-1", Partition: 2}:          1 << 40,
		{Topic: "__consumer_offsets", Partition: 49}: 7,
		{Topic: "a-12", Partition: 3}:                9,
		{Topic: "conformance", Partition: 0}:         5, // a name no log has: stored all the same
	}
	noErr(t, "SaveHighWatermarks", hs.SaveHighWatermarks(first))
	got, err = hs.HighWatermarks()
	noErr(t, "HighWatermarks", err)
	if !maps.Equal(got, first) {
		t.Fatalf("HighWatermarks = %v, want %v", got, first)
	}
	got[engine.PartitionID{Topic: "orders", Partition: 0}] = 1
	if again, _ := hs.HighWatermarks(); !maps.Equal(again, first) {
		t.Fatalf("changing a returned map changed the store: %v", again)
	}

	second := map[engine.PartitionID]int64{{Topic: "orders", Partition: 0}: 50}
	noErr(t, "SaveHighWatermarks (replace)", hs.SaveHighWatermarks(second))
	second[engine.PartitionID{Topic: "orders", Partition: 0}] = 51 // not retained
	if err := hs.SaveHighWatermarks(map[engine.PartitionID]int64{{Topic: "orders", Partition: 0}: -1}); err == nil {
		t.Fatalf("SaveHighWatermarks of a negative offset succeeded")
	}

	h.reopen()
	hs = h.store.(engine.HighWatermarkStore)
	got, err = hs.HighWatermarks()
	noErr(t, "HighWatermarks after reopen", err)
	if want := map[engine.PartitionID]int64{{Topic: "orders", Partition: 0}: 50}; !maps.Equal(got, want) {
		t.Fatalf("HighWatermarks after reopen = %v, want %v (the whole set replaced)", got, want)
	}
	noErr(t, "SaveHighWatermarks(empty)", hs.SaveHighWatermarks(nil))
	if got, err := hs.HighWatermarks(); err != nil || len(got) != 0 {
		t.Fatalf("HighWatermarks after saving none = %v, %v", got, err)
	}

	noErr(t, "Close", h.store.Close())
	_, err = hs.HighWatermarks()
	wantErr(t, "HighWatermarks after Close", err, engine.ErrClosed)
	wantErr(t, "SaveHighWatermarks after Close", hs.SaveHighWatermarks(first), engine.ErrClosed)
	h.store = nil
}

// testMaintainer: engine.Maintainer flushes and checkpoints every open log
// without changing what it holds, a deleted log is skipped, appends go on
// after, a clean reopen keeps everything, and Close ends it. (What a flush
// makes durable is each backend's to test: it takes a crash.)
func testMaintainer(t *testing.T, h *harness) {
	mt, ok := h.store.(engine.Maintainer)
	if !ok {
		t.Skipf("the %s backend's %T is not an engine.Maintainer", h.backend, h.store)
	}
	noErr(t, "FlushAll of an empty store", mt.FlushAll())
	noErr(t, "CheckpointRecoveryPoints of an empty store", mt.CheckpointRecoveryPoints())
	cfg := engine.LogConfig{SegmentBytes: 1024}
	gone := engine.PartitionID{Topic: "conformance", Partition: 1}
	var m model
	l := h.create(cfg)
	fill(t, l, &m, 10, 2, 100, baseTs, 10, 1)
	fill(t, h.createID(gone, cfg), nil, 3, 2, 100, baseTs, 10, 1)
	noErr(t, "DeleteLog", h.store.DeleteLog(gone))
	noErr(t, "FlushAll", mt.FlushAll())
	noErr(t, "CheckpointRecoveryPoints", mt.CheckpointRecoveryPoints())
	fill(t, l, &m, 5, 2, 100, baseTs+100, 10, 1)
	noErr(t, "FlushAll after appends", mt.FlushAll())
	noErr(t, "CheckpointRecoveryPoints after appends", mt.CheckpointRecoveryPoints())
	if got := scan(t, l, 0); !bytes.Equal(got, m.from(0)) {
		t.Fatalf("bytes after FlushAll differ")
	}

	h.reopen()
	l = h.openID(defaultID, cfg)
	if got := scan(t, l, 0); l.EndOffset() != 30 || !bytes.Equal(got, m.from(0)) {
		t.Fatalf("after reopen: end %d, want 30, bytes equal %v", l.EndOffset(), bytes.Equal(got, m.from(0)))
	}
	mt = h.store.(engine.Maintainer)
	noErr(t, "Close", h.store.Close())
	wantErr(t, "FlushAll after Close", mt.FlushAll(), engine.ErrClosed)
	wantErr(t, "CheckpointRecoveryPoints after Close", mt.CheckpointRecoveryPoints(), engine.ErrClosed)
	h.store = nil
}
