package server

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/record"
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
	if _, acq, _, err := e.s.shareAcquire(ctx, p, "g", "a", sp, cfg, 5, 1<<30, false); err != nil || len(acq) != 1 || acq[0].FirstOffset != 0 || acq[0].LastOffset != 4 {
		t.Fatalf("first acquisition: %v %+v", err, acq)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	recs, acq, _, err := e.s.shareAcquire(ctx, p, "g", "a", sp, cfg, 5, 1<<30, false)
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
	recs, acq, _, err = e.s.shareAcquire(ctx, p, "g", "a", sp, cfg, 1000, 1<<30, false)
	if err != nil || len(acq) != 1 || acq[0].FirstOffset != 10 || acq[0].LastOffset != 1009 {
		t.Fatalf("third acquisition: %v %+v", err, acq)
	}
	if len(recs) < 1000*1024 {
		t.Fatalf("%d bytes of records answered for 1000 records of 1 KiB", len(recs))
	}
}

// TestShareFetchBatchOptimized: ShareAcquireMode batch_optimized (0, the
// default, and every v1 request) acquires on to the end of the batch that
// holds the MaxRecords-th record, as Kafka's SharePartition acquires whole
// batches; record_limit (1) acquires MaxRecords exactly.
func TestShareFetchBatchOptimized(t *testing.T) {
	e := startShareServer(t, 0, nil)
	recs := make([]*kgo.Record, 10)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte{byte('0' + i)}}
	}
	if err := e.admin.ProduceSync(context.Background(), recs...).FirstErr(); err != nil { // one batch, offsets 0-9
		t.Fatal(err)
	}
	fetch := func(cl *kgo.Client, member string, mode int8) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		g := "g"
		req.GroupID, req.MemberID = &g, &member
		req.MaxRecords, req.BatchSize, req.MaxBytes, req.ShareAcquireMode = 3, 3, 1<<20, mode
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = e.topicID
		rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := fetch(e.client(), "a", 0)
	var batches [][2]int64
	for _, rp := range resp.Topics[0].Partitions {
		eachBatch(rp.Records, func(b record.Batch) { batches = append(batches, [2]int64{b.BaseOffset(), b.LastOffset()}) })
	}
	if len(batches) == 0 || batches[0][0] != 0 {
		t.Fatalf("batches %v", batches)
	}
	wantRanges(t, acquired(t, resp), [3]int64{0, batches[0][1], 1})
	if batches[0][1] < 3 {
		t.Fatalf("first batch %v holds fewer records than asked for: the test needs one batch", batches[0])
	}
	// record_limit: three exactly, after the first batch.
	e.produce(10, 0)
	got := acquired(t, fetch(e.client(), "b", 1))
	if len(got) != 1 || got[0][1]-got[0][0] != 2 {
		t.Fatalf("record_limit acquired %v, want 3 records", got)
	}
}
