package compact

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/sluice/sluice/record"
)

var seedFlag = flag.Uint64("compact.seed", 0, "seed of TestProperty (0: from the clock)")

var allCodecs = []int{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

// randomLog builds a log of n records over keys distinct keys, in batches
// of 1..8 records with random codecs, some tombstones and key-less
// records, and returns it with its records in offset order.
func randomLog(rng *rand.Rand, n, keys int) ([]byte, []kv) {
	var log []byte
	var all []kv
	for off := 0; off < n; {
		size := min(1+rng.IntN(8), n-off)
		recs := make([]kv, size)
		for i := range recs {
			ts := int64(1000 + off + i)
			switch x := rng.IntN(20); {
			case x == 0:
				recs[i] = nokey(fmt.Sprint("nk", off+i), ts)
			case x <= 3:
				recs[i] = tomb(fmt.Sprint("k", rng.IntN(keys)), ts)
			default:
				recs[i] = r(fmt.Sprint("k", rng.IntN(keys)), fmt.Sprint("v", off+i), ts)
			}
		}
		o := opts{codec: allCodecs[rng.IntN(len(allCodecs))], xerial: rng.IntN(2) == 0}
		log = appendBatch(log, int64(off), o, recs...)
		all = append(all, recs...)
		off += size
	}
	return log, all
}

// latest is the expected result of cleaning all: the latest record of each
// key in offset order, tombstones included when keepTombstones.
func latest(all []kv, keepTombstones bool) []got {
	last := map[string]int{}
	for i, x := range all {
		if x.Key != nil {
			last[string(x.Key)] = i
		}
	}
	var out []got
	for i, x := range all {
		if x.Key == nil || last[string(x.Key)] != i || (x.Value == nil && !keepTombstones) {
			continue
		}
		out = append(out, got{Offset: int64(i), Key: string(x.Key), Value: string(x.Value), Tombstone: x.Value == nil, Ts: x.Ts})
	}
	return out
}

// TestProperty cleans random logs and checks: the output passes
// ValidateCleaned and every CRC, iterates with record.Iter, its offsets
// increase strictly and are input offsets, and it holds exactly the latest
// record per key (tombstones until their horizon). It does so in one round
// with a large map, and in several rounds with a map that holds a tenth of
// the keys, which must end in the same log contents.
func TestProperty(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -compact.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	iters, maxN := 30, 400
	if raceEnabled {
		iters, maxN = 4, 100
	}
	for iter := 0; iter < iters; iter++ {
		n, keys := 1+rng.IntN(maxN), 1+rng.IntN(60)
		log, all := randomLog(rng, n, keys)
		rules := Rules{Now: 5000, DeleteRetentionMs: 1000}

		out, _ := clean(t, log, mib, 0, rules)
		if g, want := readLog(t, out), latest(all, true); !reflect.DeepEqual(g, want) {
			t.Fatalf("iter %d (n=%d keys=%d): one round\ngot  %v\nwant %v", iter, n, keys, g, want)
		}
		// Before the horizon nothing changes; at it the tombstones go.
		again, _ := clean(t, out, mib, 0, Rules{Now: 5999, DeleteRetentionMs: 1000})
		if string(again) != string(out) {
			t.Fatalf("iter %d: a second cleaning before the horizon changed the log", iter)
		}
		gone, _ := clean(t, out, mib, 0, Rules{Now: 6000, DeleteRetentionMs: 1000})
		if g, want := readLog(t, gone), latest(all, false); !reflect.DeepEqual(g, want) {
			t.Fatalf("iter %d: after the horizon\ngot  %v\nwant %v", iter, g, want)
		}

		// Bounded memory: rounds with a small map converge to the same.
		slots := max(4, keys/10+1)
		m := NewOffsetMapLoad(slots*BytesPerEntry, 0.9)
		cur, start := log, int64(0)
		for round := 0; ; round++ {
			if round > n+1 {
				t.Fatalf("iter %d: no progress after %d rounds", iter, round)
			}
			m.Clear()
			last, full, err := Build(m, cur, start)
			if err != nil {
				t.Fatal(err)
			}
			if cur, _, err = Filter(nil, m, cur, &rules); err != nil {
				t.Fatal(err)
			}
			readLog(t, cur)
			if !full {
				break
			}
			start = last + 1
		}
		if g, want := readLog(t, cur), latest(all, true); !reflect.DeepEqual(g, want) {
			t.Fatalf("iter %d: rounds with %d slots\ngot  %v\nwant %v", iter, slots, g, want)
		}
	}
}
