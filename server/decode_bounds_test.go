package server

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allocated returns the bytes the heap handed out per run of f, averaged
// over runs so that what other goroutines of the test binary allocate
// meanwhile (TotalAlloc is process-wide) weighs little, with GOMAXPROCS 1
// as testing.AllocsPerRun does.
func allocated(runs int, f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f() // warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// produceHead is a Produce request's header and body up to its topic
// count: key 0, the version, correlation id 1, client id "x", then a null
// transactional id, acks and timeout.
func produceHead(version int16) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = append(b, 0, 1, 'x')
	if version >= 9 { // flexible: header tags, compact null string
		b = append(b, 0, 0)
	} else {
		b = append(b, 0xff, 0xff)
	}
	b = binary.BigEndian.AppendUint16(b, 1)    // acks
	return binary.BigEndian.AppendUint32(b, 1) // timeout
}

// TestDecodeArrayCountsBoundedByBytes shows that kmsg (v1.15, through
// kbin's ArrayLen and its generated per-element minimum sizes) refuses an
// array count larger than the bytes left could hold before allocating
// anything for it, so a tiny frame announcing 2^31-1 topics costs a few
// hundred bytes, not gigabytes. The server therefore does not pre-validate
// counts. What is left is the ratio between a decoded element and its
// smallest encoding (a Produce topic is 2 to 18 bytes on the wire and
// about 80 in memory); that ratio is measured here and bounded, so a
// frame of n bytes decodes into at most maxDecodeRatio*n bytes.
func TestDecodeArrayCountsBoundedByBytes(t *testing.T) {
	s := newFuzzServer(t)
	for _, version := range []int16{7, 9, 11} {
		var count []byte
		if version >= 9 {
			count = binary.AppendUvarint(nil, math.MaxInt32) // compact: n+1
		} else {
			count = binary.BigEndian.AppendUint32(nil, math.MaxInt32)
		}
		body := append(append(produceHead(version), count...), make([]byte, 16)...)
		var r *request
		n := allocated(100, func() { r = s.decodeRequest(body) })
		if r.closeErr == nil {
			t.Fatalf("v%d: 2^31-1 topics in %d bytes accepted", version, len(body))
		}
		if n > 16<<10 {
			t.Fatalf("v%d: decoding a %d-byte frame announcing 2^31-1 topics allocated %d bytes", version, len(body), n)
		}
		t.Logf("v%d: %d-byte frame, 2^31-1 topics: rejected (%v), %d bytes allocated", version, len(body), r.closeErr, n)
	}

	// The worst case that decodes: as many empty topics as the bytes
	// allow (v7: a 2-byte empty name and a 4-byte empty partition array).
	const topics = 100_000
	body := binary.BigEndian.AppendUint32(produceHead(7), topics)
	body = append(body, make([]byte, 6*topics)...)
	var r *request
	n := allocated(3, func() { r = s.decodeRequest(body) })
	if r.closeErr != nil {
		t.Fatal(r.closeErr)
	}
	ratio := float64(n) / float64(len(body))
	t.Logf("Produce v7 with %d empty topics: %d-byte frame decoded into %d bytes (%.1fx)", topics, len(body), n, ratio)
	if ratio > maxDecodeRatio {
		t.Fatalf("decode ratio %.1f above %d", ratio, maxDecodeRatio)
	}
}

// maxDecodeRatio bounds decoded bytes per frame byte in the tests here.
const maxDecodeRatio = 64

// TestDecodeRandomFramesAllocationBounded decodes random bodies for every
// served API key and version, with int32 and varint fields that are often
// huge, and checks that none allocates more than maxDecodeRatio times its
// size plus a constant. The seed is printed; set it to replay.
func TestDecodeRandomFramesAllocationBounded(t *testing.T) {
	s := newFuzzServer(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	worst := 0.0
	for key, api := range apis {
		for v := api.min; v <= api.max; v++ {
			for range 20 {
				b := binary.BigEndian.AppendUint16(nil, uint16(key))
				b = binary.BigEndian.AppendUint16(b, uint16(v))
				b = append(b, 0, 0, 0, 1, 0xff, 0xff) // corr 1, null client id
				if kreq := kmsg.RequestForKey(key); kreq != nil {
					kreq.SetVersion(v)
					if kreq.IsFlexible() {
						b = append(b, 0)
					}
				}
				size := 16 + rng.IntN(4096)
				for len(b) < size {
					switch rng.IntN(4) {
					case 0: // a count a little above what is left
						b = binary.BigEndian.AppendUint32(b, uint32(size-len(b)+rng.IntN(64)))
					case 1:
						b = binary.AppendUvarint(b, uint64(rng.Uint32()))
					case 2:
						b = append(b, 0, 0, 0, 0)
					default:
						b = append(b, byte(rng.Uint32()))
					}
				}
				n := allocated(10, func() { s.decodeRequest(b) })
				ratio := float64(n) / float64(len(b))
				worst = max(worst, ratio)
				if n > uint64(maxDecodeRatio*len(b))+64<<10 {
					t.Fatalf("%s v%d: %d-byte body allocated %d bytes (seed %d)", kmsg.NameForKey(key), v, len(b), n, seed)
				}
			}
		}
	}
	t.Logf("worst decoded bytes per frame byte: %.1f", worst)
}
