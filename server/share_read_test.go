package server

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestShareAcquireReadsWhatItNeeds: a ShareFetch for a few records of a
// partition holding megabytes reads (and allocates) about what those
// records need, not the whole read budget: the first read is a KiB per
// record asked for (at least shareReadMin), growing only when it held too
// few. It allocated the full 8 MiB budget, twice over, per fetch.
func TestShareAcquireReadsWhatItNeeds(t *testing.T) {
	e := startShareServer(t, 0, nil)
	rng := rand.New(rand.NewPCG(29, 1))
	for range 80 { // 8,000 records of 1 KiB that do not compress, batches of 100
		recs := make([]*kgo.Record, 100)
		for i := range recs {
			v := make([]byte, 1024)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			recs[i] = &kgo.Record{Value: v}
		}
		if err := e.admin.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p := e.s.rm.Partition("sq", 0)
	cfg := e.members.GroupConfig("g")
	sp := sharePart{e.topicID, 0}
	ctx := context.Background()
	// The first fetch loads the share partition (and creates
	// __share_group_state); the second is measured.
	if _, acq, _, err := e.s.shareAcquire(ctx, p, "g", "a", sp, cfg, 5, 1<<30); err != nil || len(acq) != 1 || acq[0].FirstOffset != 0 || acq[0].LastOffset != 4 {
		t.Fatalf("first acquisition: %v %+v", err, acq)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	recs, acq, _, err := e.s.shareAcquire(ctx, p, "g", "a", sp, cfg, 5, 1<<30)
	runtime.ReadMemStats(&m1)
	if err != nil || len(acq) != 1 || acq[0].FirstOffset != 5 || acq[0].LastOffset != 9 {
		t.Fatalf("second acquisition: %v %+v", err, acq)
	}
	t.Logf("5 records: %d bytes answered, %d allocated", len(recs), m1.TotalAlloc-m0.TotalAlloc)
	if len(recs) > 200<<10 {
		t.Fatalf("%d bytes of records answered for 5 records", len(recs))
	}
	if a := m1.TotalAlloc - m0.TotalAlloc; a > 2<<20 {
		t.Fatalf("acquiring 5 records of 1 KiB allocated %d bytes", a)
	}
	// Many records in one fetch still come, over several reads.
	recs, acq, _, err = e.s.shareAcquire(ctx, p, "g", "a", sp, cfg, 1000, 1<<30)
	if err != nil || len(acq) != 1 || acq[0].FirstOffset != 10 || acq[0].LastOffset != 1009 {
		t.Fatalf("third acquisition: %v %+v", err, acq)
	}
	if len(recs) < 1000*1024 {
		t.Fatalf("%d bytes of records answered for 1000 records of 1 KiB", len(recs))
	}
}
