package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// compactedRecord is one record read back from a compacted topic.
type compactedRecord struct {
	offset int64
	key    string
	value  []byte // nil: a tombstone
}

// createCompacted creates a one-partition compacted topic with small
// segments and an eager cleaner, plus extra configs.
func createCompacted(t *testing.T, adm *kadm.Client, topic string, extra map[string]*string) {
	t.Helper()
	one := func(s string) *string { return &s }
	cfg := map[string]*string{
		"cleanup.policy":            one("compact"),
		"segment.bytes":             one("1048576"),
		"min.cleanable.dirty.ratio": one("0.01"),
	}
	for k, v := range extra {
		cfg[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 1, cfg, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

// produceKeyed produces n records spread over keys distinct keys
// ("key-00042"), value "v<i>" for record i (from first), and returns the
// latest value per key. Acknowledged means returned by ProduceSync.
func produceKeyed(t *testing.T, cl *kgo.Client, topic string, first, n, keys int) map[string]string {
	return producePrefixed(t, cl, topic, "key", first, n, keys)
}

// producePrefixed is produceKeyed with keys named prefix-NNNNN.
func producePrefixed(t *testing.T, cl *kgo.Client, topic, prefix string, first, n, keys int) map[string]string {
	t.Helper()
	latest := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const chunk = 10000
	recs := make([]*kgo.Record, 0, chunk)
	for i := first; i < first+n; {
		recs = recs[:0]
		for ; i < first+n && len(recs) < chunk; i++ {
			k := fmt.Sprintf("%s-%05d", prefix, (i*7919)%keys)
			v := fmt.Sprintf("v%d", i)
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)})
			latest[k] = v
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce at record %d: %v", i, err)
		}
	}
	return latest
}

// readCompacted reads partition 0 of topic from the start to its end
// offset, failing on offsets that do not increase. A read is not a
// snapshot: the cleaner may swap in a cleaned group between two of its
// fetches, so one read can see a record the next fetch would not. So it
// reads until two reads agree below the first one's end (at most 20
// times), and returns that.
func readCompacted(t *testing.T, addr, topic string) ([]compactedRecord, int64) {
	t.Helper()
	recs, end := readCompactedOnce(t, addr, topic)
	for i := 0; i < 20; i++ {
		again, end2 := readCompactedOnce(t, addr, topic)
		n := 0
		for n < len(again) && again[n].offset < end {
			n++
		}
		if sameRecords(recs, again[:n]) {
			return recs, end
		}
		recs, end = again, end2
	}
	t.Logf("read of %s never stable across two reads (the cleaner kept changing it)", topic)
	return recs, end
}

func sameRecords(a, b []compactedRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].offset != b[i].offset || a[i].key != b[i].key || string(a[i].value) != string(b[i].value) || (a[i].value == nil) != (b[i].value == nil) {
			return false
		}
	}
	return true
}

func readCompactedOnce(t *testing.T, addr, topic string) ([]compactedRecord, int64) {
	t.Helper()
	adm, done := adminFor(t, addr)
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []compactedRecord
	last := int64(-1)
	for last+1 < end.Offset {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %d records up to offset %d of %d: %v", topic, len(out), last, end.Offset, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			out = append(out, compactedRecord{r.Offset, string(r.Key), r.Value})
		})
		if len(out) > 0 && out[len(out)-1].offset >= end.Offset-1 {
			break
		}
	}
	return out, end.Offset
}

// checkCompaction asserts what a compacted topic must look like: a suffix
// of offsets [x, end) holds every record produced there, and the prefix
// below x holds each key at most once, as its latest record below x. It
// returns x (how far cleaning reached, at least) and the latest value per
// key read.
func checkCompaction(t *testing.T, recs []compactedRecord, end int64) (int64, map[string][]byte) {
	t.Helper()
	// x: the start of the dense suffix.
	x := end
	for i := len(recs) - 1; i >= 0 && recs[i].offset == x-1; i-- {
		x--
	}
	seen := map[string]int64{}
	latest := map[string][]byte{}
	for _, r := range recs {
		if r.offset < x {
			if prev, dup := seen[r.key]; dup {
				t.Fatalf("key %s at offsets %d and %d below %d: not compacted", r.key, prev, r.offset, x)
			}
			seen[r.key] = r.offset
		}
		latest[r.key] = r.value
	}
	return x, latest
}

func adminFor(t *testing.T, addr string) (*kadm.Client, func()) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	return kadm.NewClient(cl), cl.Close
}

