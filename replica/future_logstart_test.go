package replica

import (
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/segment"
)

// TestFutureCopiesTieredLogStart: a replica moving to another log dir
// (copyStep, Kafka's future log) takes the log start offset its current
// log keeps below its local start (a tiered partition's, records
// deleted by DeleteRecords but still remote), and follows it as it rises;
// before, the copy's log start was its local start, so after the move the
// partition lost it and remote retention would delete the remote records
// below the local start.
func TestFutureCopiesTieredLogStart(t *testing.T) {
	open := func() engine.Store {
		st, err := segment.Open(engine.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	id := engine.PartitionID{Topic: "t", Partition: 0}
	cfg := engine.LogConfig{SegmentBytes: 1024, RetentionMs: -1, RetentionBytes: -1}
	el, err := open().CreateLog(id, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := el.(*segment.Log)
	for i := 0; i < 40; i++ {
		b := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1},
			[]record.BuildRecord{{Value: make([]byte, 200), Timestamp: int64(i)}})
		if _, err := src.Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
	}
	segs := src.InactiveSegments()
	if len(segs) < 3 {
		t.Fatalf("%d rolled segments, want several", len(segs))
	}
	local := segs[1].Base
	if err := src.DeleteLocalBefore(local); err != nil {
		t.Fatal(err)
	}
	if err := src.RaiseLogStartOffset(local / 2); err != nil {
		t.Fatal(err)
	}

	el, err = open().CreateLog(engine.FutureLogID(id, "0123456789abcdef0123456789abcdef"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dst := el.(*segment.Log)
	step := func() {
		t.Helper()
		for i := 0; i < 100; i++ {
			caught, _, err := copyStep(src, dst, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if caught {
				return
			}
		}
		t.Fatal("the copy did not catch up in 100 steps")
	}
	step()
	if dst.StartOffset() != local || dst.LogStartOffset() != local/2 {
		t.Fatalf("copy: local start %d, log start %d; want %d and %d", dst.StartOffset(), dst.LogStartOffset(), local, local/2)
	}
	if err := src.RaiseLogStartOffset(local - 1); err != nil {
		t.Fatal(err)
	}
	step()
	if got := dst.LogStartOffset(); got != local-1 {
		t.Fatalf("copy's log start %d after the current one rose, want %d", got, local-1)
	}
}
