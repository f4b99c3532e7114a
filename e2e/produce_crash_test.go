package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceCrashValue is record i of TestProduceSurvivesSIGKILL: it names i
// and is padded to 512 bytes, so that a few seconds of producing fill
// several Pebble memtables and segment pages.
func produceCrashValue(i int) []byte {
	v := fmt.Sprintf("r%09d/", i)
	return []byte(v + strings.Repeat("y", 512-len(v)))
}

// produceCrashIndex reads i back from produceCrashValue(i); ok is false for
// a value this test did not produce.
func produceCrashIndex(v []byte) (int, bool) {
	var i int
	if _, err := fmt.Sscanf(string(v), "r%09d/", &i); err != nil || i < 0 || string(v) != string(produceCrashValue(i)) {
		return 0, false
	}
	return i, true
}

// producedAt is where the broker said it wrote an acknowledged record.
type producedAt struct {
	partition int32
	offset    int64
}

// TestProduceSurvivesSIGKILL: for each of the segment and pebble backends,
// one franz-go producer with its defaults (idempotent, acks=all, up to 5
// requests in flight per broker) writes numbered records to a topic of 3
// partitions while the broker is SIGKILLed at random moments and
// restarted; the producer keeps running across the restarts and retries
// what was not answered, as an application's producer would. At the end
// every acknowledged record is in the log exactly once, at the partition
// and offset it was acknowledged with, and no record appears twice (an
// idempotent retry of a batch the killed broker had written must be
// answered as a duplicate, not written again). Bounded: 3 kills per
// backend, at most 600,000 records and about 15 s per backend. The seed is
// printed; SLUICE_SEED replays one.
func TestProduceSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	if s := os.Getenv("SLUICE_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (SLUICE_SEED=%d replays it)", seed, seed)
	for _, backend := range []string{"segment", "pebble"} {
		t.Run("backend="+backend, func(t *testing.T) {
			produceThroughKills(t, backend, rand.New(rand.NewSource(seed)))
		})
	}
}

func produceThroughKills(t *testing.T, backend string, rng *rand.Rand) {
	const (
		topic      = "crash"
		partitions = 3
		kills      = 3
		maxRecords = 600_000
	)
	dir := filepath.Join(t.TempDir(), "data")
	b := startBroker(t, dir, "storage.backend="+backend)
	adm, done := adminFor(t, b.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cancel()
	done()

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(time.Millisecond),
		// Bounded: a record not acknowledged within this fails; the
		// broker is down for a second or two at each kill.
		kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var (
		mu       sync.Mutex
		acked    = map[int]producedAt{}
		failed   int // records failed by stopProducing (context.Canceled)
		firstErr error
		// lost counts the records failed otherwise: the producer must
		// ride out every restart, so any is a failure of the test.
		lost      int
		firstLost error
	)
	prodCtx, stopProducing := context.WithCancel(context.Background())
	defer stopProducing()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < maxRecords && prodCtx.Err() == nil; i++ {
			// At most about 40,000 records (20 MB) a second, so that
			// the records last until the last kill on a fast backend;
			// Produce also blocks while the client's buffer is full.
			if i%40 == 39 {
				time.Sleep(time.Millisecond)
			}
			cl.Produce(prodCtx, &kgo.Record{Value: produceCrashValue(i)}, func(r *kgo.Record, err error) {
				idx, _ := produceCrashIndex(r.Value)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if errors.Is(err, context.Canceled) {
						failed++
						if firstErr == nil {
							firstErr = err
						}
						return
					}
					lost++
					if firstLost == nil {
						firstLost = err
					}
					return
				}
				acked[idx] = producedAt{r.Partition, r.Offset}
			})
		}
	}()

	var atLastKill int // acknowledged when the last kill was done
	for k := 1; k <= kills; k++ {
		time.Sleep(time.Duration(500+rng.Intn(1500)) * time.Millisecond)
		mu.Lock()
		before := len(acked)
		mu.Unlock()
		b.kill()
		mu.Lock()
		atLastKill = len(acked)
		mu.Unlock()
		b.restart()
		t.Logf("kill %d: %d records acknowledged before it", k, before)
	}
	// Produce a little more against the restarted broker, then stop and
	// wait for every record handed to the client to be answered.
	time.Sleep(500 * time.Millisecond)
	stopProducing()
	wg.Wait()
	flushCtx, flushDone := context.WithTimeout(context.Background(), 60*time.Second)
	defer flushDone()
	if err := cl.Flush(flushCtx); err != nil {
		t.Fatalf("flush after the last restart: %v", err)
	}
	mu.Lock()
	t.Logf("%s: %d records acknowledged, %d failed (first error: %v)", backend, len(acked), failed, firstErr)
	mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged: the kills tested nothing")
	}
	if lost > 0 {
		t.Errorf("%d records failed across the restarts (first error: %v)", lost, firstLost)
	}
	if len(acked) <= atLastKill {
		t.Errorf("no record acknowledged after the last restart (%d before it, %d in all): the producer did not ride out the kills", atLastKill, len(acked))
	}

	seen := readProduceCrashTopic(t, b.addr, topic, partitions)
	for idx, at := range acked {
		got, ok := seen[idx]
		switch {
		case !ok:
			t.Errorf("record %d acknowledged at %d/%d is gone", idx, at.partition, at.offset)
		case len(got) != 1:
			t.Errorf("record %d acknowledged at %d/%d is in the log %d times: %v", idx, at.partition, at.offset, len(got), got)
		case got[0] != at:
			t.Errorf("record %d acknowledged at %d/%d is at %d/%d", idx, at.partition, at.offset, got[0].partition, got[0].offset)
		}
	}
	for idx, got := range seen {
		if len(got) > 1 {
			if _, ok := acked[idx]; !ok {
				t.Errorf("record %d (not acknowledged) is in the log %d times: %v", idx, len(got), got)
			}
		}
	}
}

// readProduceCrashTopic consumes every partition of topic from its start
// to its end offset and returns where each record of the test is; it
// fails on a record the test did not produce.
func readProduceCrashTopic(t *testing.T, addr, topic string, partitions int32) map[int][]producedAt {
	t.Helper()
	adm, done := adminFor(t, addr)
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]kgo.Offset{}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		want[o.Partition] = kgo.NewOffset().AtStart()
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	if len(want) != int(partitions) {
		t.Fatalf("%s has %d partitions, want %d", topic, len(want), partitions)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[int][]producedAt{}
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s back: %v; left to read: %v", topic, err, remaining)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			idx, ok := produceCrashIndex(r.Value)
			if !ok {
				t.Fatalf("%d/%d: value %.40q is no record this test produced", r.Partition, r.Offset, r.Value)
			}
			seen[idx] = append(seen[idx], producedAt{r.Partition, r.Offset})
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
	}
	return seen
}
