package enginetest

import (
	"fmt"
	"testing"

	"github.com/sluice/sluice/engine"
)

// snapshotCases check engine.SnapshotStore, the opaque snapshots replication
// keeps its producer state in (Kafka's .snapshot files).
func snapshotCases() []testCase {
	return []testCase{
		{"SnapshotLatest", testSnapshotLatest},
		{"SnapshotDelete", testSnapshotDelete},
		{"SnapshotWithLog", testSnapshotWithLog},
		{"SnapshotDue", testSnapshotDue},
	}
}

func snapshotStore(t *testing.T, h *harness, l engine.Log) engine.SnapshotStore {
	t.Helper()
	ss, ok := l.(engine.SnapshotStore)
	if !ok {
		t.Skipf("the %s backend's %T is not an engine.SnapshotStore", h.backend, l)
	}
	return ss
}

// wantSnapshot fails unless LatestSnapshot(upTo) finds the snapshot at
// want (want < 0: none) holding snapData(want, gen).
func wantSnapshot(t *testing.T, what string, ss engine.SnapshotStore, upTo, want int64, gen int) {
	t.Helper()
	off, data, ok, err := ss.LatestSnapshot(upTo)
	noErr(t, what, err)
	switch {
	case want < 0 && ok:
		t.Fatalf("%s: LatestSnapshot(%d) found offset %d, want none", what, upTo, off)
	case want < 0:
	case !ok:
		t.Fatalf("%s: LatestSnapshot(%d) found none, want offset %d", what, upTo, want)
	case off != want || string(data) != snapData(want, gen):
		t.Fatalf("%s: LatestSnapshot(%d) = %d %q, want %d %q", what, upTo, off, data, want, snapData(want, gen))
	}
}

func snapData(off int64, gen int) string { return fmt.Sprintf("state@%d/%d", off, gen) }

func saveSnaps(t *testing.T, ss engine.SnapshotStore, gen int, offs ...int64) {
	t.Helper()
	for _, off := range offs {
		noErr(t, fmt.Sprintf("SaveSnapshot(%d)", off), ss.SaveSnapshot(off, []byte(snapData(off, gen))))
	}
}

// testSnapshotLatest: the latest snapshot at or below a bound is found;
// a save at the same offset replaces it; the returned bytes are the
// caller's; a reopen keeps them; an empty snapshot is one; after Close
// the methods give ErrClosed.
func testSnapshotLatest(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	ss := snapshotStore(t, h, l)
	wantSnapshot(t, "empty", ss, 1000, -1, 0)
	saveSnaps(t, ss, 1, 30, 0, 10)
	wantSnapshot(t, "above all", ss, 1000, 30, 1)
	wantSnapshot(t, "at one", ss, 30, 30, 1)
	wantSnapshot(t, "between", ss, 29, 10, 1)
	wantSnapshot(t, "at the first", ss, 9, 0, 1)
	wantSnapshot(t, "below all", ss, -1, -1, 0)
	saveSnaps(t, ss, 2, 10)
	wantSnapshot(t, "replaced", ss, 29, 10, 2)
	_, data, _, err := ss.LatestSnapshot(29)
	noErr(t, "LatestSnapshot", err)
	data[0] = 'X' // the caller's copy
	wantSnapshot(t, "after the caller wrote its copy", ss, 29, 10, 2)
	noErr(t, "SaveSnapshot(empty)", ss.SaveSnapshot(40, nil))
	if off, data, ok, err := ss.LatestSnapshot(100); err != nil || !ok || off != 40 || len(data) != 0 {
		t.Fatalf("empty snapshot: LatestSnapshot = %d %q %v %v, want 40, empty", off, data, ok, err)
	}
	wantErr(t, "SaveSnapshot(-1)", ss.SaveSnapshot(-1, nil), engine.ErrOffsetOutOfRange)
	h.reopen()
	l = h.openID(defaultID, engine.LogConfig{})
	ss = snapshotStore(t, h, l)
	wantSnapshot(t, "after reopen", ss, 39, 30, 1)
	wantSnapshot(t, "after reopen", ss, 29, 10, 2)
	noErr(t, "Close", l.Close())
	wantErr(t, "SaveSnapshot after Close", ss.SaveSnapshot(50, nil), engine.ErrClosed)
	_, _, _, err = ss.LatestSnapshot(100)
	wantErr(t, "LatestSnapshot after Close", err, engine.ErrClosed)
}

