package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	_ "github.com/sluice/sluice/engine/memlog"
	_ "github.com/sluice/sluice/segment"
	"github.com/sluice/sluice/server"
)

// TestFetchIsZeroCopyOnSegment consumes through a real client and checks how
// the record bytes left the broker: with the segment backend by sendfile(2)
// only, never copied through user space; with the memory backend (no file to
// send) as ordinary writes. The bytes themselves are checked by the client:
// every record comes back intact. The fetches are large (~400 KB of records
// in one partition), well over fetchInlineMax; a small fetch is inlined (see
// TestSmallFetchIsInlined).
func TestFetchIsZeroCopyOnSegment(t *testing.T) {
	for _, tc := range []struct {
		backend  string
		sendfile bool
	}{{"segment", true}, {"memory", false}} {
		t.Run("backend="+tc.backend, func(t *testing.T) {
			b := brokertest.Start(t, tc.backend)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("zc"),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "zc"); err != nil {
				t.Fatal(err)
			}
			const n = 2000
			for i := 0; i < n; i++ {
				cl.Produce(ctx, &kgo.Record{Value: value(i)}, nil)
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			before := b.Stats()
			cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()),
				kgo.ConsumeTopics("zc"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatal(err)
			}
			for got := 0; got < n; {
				fs := cons.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("consumed %d of %d: %v", got, n, err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if want := value(int(r.Offset)); string(r.Value) != string(want) {
						t.Fatalf("offset %d holds %q", r.Offset, r.Value)
					}
					got++
				})
			}
			cons.Close()
			// A response is counted once its flush returns, which can be
			// just after the client has read it: wait (bounded) for the
			// counters to settle.
			var st server.Stats
			for i := 0; i < 500; i++ { // up to 10 s on a loaded machine
				st = b.Stats()
				if st.SendfileBytes-before.SendfileBytes >= n*valueLen || st.WriteBytes-before.WriteBytes >= n*valueLen {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			sent, copied := st.SendfileBytes-before.SendfileBytes, st.CopyBytes-before.CopyBytes
			t.Logf("%s: sendfile %d bytes, copied %d, written %d", tc.backend, sent, copied, st.WriteBytes-before.WriteBytes)
			// Uncompressed, every value's bytes are in the log once.
			if tc.sendfile && (sent < n*valueLen || copied != 0) {
				t.Fatalf("segment fetch: %d bytes by sendfile, %d copied; want all by sendfile", sent, copied)
			}
			if !tc.sendfile && (sent != 0 || copied != 0) {
				t.Fatalf("memory fetch: %d bytes by sendfile, %d copied from a file; want neither", sent, copied)
			}
		})
	}
}

const valueLen = 200

// value is record i's value: valueLen bytes that name i.
func value(i int) []byte {
	v := []byte(fmt.Sprintf("value-%06d-", i))
	for len(v) < valueLen {
		v = append(v, byte('a'+len(v)%26))
	}
	return v
}

// TestSmallFetchIsInlined: a consumer at the log end gets each small batch
// in a response written with one writev, not a write, a sendfile and a
// write: with the segment backend's tail cache (the default) the record
// bytes come from memory, with no read of the segment file; with
// log.segment.tail.cache.bytes=0 they are read from the page cache
// (inlined).
func TestSmallFetchIsInlined(t *testing.T) {
	t.Run("tail cache", func(t *testing.T) {
		inlined, sent, written := tailFetch(t, brokertest.Start(t, "segment"))
		if inlined != 0 || sent != 0 || written < tailRecords*valueLen {
			t.Fatalf("tailing fetches: %d bytes inlined, %d by sendfile, %d written; want every record written from memory", inlined, sent, written)
		}
	})
	t.Run("no tail cache", func(t *testing.T) {
		inlined, sent, _ := tailFetch(t, brokertest.Start(t, "segment", func(c *config.Config) { c.LogSegmentTailCacheBytes = 0 }))
		if inlined < tailRecords*valueLen || sent != 0 {
			t.Fatalf("tailing fetches: %d bytes inlined, %d by sendfile; want every record inlined", inlined, sent)
		}
	})
}

// tailRecords is how many records tailFetch produces and consumes one at a time.
const tailRecords = 20

// tailFetch produces tailRecords records to a new topic one at a time, consuming each
// before the next, and returns the bytes the broker's connections wrote by
// each path meanwhile (server.Stats): file bytes inlined, by sendfile, and
// everything written with write/writev.
func tailFetch(t *testing.T, b *broker.Broker) (inlined, sent, written int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("tail"),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ConsumeTopics("tail"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "tail"); err != nil {
		t.Fatal(err)
	}
	before := b.Stats()
	for i := 0; i < tailRecords; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value(i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for got := false; !got; {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("record %d not consumed: %v", i, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if string(r.Value) != string(value(int(r.Offset))) {
					t.Fatalf("offset %d holds %q", r.Offset, r.Value)
				}
				got = got || r.Offset == int64(i)
			})
		}
	}
	var st server.Stats
	for i := 0; i < 500; i++ { // counted when the flush returns: let it settle (up to 10 s)
		st = b.Stats()
		if st.InlineBytes-before.InlineBytes >= tailRecords*valueLen || st.WriteBytes-before.WriteBytes >= tailRecords*(valueLen+100) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	inlined, sent, written = st.InlineBytes-before.InlineBytes, st.SendfileBytes-before.SendfileBytes, st.WriteBytes-before.WriteBytes
	t.Logf("inlined %d bytes, sendfile %d, written %d", inlined, sent, written)
	return inlined, sent, written
}
