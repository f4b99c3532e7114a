package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
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

	// As many empty topics as the bytes allow (v7: a 2-byte empty name and
	// a 4-byte empty partition array, 13 times that in memory) is refused
	// by the decode budget (decodebound.go) before kmsg allocates them.
	const topics = 100_000
	body := binary.BigEndian.AppendUint32(produceHead(7), topics)
	body = append(body, make([]byte, 6*topics)...)
	var r *request
	n := allocated(3, func() { r = s.decodeRequest(body) })
	if !errors.Is(r.closeErr, errDecodeBudget) {
		t.Fatalf("Produce v7 with %d empty topics: %v, want the decode budget's refusal", topics, r.closeErr)
	}
	t.Logf("Produce v7 with %d empty topics: %d-byte frame refused, %d bytes allocated: %v", topics, len(body), n, r.closeErr)
	if n > 16<<10 {
		t.Fatalf("refusing it allocated %d bytes", n)
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

// worstFrame is one frame built to decode into as much memory per byte
// as a request can: one array of the request (at path, every ancestor
// array holding one element) filled with default elements, or, for a
// flexible version, the request's own tagged fields filled with unknown
// tags.
type worstFrame struct {
	key, version int16
	what         string // the array's path, or "unknown tags"
	body         []byte // header and body, without the size prefix
}

// worstFramesTarget is about how large each worst-case frame is.
const worstFramesTarget = 48 << 10

// worstFrames builds a worst-case frame for every array (nested arrays
// included) of every version of every API the broker serves, single node
// and cluster member alike, with kmsg's own encoder: default elements are
// the smallest a decoder accepts (empty strings and arrays, null
// nullable strings), so the array holds as many elements as
// worstFramesTarget bytes can.
func worstFrames(t testing.TB) []worstFrame {
	f := kmsg.NewRequestFormatter()
	served := maps.Clone(apis)
	maps.Copy(served, clusterAPIs)
	var out []worstFrame
	for _, key := range slices.Sorted(maps.Keys(served)) {
		a := served[key]
		for v := a.min; v <= a.max; v++ {
			encode := func(fill func(reflect.Value)) []byte {
				req := kmsg.RequestForKey(key)
				req.SetVersion(v)
				fill(reflect.ValueOf(req).Elem())
				return f.AppendRequest(nil, req, 1)[4:]
			}
			typ := reflect.TypeOf(kmsg.RequestForKey(key)).Elem()
			for _, path := range arrayPaths(typ, nil) {
				l1 := encode(func(r reflect.Value) { fillPath(r, path, 1) })
				l2 := encode(func(r reflect.Value) { fillPath(r, path, 2) })
				d := len(l2) - len(l1)
				if d <= 0 { // the array is not in this version
					continue
				}
				n := (worstFramesTarget - len(l1)) / d
				out = append(out, worstFrame{key, v, pathName(typ, path),
					encode(func(r reflect.Value) { fillPath(r, path, n) })})
			}
			kreq := kmsg.RequestForKey(key)
			kreq.SetVersion(v)
			if kreq.IsFlexible() {
				// Distinct keys from 1000 on: two bytes each, an empty
				// value one more; none is a tag kmsg knows.
				n := worstFramesTarget / 3
				out = append(out, worstFrame{key, v, "unknown tags", encode(func(r reflect.Value) {
					tags := r.FieldByName("UnknownTags").Addr().Interface().(*kmsg.Tags)
					for i := range n {
						tags.Set(uint32(1000+i), nil)
					}
				})})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no worst-case frames built")
	}
	return out
}

// arrayPaths lists the field-index paths from struct type typ to each
// array (a slice other than []byte) it holds, through nested structs
// and the elements of arrays of structs.
func arrayPaths(typ reflect.Type, prefix []int) [][]int {
	var out [][]int
	for i := range typ.NumField() {
		ft := typ.Field(i)
		if !ft.IsExported() {
			continue
		}
		p := append(slices.Clone(prefix), i)
		switch t := ft.Type; {
		case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
			out = append(out, p)
			if t.Elem().Kind() == reflect.Struct {
				out = append(out, arrayPaths(t.Elem(), p)...)
			}
		case t.Kind() == reflect.Struct && t != reflect.TypeFor[kmsg.Tags]():
			out = append(out, arrayPaths(t, p)...)
		case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
			out = append(out, arrayPaths(t.Elem(), p)...)
		}
	}
	return out
}

// fillPath sets the array at path in struct v to n default elements,
// each array on the way to one.
func fillPath(v reflect.Value, path []int, n int) {
	f := v.Field(path[0])
	switch f.Kind() {
	case reflect.Pointer:
		if f.IsNil() {
			f.Set(newDefault(f.Type().Elem()).Addr())
		}
		fillPath(f.Elem(), path[1:], n)
	case reflect.Struct:
		fillPath(f, path[1:], n)
	case reflect.Slice:
		if len(path) == 1 {
			s := reflect.MakeSlice(f.Type(), 0, n)
			elem := newDefault(f.Type().Elem())
			for range n {
				s = reflect.Append(s, elem)
			}
			f.Set(s)
			return
		}
		f.Set(reflect.Append(reflect.MakeSlice(f.Type(), 0, 1), newDefault(f.Type().Elem())))
		fillPath(f.Index(0), path[1:], n)
	}
}

// newDefault returns an addressable zero value of t with kmsg's
// defaults set (Default, when t has it).
func newDefault(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if d, ok := p.Interface().(interface{ Default() }); ok {
		d.Default()
	}
	return p.Elem()
}

// pathName spells a field-index path as Go field names.
func pathName(typ reflect.Type, path []int) string {
	var names []string
	for _, i := range path {
		f := typ.Field(i)
		names = append(names, f.Name)
		typ = f.Type
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
	}
	return strings.Join(names, ".")
}

// TestDecodedSizeBoundedEveryAPI decodes a worst-case frame (worstFrames)
// for every array of every version of every served API and checks that
// what decoding allocates stays within maxDecodedPerByte times the frame
// plus decodeBudgetSlack, whether the frame is decoded or refused. It
// logs the worst ratio of each API.
//
// Before the decode budget (decodebound.go), with 48 KiB frames: worst
// overall 52.2x (unknown tagged fields, three bytes each, in any flexible
// version: ListGroups v3, 50,166 bytes decoded into 2,620,776), worst
// through arrays 26.7x (StopReplica v3 Topics), 21.3x Produce v10
// Topics, 16x DescribeGroups v5 Groups. With it: 8.0x (CreateACLs v1
// Creations, 49,134 bytes into 393,648, and other non-flexible arrays of
// empty strings), the frames above that refused after allocating under
// 1 KiB.
func TestDecodedSizeBoundedEveryAPI(t *testing.T) {
	if raceEnabled {
		t.Skip("measures bytes allocated, which the race detector changes; make unit runs it")
	}
	s := newFuzzServer(t)
	s.apis = clusterAPIs
	for _, table := range []apiTable{apis, clusterAPIs} {
		for key := range table {
			if _, ok := requestShapes[key]; !ok {
				t.Errorf("%s is served but has no wire shape (decodebound_gen.go)", kmsg.NameForKey(key))
			}
		}
	}
	type worst struct {
		ratio float64
		what  string
	}
	perAPI := map[int16]worst{}
	var overall, arrays worst // arrays: the worst without unknown tags
	for _, f := range worstFrames(t) {
		var r *request
		n := allocated(2, func() { r = s.decodeRequest(f.body) })
		ratio := float64(n) / float64(len(f.body))
		what := fmt.Sprintf("%s v%d %s (%d-byte frame, %d bytes decoded, refused: %v)",
			kmsg.NameForKey(f.key), f.version, f.what, len(f.body), n, r.closeErr != nil)
		if ratio > perAPI[f.key].ratio {
			perAPI[f.key] = worst{ratio, what}
		}
		if ratio > overall.ratio {
			overall = worst{ratio, what}
		}
		if ratio > arrays.ratio && f.what != "unknown tags" {
			arrays = worst{ratio, what}
		}
		if n > uint64(maxDecodedPerByte*len(f.body)+decodeBudgetSlack) {
			t.Errorf("%s: %.1f bytes decoded per frame byte, above %d", what, ratio, maxDecodedPerByte)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(perAPI)) {
		t.Logf("%-26s worst %5.1fx: %s", kmsg.NameForKey(key), perAPI[key].ratio, perAPI[key].what)
	}
	t.Logf("worst overall %.1fx: %s", overall.ratio, overall.what)
	t.Logf("worst of the arrays %.1fx: %s", arrays.ratio, arrays.what)
}

// TestDecodedSizeCoversKmsg checks the decode budget's estimate
// (decodedSize) against what kmsg really allocates, on every worst-case
// frame: never below it (else a frame could pass the budget and decode
// into more), and not so far above it that real requests are refused.
func TestDecodedSizeCoversKmsg(t *testing.T) {
	if raceEnabled {
		t.Skip("measures bytes allocated, which the race detector changes; make unit runs it")
	}
	worstOver := 0.0
	for _, f := range worstFrames(t) {
		hdr := 10 // key, version, correlation id, null client id
		kreq := kmsg.RequestForKey(f.key)
		kreq.SetVersion(f.version)
		if kreq.IsFlexible() {
			hdr++ // no header tags
		}
		body := f.body[hdr:]
		est := decodedSize(f.key, f.version, body, math.MaxInt64)
		var err error
		n := allocated(2, func() {
			r := kmsg.RequestForKey(f.key)
			r.SetVersion(f.version)
			err = r.ReadFrom(body)
		})
		what := fmt.Sprintf("%s v%d %s (%d-byte frame)", kmsg.NameForKey(f.key), f.version, f.what, len(f.body))
		if err != nil {
			t.Errorf("%s: kmsg refuses the frame: %v", what, err)
			continue
		}
		if uint64(est) < n {
			t.Errorf("%s: estimated %d bytes decoded, kmsg allocated %d", what, est, n)
		}
		over := float64(est) / float64(n)
		worstOver = max(worstOver, over)
		if est > 2*int64(n)+4<<10 {
			t.Errorf("%s: estimated %d bytes decoded, more than twice the %d kmsg allocated", what, est, n)
		}
	}
	t.Logf("largest estimate / allocation: %.2f", worstOver)
}

// FuzzDecodeBudget walks arbitrary bodies as every served request.
// Invariants checked:
//   - the walk never panics;
//   - stopping at a limit changes no verdict: decodedSize with a limit is
//     above it exactly when the full estimate is.
func FuzzDecodeBudget(f *testing.F) {
	for _, b := range seedRequests() {
		f.Add(b)
	}
	for i, w := range worstFrames(f) {
		if i%17 == 0 {
			f.Add(w.body)
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 4 {
			return
		}
		key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
		body := frame[4:]
		full := decodedSize(key, version, body, math.MaxInt64)
		for _, limit := range []int64{0, 1 << 10, int64(len(body)), 8 * int64(len(body))} {
			if got := decodedSize(key, version, body, limit); (got > limit) != (full > limit) {
				t.Fatalf("key %d v%d: limit %d: %d, full estimate %d", key, version, limit, got, full)
			}
		}
	})
}

// BenchmarkDecodeBudget is the walk's cost on the requests a broker sees
// most: a Produce of partitions=N partitions (1 KiB of records each) and
// a follower's Fetch of as many. It must not allocate.
func BenchmarkDecodeBudget(b *testing.B) {
	f := kmsg.NewRequestFormatter()
	for _, parts := range []int{1, 100} {
		prod := kmsg.NewPtrProduceRequest()
		prod.SetVersion(9)
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "events"
		fetch := kmsg.NewPtrFetchRequest()
		fetch.SetVersion(12)
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "events"
		for i := range parts {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition, pp.Records = int32(i), make([]byte, 1024)
			pt.Partitions = append(pt.Partitions, pp)
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition = int32(i)
			ft.Partitions = append(ft.Partitions, fp)
		}
		prod.Topics = append(prod.Topics, pt)
		fetch.Topics = append(fetch.Topics, ft)
		for _, req := range []kmsg.Request{prod, fetch} {
			frame := f.AppendRequest(nil, req, 1)[4:]
			hdr := 11 // flexible header, null client id
			b.Run(fmt.Sprintf("api=%s/partitions=%d", kmsg.NameForKey(req.Key()), parts), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(frame)))
				for b.Loop() {
					if err := decodeBudget(req.Key(), req.GetVersion(), frame[hdr:], len(frame)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
