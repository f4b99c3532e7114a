package share

import (
	"strconv"
	"testing"
)

// BenchmarkAcquireAccept measures one consume step of a share partition:
// acquire a batch of records and accept them, with inflight records
// already in flight (held by another member).
func BenchmarkAcquireAccept(b *testing.B) {
	for _, inflight := range []int{0, 1000} {
		for _, batch := range []int{1, 100} {
			b.Run("inflight="+strconv.Itoa(inflight)+"/batch="+strconv.Itoa(batch), func(b *testing.B) {
				cfg := testConfig()
				cfg.MaxRecordLocks = inflight + batch
				p := New(0)
				p.Acquire("other", t0, inflight, int64(inflight), cfg)
				acks := []AckBatch{{Types: []AckType{AckAccept}}}
				limit := int64(inflight)
				b.ReportAllocs()
				for b.Loop() {
					limit += int64(batch)
					got := p.Acquire("m", t0, batch, limit, cfg)
					acks[0].First, acks[0].Last = got[0].First, got[len(got)-1].Last
					if err := p.Acknowledge("m", t0, acks, false, cfg); err != nil {
						b.Fatal(err)
					}
					// Keep the window bounded: the other member's records
					// stay, ours are accepted but sit behind them.
					p.recs = p.recs[:inflight]
				}
			})
		}
	}
}