// testSnapshotDelete: DeleteSnapshotsFrom drops offsets >= its argument,
// DeleteSnapshotsBefore offsets below; both are durable.
func testSnapshotDelete(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	ss := snapshotStore(t, h, l)
	saveSnaps(t, ss, 1, 0, 10, 20, 30, 40)
	noErr(t, "DeleteSnapshotsFrom(30)", ss.DeleteSnapshotsFrom(30))
	wantSnapshot(t, "after DeleteSnapshotsFrom(30)", ss, 1000, 20, 1)
	noErr(t, "DeleteSnapshotsBefore(10)", ss.DeleteSnapshotsBefore(10))
	wantSnapshot(t, "after DeleteSnapshotsBefore(10)", ss, 9, -1, 0)
	wantSnapshot(t, "after DeleteSnapshotsBefore(10)", ss, 19, 10, 1)
	noErr(t, "DeleteSnapshotsBefore(15)", ss.DeleteSnapshotsBefore(15))
	noErr(t, "DeleteSnapshotsFrom(100): none", ss.DeleteSnapshotsFrom(100))
	h.reopen()
	l = h.openID(defaultID, engine.LogConfig{})
	ss = snapshotStore(t, h, l)
	wantSnapshot(t, "after reopen", ss, 1000, 20, 1)
	wantSnapshot(t, "after reopen", ss, 19, -1, 0)
}

// testSnapshotWithLog: the log's own trims leave snapshots alone (the
// caller drops what a truncation invalidates), except a full restart
// (TruncateFullyAndStartAt), which drops them all, and DeleteLog.
func testSnapshotWithLog(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1024}
	l := h.create(cfg)
	fill(t, l, nil, 20, 3, 100, baseTs, 10, 1)
	ss := snapshotStore(t, h, l)
	saveSnaps(t, ss, 1, 6, 30, 60)
	noErr(t, "Truncate(30)", l.Truncate(30))
	noErr(t, "DeleteBefore(15)", l.DeleteBefore(15))
	wantSnapshot(t, "after Truncate and DeleteBefore", ss, 1000, 60, 1)
	wantSnapshot(t, "after Truncate and DeleteBefore", ss, 29, 6, 1)
	noErr(t, "TruncateFullyAndStartAt", fullTruncater(t, h, l).TruncateFullyAndStartAt(100))
	wantSnapshot(t, "after TruncateFullyAndStartAt", ss, 1000, -1, 0)
	saveSnaps(t, ss, 2, 100)
	noErr(t, "DeleteLog", h.store.DeleteLog(defaultID))
	l = h.create(cfg)
	wantSnapshot(t, "recreated after DeleteLog", snapshotStore(t, h, l), 1000, -1, 0)
}

// testSnapshotDue: SnapshotDue is -1 or an offset in the log's range that
// moves up as the log rolls and never past the log end.
func testSnapshotDue(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{SegmentBytes: 1024})
	ss := snapshotStore(t, h, l)
	prev := ss.SnapshotDue()
	for i := 0; i < 20; i++ {
		fill(t, l, nil, 1, 3, 100, baseTs+int64(i), 10, 1)
		due := ss.SnapshotDue()
		if due < 0 {
			if prev >= 0 {
				t.Fatalf("SnapshotDue went from %d to %d", prev, due)
			}
			continue
		}
		if due < prev || due < l.StartOffset() || due > l.EndOffset() {
			t.Fatalf("after %d appends: SnapshotDue = %d (was %d), log [%d, %d)", i+1, due, prev, l.StartOffset(), l.EndOffset())
		}
		prev = due
	}
	if prev == 0 {
		t.Fatalf("SnapshotDue stayed at 0 over several segments")
	}
}
