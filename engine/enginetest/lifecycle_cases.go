package enginetest

import (
	"bytes"
	"sort"
	"testing"

	"github.com/sluice/sluice/engine"
)

func lifecycleCases() []testCase {
	return []testCase{
		{"CreateListDelete", testCreateListDelete},
		{"DeleteLogWhileReading", testDeleteLogWhileReading},
		{"OpenLogTwice", testOpenLogTwice},
		{"ReopenAfterCleanClose", testReopenAfterCleanClose},
		{"DenseAcrossReopen", testDenseAcrossReopen},
	}
}

func sortedIDs(ids []engine.PartitionID) []engine.PartitionID {
	out := append([]engine.PartitionID(nil), ids...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

func idsEqual(a, b []engine.PartitionID) bool {
	a, b = sortedIDs(a), sortedIDs(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// testCreateListDelete: CreateLog, ListLogs, OpenLog and DeleteLog, with
// their errors, and names that are awkward in a directory layout (Kafka
// topic names may hold '.', '_' and '-'; the partition is after the last
// '-'). DeleteLog of a missing log is ErrNoLog (as OpenLog is).
func testCreateListDelete(t *testing.T, h *harness) {
	ids := []engine.PartitionID{
		{Topic: "orders", Partition: 0},
		{Topic: "orders", Partition: 12},
		{Topic: "my.topic-1", Partition: 2},
		{Topic: "my_topic", Partition: 1},
		{Topic: "a-12", Partition: 3},
	}
	if got, err := h.store.ListLogs(); err != nil || len(got) != 0 {
		t.Fatalf("new store ListLogs = %v, %v; want none", got, err)
	}
	for _, id := range ids {
		l := h.createID(id, engine.LogConfig{})
		appendOK(t, l, nil, MakeBatch(1, baseTs, 10, byte(id.Partition)), leader(0))
	}
	_, err := h.store.CreateLog(ids[0], engine.LogConfig{})
	wantErr(t, "CreateLog of an existing log", err, engine.ErrLogExists)
	_, err = h.store.OpenLog(engine.PartitionID{Topic: "orders", Partition: 1}, engine.LogConfig{})
	wantErr(t, "OpenLog of a missing log", err, engine.ErrNoLog)
	got, err := h.store.ListLogs()
	noErr(t, "ListLogs", err)
	if !idsEqual(got, ids) {
		t.Fatalf("ListLogs = %v, want %v", sortedIDs(got), sortedIDs(ids))
	}

	noErr(t, "DeleteLog", h.store.DeleteLog(ids[1]))
	wantErr(t, "DeleteLog twice", h.store.DeleteLog(ids[1]), engine.ErrNoLog)
	_, err = h.store.OpenLog(ids[1], engine.LogConfig{})
	wantErr(t, "OpenLog after DeleteLog", err, engine.ErrNoLog)
	got, err = h.store.ListLogs()
	noErr(t, "ListLogs", err)
	rest := append(append([]engine.PartitionID(nil), ids[:1]...), ids[2:]...)
	if !idsEqual(got, rest) {
		t.Fatalf("ListLogs after DeleteLog = %v, want %v", sortedIDs(got), sortedIDs(rest))
	}

	// A deleted log can be created again, empty.
	l := h.createID(ids[1], engine.LogConfig{})
	if l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("re-created log: end %d size %d, want empty", l.EndOffset(), l.Size())
	}

	h.reopen()
	got, err = h.store.ListLogs()
	noErr(t, "ListLogs after reopen", err)
	if !idsEqual(got, ids) {
		t.Fatalf("ListLogs after reopen = %v, want %v", sortedIDs(got), sortedIDs(ids))
	}
	for _, id := range ids {
		l := h.openID(id, engine.LogConfig{})
		want := int64(1)
		if id == ids[1] {
			want = 0
		}
		if l.EndOffset() != want {
			t.Fatalf("%v after reopen: EndOffset %d, want %d", id, l.EndOffset(), want)
		}
	}
}

// testDeleteLogWhileReading: a slice handed out before DeleteLog stays
// readable until released.
func testDeleteLogWhileReading(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{SegmentBytes: 1024})
	var m model
	fill(t, l, &m, 12, 2, 100, baseTs, 1, 0)
	s, err := l.Read(0, 1<<20, -1)
	noErr(t, "Read", err)
	noErr(t, "DeleteLog", h.store.DeleteLog(defaultID))
	data, err := s.AppendTo(nil)
	s.Release()
	noErr(t, "reading a slice after DeleteLog", err)
	if !bytes.HasPrefix(m.from(0), data) || len(data) == 0 {
		t.Fatalf("slice read after DeleteLog holds other bytes (%d)", len(data))
	}
}

// testOpenLogTwice: opening an open log returns the same Log.
func testOpenLogTwice(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	l2 := h.openID(defaultID, engine.LogConfig{})
	if l != l2 {
		t.Fatalf("OpenLog of an open log returned a different Log")
	}
	appendOK(t, l, nil, MakeBatch(2, baseTs, 1, 1), leader(0))
	if l2.EndOffset() != 2 {
		t.Fatalf("second handle sees EndOffset %d, want 2", l2.EndOffset())
	}
}

// testReopenAfterCleanClose: everything a log reports survives Store.Close
// and Open, and a Log.Close then OpenLog within the store.
func testReopenAfterCleanClose(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 2048}
	ids := []engine.PartitionID{{Topic: "r", Partition: 0}, {Topic: "r", Partition: 1}}
	models := make([]*model, len(ids))
	for i, id := range ids {
		l := h.createID(id, cfg)
		models[i] = &model{}
		fill(t, l, models[i], 10+5*i, 3, 120, baseTs, 100, int32(i))
		fill(t, l, models[i], 5, 1, 120, baseTs+5000, 100, int32(i+2))
	}
	type state struct {
		start, end, size int64
		epochs           []engine.EpochEntry
	}
	snap := func(l engine.Log) state {
		return state{l.StartOffset(), l.EndOffset(), l.Size(), l.LeaderEpochs()}
	}
	want := make([]state, len(ids))
	for i, id := range ids {
		want[i] = snap(h.openID(id, cfg))
	}
	check := func(what string) {
		t.Helper()
		for i, id := range ids {
			l := h.openID(id, cfg)
			got := snap(l)
			if got.start != want[i].start || got.end != want[i].end || got.size != want[i].size || !epochsEqual(got.epochs, want[i].epochs) {
				t.Fatalf("%s: %v is %+v, want %+v", what, id, got, want[i])
			}
			if data := scan(t, l, 0); !bytes.Equal(data, models[i].from(0)) {
				t.Fatalf("%s: %v bytes differ", what, id)
			}
		}
	}
	h.reopen()
	check("after store reopen")

	l := h.openID(ids[0], cfg)
	noErr(t, "Log.Close", l.Close())
	check("after Log.Close and OpenLog")

	noErr(t, "Flush", h.openID(ids[1], cfg).Flush())
	h.reopen()
	check("after Flush and a second reopen")
}

// testDenseAcrossReopen: offsets stay dense and increasing across many
// close/reopen cycles, appends continue at the end each time.
func testDenseAcrossReopen(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1500}
	l := h.create(cfg)
	var m model
	for round := 0; round < 5; round++ {
		end := l.EndOffset()
		info := appendOK(t, l, &m, concat(MakeBatch(2, baseTs, 80, byte(round)), MakeBatch(3, baseTs, 80, byte(round+1))), leader(int32(round)))
		if info.FirstOffset != end {
			t.Fatalf("round %d: append at %d, end was %d", round, info.FirstOffset, end)
		}
		fill(t, l, &m, 4, 1, 200, baseTs, 1, int32(round))
		h.reopen()
		l = h.openID(defaultID, cfg)
		data := scan(t, l, 0)
		checkDense(t, "after reopen", parseBatches(t, "after reopen", data), 0)
		if !bytes.Equal(data, m.from(0)) {
			t.Fatalf("round %d: bytes differ after reopen", round)
		}
	}
	if l.EndOffset() != 5*9 {
		t.Fatalf("EndOffset %d, want %d", l.EndOffset(), 5*9)
	}
}