// TestCompactionPerBackend: on each storage backend, 1,000,000 records over
// 10,000 keys in many segments; the cleaner runs; a real client reading from
// the start gets each key once in the cleaned part, with its latest value,
// and every record of the uncleaned tail, offsets increasing with gaps.
// Then tombstones stay until delete.retention.ms passes, and a record
// without a key is refused.
func TestCompactionPerBackend(t *testing.T) {
	t.Parallel()
	const n, keys = 1_000_000, 10_000
	for _, backend := range []string{"segment", "pebble", "memory"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			b := startBroker(t, filepath.Join(dir, "data"), "storage.backend="+backend, "log.cleaner.backoff.ms=100")
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ProducerLinger(5*time.Millisecond),
				kgo.ProducerBatchMaxBytes(256<<10), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			ms := func(d time.Duration) *string { s := fmt.Sprint(d.Milliseconds()); return &s }
			createCompacted(t, adm, "kv", map[string]*string{"delete.retention.ms": ms(3 * time.Second)})
			began := time.Now()
			want := produceKeyed(t, cl, "kv", 0, n, keys)
			t.Logf("%s: produced %d records over %d keys in %v", backend, n, keys, time.Since(began).Round(time.Millisecond))

			// The cleaner gets to it within a few backoffs.
			var recs []compactedRecord
			var end, x int64
			deadline := time.Now().Add(90 * time.Second)
			for {
				recs, end = readCompacted(t, b.addr, "kv")
				x, _ = checkCompaction(t, recs, end)
				if x >= end*9/10 || time.Now().After(deadline) {
					break
				}
				time.Sleep(300 * time.Millisecond)
			}
			if x < end*9/10 {
				t.Fatalf("cleaning reached offset %d of %d within 90 s", x, end)
			}
			if end != n {
				t.Fatalf("end offset %d, want %d (offsets never change)", end, n)
			}
			_, got := checkCompaction(t, recs, end)
			for k, v := range want {
				if string(got[k]) != v {
					t.Fatalf("key %s: latest %q, want %q", k, got[k], v)
				}
			}
			t.Logf("%s: %d records left of %d, cleaned up to at least offset %d", backend, len(recs), n, x)

			// Tombstones for 100 keys, then more data so that their
			// segment is cleaned: visible (null) while delete.retention.ms
			// runs, gone after it.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var tomb []*kgo.Record
			for i := 0; i < 100; i++ {
				tomb = append(tomb, &kgo.Record{Topic: "kv", Key: []byte(fmt.Sprintf("key-%05d", i))})
			}
			if err := cl.ProduceSync(ctx, tomb...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			stamped := time.Now()
			// Other keys: the tombstones must stay the latest of theirs.
			producePrefixed(t, cl, "kv", "more", n, 100_000, keys/2)
			for i := 0; i < 100; i++ {
				delete(want, fmt.Sprintf("key-%05d", i))
			}
			recs, _ = readCompacted(t, b.addr, "kv")
			tombs := 0
			for _, r := range recs {
				if r.value == nil {
					tombs++
				}
			}
			if time.Since(stamped) < 3*time.Second && tombs == 0 {
				t.Fatalf("tombstones gone %v after they were written, before delete.retention.ms (3 s)", time.Since(stamped))
			}
			t.Logf("%s: %d tombstones visible %v after they were written", backend, tombs, time.Since(stamped).Round(time.Millisecond))
			// After the horizon, a later cleaning (more data: another
			// round) removes them.
			deadline = time.Now().Add(60 * time.Second)
			for tombs > 0 && time.Now().Before(deadline) {
				time.Sleep(time.Second)
				producePrefixed(t, cl, "kv", "more", n+200_000, 50_000, keys/2)
				recs, _ = readCompacted(t, b.addr, "kv")
				tombs = 0
				for _, r := range recs {
					if r.value == nil {
						tombs++
					}
				}
			}
			if tombs > 0 {
				t.Fatalf("%d tombstones still there %v after delete.retention.ms", tombs, time.Since(stamped))
			}

			// A record without a key is refused, as Kafka does.
			err = cl.ProduceSync(ctx, &kgo.Record{Topic: "kv", Value: []byte("no key")}).FirstErr()
			if !errors.Is(err, kerr.InvalidRecord) && !errors.Is(err, kerr.CorruptMessage) {
				t.Fatalf("key-less record on a compacted topic: %v, want INVALID_RECORD", err)
			}
		})
	}
}
