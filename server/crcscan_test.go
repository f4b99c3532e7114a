package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/record"
)

// scanFrame is the body of a request frame (header and request) as a
// client sends it after the size.
func scanFrame(req kmsg.Request, clientID string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, 42)
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0) // no header tags
	}
	return req.AppendTo(b)
}

// scanBatches is n valid batches of recs records each, record.AppendBatch's.
func scanBatches(n, recs int) []byte {
	val := bytes.Repeat([]byte("v"), 100)
	rs := make([]record.BuildRecord, recs)
	for i := range rs {
		rs[i] = record.BuildRecord{Key: []byte{byte(i)}, Value: val, Timestamp: 1700000000000}
	}
	var b []byte
	for range n {
		b = record.AppendBatch(b, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, rs)
	}
	return b
}

// scanProduce is a Produce request of version v: two topics, the first
// with partitions holding parts[i] (nil: null records).
func scanProduce(v int16, parts ...[]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	req.Acks, req.TimeoutMillis = -1, 5000
	tid := "txn"
	req.TransactionID = &tid
	for ti, name := range []string{"first", "second-topic"} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = name
		for i, recs := range parts {
			if ti == 1 && i > 0 {
				break
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(i)
			rp.Records = recs
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// scanIn feeds frame to a new scan in pieces of random sizes up to max.
func scanIn(frame []byte, rng *rand.Rand, max int) *crcScan {
	var s crcScan
	for have := 0; have < len(frame); {
		have = min(len(frame), have+1+rng.IntN(max))
		s.advance(frame[:have])
		s.advance(frame[:have]) // again with nothing new: no change
	}
	s.finish(frame)
	return &s
}

// vouched decodes frame as the server does and lists, per records field in
// request order, what the scan vouches for.
func vouched(t *testing.T, s *crcScan, frame []byte) []record.Prechecked {
	t.Helper()
	r := (&Server{apis: apis}).decodeRequest(frame)
	if r.closeErr != nil {
		t.Fatalf("decode: %v", r.closeErr)
	}
	var got []record.Prechecked
	k := 0
	for _, rt := range r.kreq.(*kmsg.ProduceRequest).Topics {
		for _, rp := range rt.Partitions {
			got = append(got, s.checked(frame, k, rp.Records))
			k++
		}
	}
	return got
}

// reCRC recomputes a batch's CRC after a test changed its bytes.
func reCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], record.Batch(b).ComputeCRC())
	return b
}

func TestCRCScanVouchesForWholeValidBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	good := scanBatches(3, 20)
	badCRC := scanBatches(2, 5)
	badCRC[len(badCRC)-1] ^= 1 // the second batch's last byte
	pastEnd := scanBatches(1, 5)
	binary.BigEndian.PutUint32(pastEnd[8:], uint32(len(pastEnd))) // batchLength too long by 12
	badMagic := scanBatches(1, 5)
	badMagic[16] = 1
	trailing := append(scanBatches(1, 5), 1, 2, 3) // bytes after the last batch that no batch frames
	shortHeader := scanBatches(1, 5)[:20]
	// A CRC that matches over records the walk refuses: one record
	// fewer than recordCount, then a last record cut short.
	tooFew := scanBatches(1, 5)
	binary.BigEndian.PutUint32(tooFew[57:], 6)
	reCRC(tooFew)
	cut := scanBatches(1, 5)
	cut = cut[:len(cut)-1]
	binary.BigEndian.PutUint32(cut[8:], uint32(len(cut)-12))
	reCRC(cut)
	zipped := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1, Codec: record.CodecGzip},
		[]record.BuildRecord{{Value: []byte("z"), Timestamp: 5}})
	nullKey := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, []record.BuildRecord{
		{Key: []byte("k"), Value: []byte("a"), Timestamp: 1700000000300},
		{Value: []byte("b"), Timestamp: 1700000000100},
		{Key: []byte("k"), Value: []byte("c"), Timestamp: record.NoTimestamp},
	})
	parts := [][]byte{good, badCRC, nil, {}, pastEnd, badMagic, trailing, shortHeader, scanBatches(1, 1), tooFew, cut, zipped, nullKey}
	type want struct{ crc, records bool }
	wants := []want{{true, true}, {}, {}, {}, {}, {}, {}, {}, {true, true}, {true, false}, {true, false}, {true, false}, {true, true},
		{true, true}} // the second topic's one partition: good
	for v := int16(3); v <= 11; v++ {
		frame := scanFrame(scanProduce(v, parts...), "client")
		for _, piece := range []int{1, 7, 300, 1 << 20} {
			s := scanIn(frame, rng, piece)
			if s.off || s.step != scanDone {
				t.Fatalf("v%d pieces %d: scan off %v, step %d", v, piece, s.off, s.step)
			}
			got := vouched(t, s, frame)
			if len(got) != len(wants) {
				t.Fatalf("v%d: %d records fields, want %d", v, len(got), len(wants))
			}
			for i, w := range wants {
				if got[i].CRC != w.crc || got[i].Records != w.records {
					t.Errorf("v%d pieces %d: records field %d vouched CRC %v records %v, want %v %v",
						v, piece, i, got[i].CRC, got[i].Records, w.crc, w.records)
				}
			}
			if g := got[0]; g.MinTs != 1700000000000 || g.MaxTs != 1700000000000 || g.NullKey {
				t.Errorf("v%d: good batches: %+v", v, g)
			}
			if g := got[12]; g.MinTs != 1700000000100 || g.MaxTs != 1700000000300 || !g.NullKey {
				t.Errorf("v%d: null key batch: %+v", v, g)
			}
		}
	}
}

// A batch's bytes are vouched for only where the handler finds them: other
// bytes of the same length, or the same bytes under another index, are not.
func TestCRCScanChecksIdentity(t *testing.T) {
	good := scanBatches(1, 3)
	frame := scanFrame(scanProduce(9, good, good), "")
	s := scanIn(frame, rand.New(rand.NewPCG(3, 4)), 64)
	if got := vouched(t, s, frame); !got[0].CRC || !got[1].CRC {
		t.Fatalf("vouched %+v, want both", got)
	}
	copyOf := bytes.Clone(good)
	if s.checked(frame, 0, copyOf).CRC {
		t.Error("a copy of the bytes was vouched for")
	}
	r := (&Server{apis: apis}).decodeRequest(frame)
	second := r.kreq.(*kmsg.ProduceRequest).Topics[0].Partitions[1].Records
	if s.checked(frame, 0, second).CRC || s.checked(frame, 99, second).CRC || s.checked(frame, 1, nil).CRC {
		t.Error("records were vouched for under another index")
	}
}

func TestCRCScanOtherRequests(t *testing.T) {
	for _, req := range []kmsg.Request{kmsg.NewPtrFetchRequest(), kmsg.NewPtrMetadataRequest()} {
		frame := scanFrame(req, "c")
		s := scanIn(frame, rand.New(rand.NewPCG(5, 6)), 3)
		if !s.off {
			t.Errorf("%s: scan still on", kmsg.NameForKey(req.Key()))
		}
	}
	old := scanProduce(3, scanBatches(1, 1))
	old.SetVersion(2) // below what the broker serves
	frame := scanFrame(old, "c")
	if s := scanIn(frame, rand.New(rand.NewPCG(7, 8)), 5); !s.off {
		t.Error("Produce v2: scan still on")
	}
}

// A hostile request claims huge counts and lengths: the scan neither
// allocates for them nor vouches for anything, and ends with the bytes.
func TestCRCScanHostileCounts(t *testing.T) {
	frame := scanFrame(scanProduce(7, scanBatches(1, 2)), "c")
	// The topics count of v7 follows the header (2+2+4+2+1), the
	// transactional id (2+3), acks and timeout (6).
	at := 2 + 2 + 4 + 2 + 1 + 2 + 3 + 6
	if got := int32(binary.BigEndian.Uint32(frame[at:])); got != 2 {
		t.Fatalf("topics count at %d reads %d, want 2", at, got)
	}
	binary.BigEndian.PutUint32(frame[at:], 1<<31-1)
	s := scanIn(frame, rand.New(rand.NewPCG(9, 10)), 100)
	if s.step == scanDone {
		t.Error("scan finished a request that promised 2^31-1 topics")
	}
	if len(s.spans) > 3 {
		t.Errorf("%d spans from a 3-partition request", len(s.spans))
	}
	allocs := testing.AllocsPerRun(20, func() {
		var s crcScan
		s.advance(frame)
	})
	if allocs > 3 {
		t.Errorf("%.0f allocations per scan, want at most 3 (the list of spans growing)", allocs)
	}
}

// crcScanSeeds are Produce requests of the three shapes (v3-8, v9-10,
// v11) the mutation test starts from (the fuzzer from crcScanFuzzSeeds).
func crcScanSeeds() [][]byte {
	return [][]byte{
		scanFrame(scanProduce(3, scanBatches(2, 3), nil), "c"),
		scanFrame(scanProduce(9, scanBatches(1, 4)), ""),
		scanFrame(scanProduce(11, scanBatches(3, 1), scanBatches(1, 2)), "x"),
	}
}

// checkCRCScan is FuzzCRCScan's property on one input.
func checkCRCScan(t *testing.T, frame []byte) {
	var whole crcScan
	whole.advance(frame)
	seed := uint64(len(frame))
	pieces := scanIn(frame, rand.New(rand.NewPCG(seed, seed)), 17)
	if whole.off != pieces.off || whole.step != pieces.step || len(whole.spans) != len(pieces.spans) {
		t.Fatalf("whole: off %v step %d spans %d; in pieces: off %v step %d spans %d",
			whole.off, whole.step, len(whole.spans), pieces.off, pieces.step, len(pieces.spans))
	}
	for i, sp := range whole.spans {
		if sp != pieces.spans[i] {
			t.Fatalf("span %d: whole %+v, in pieces %+v", i, sp, pieces.spans[i])
		}
		if !sp.pre.CRC {
			if sp.pre.Records {
				t.Fatalf("span %d: records vouched for without the CRCs", i)
			}
			continue
		}
		recs := frame[sp.start:sp.end]
		facts := record.Prechecked{CRC: true}
		facts.StartRecords()
		for pos := 0; pos < len(recs); {
			b := record.Batch(recs[pos:])
			size := b.Size()
			if size < record.HeaderSize || size > len(recs)-pos || b.Magic() != record.Magic || b.ComputeCRC() != b.CRC() {
				t.Fatalf("span %d vouched for, batch at %d: size %d magic %d", i, pos, size, b.Magic())
			}
			b = b[:size]
			if b.Codec() != record.CodecNone {
				facts.Records = false
			} else if _, err := record.Validate(b); err != nil {
				facts.Records = false
			} else {
				var it record.Iter
				for it.Reset(b); it.Next(); {
					facts.Note(b.BaseTimestamp()+it.Record().TimestampDelta, it.Record().Key == nil)
				}
			}
			pos += size
		}
		if !facts.Records {
			facts = record.Prechecked{CRC: true}
		}
		if sp.pre.Records != facts.Records || sp.pre.Records && sp.pre != facts {
			t.Fatalf("span %d: scan vouched %+v, the records are %+v", i, sp.pre, facts)
		}
	}
}

// TestCRCScanMutations runs FuzzCRCScan's property over seeded mutations
// of the seeds: bytes overwritten (with a fuzzer's favourite values among
// them), inserted and cut off.
func TestCRCScanMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	seeds := crcScanSeeds()
	vals := []uint32{0, 1, 0x7f, 0x80, 0xff, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe, 0x10000}
	for range 20000 {
		f := bytes.Clone(seeds[rng.IntN(len(seeds))])
		for range 1 + rng.IntN(4) {
			switch rng.IntN(3) {
			case 0:
				f[rng.IntN(len(f))] = byte(rng.Uint32())
			case 1:
				binary.BigEndian.PutUint32(f[rng.IntN(len(f)-4):], vals[rng.IntN(len(vals))])
			case 2:
				p := rng.IntN(len(f))
				f = append(f[:p], append([]byte{byte(rng.Uint32())}, f[p:]...)...)
			}
		}
		if rng.IntN(3) == 0 {
			f = f[:rng.IntN(len(f))]
		}
		checkCRCScan(t, f)
	}
}

// crcScanFuzzSeeds are the smallest requests of crcScanSeeds' three
// shapes: one topic, batches of one one-byte record (69 bytes each), 114-
// 174 bytes a frame. The fuzzer stays near them (crcScanFuzzMax) because
// it minimizes every input that finds new coverage, trying O(n²) shorter
// candidates for n bytes and fuzzing nothing meanwhile (up to
// -fuzzminimizetime, 60 s), and each call costs ~0.2 ms in this package,
// nearly all of it copying the coverage counters of the whole test binary
// (~180 KB) after the call, not checkCRCScan's work. From crcScanSeeds' 1.0-1.6 KB frames every
// minimization took the whole minute and the fuzzer sat at a few execs.
func crcScanFuzzSeeds() [][]byte {
	batch := func(n int) []byte {
		var b []byte
		for range n {
			b = record.AppendBatch(b, record.BatchOptions{ProducerID: -1, BaseSequence: -1},
				[]record.BuildRecord{{Value: []byte("v")}})
		}
		return b
	}
	produce := func(v int16, parts ...[]byte) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		for i, recs := range parts {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(i), recs
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return scanFrame(req, "")
	}
	return [][]byte{
		produce(3, batch(1), nil),
		produce(9, batch(2)),
		produce(11, batch(1), batch(1)),
	}
}

// crcScanFuzzMax bounds the fuzzer's inputs (room for three batches), so
// that minimizing one takes seconds, not the minute.
const crcScanFuzzMax = 256

// FuzzCRCScan: on any bytes, in any pieces, the scan never panics, reaches
// the same verdicts whole and in pieces, and vouches only for records every
// batch of which record.Validate frames with a matching CRC.
func FuzzCRCScan(f *testing.F) {
	for _, seed := range crcScanFuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > crcScanFuzzMax {
			t.Skip()
		}
		checkCRCScan(t, frame)
	})
}

// A unit that arrives in many small pieces (here a header of 20,000 tagged
// fields, a byte per read, as a client could send it over TLS) is not read
// again from its start on every piece: the bytes read again stay within a
// small multiple of the frame.
func TestCRCScanSmallPiecesLinear(t *testing.T) {
	req := scanProduce(9, scanBatches(1, 2))
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, 0) // client id ""
	const tags = 20000
	b = binary.AppendUvarint(b, tags)
	for i := range tags {
		b = binary.AppendUvarint(b, uint64(i))
		b = binary.AppendUvarint(b, 0)
	}
	frame := req.AppendTo(b)
	var s crcScan
	for have := 1; have <= len(frame); have++ {
		s.advance(frame[:have])
	}
	s.finish(frame)
	if s.off || s.step != scanDone {
		t.Fatalf("scan off %v, step %d", s.off, s.step)
	}
	if got := vouched(t, &s, frame); !got[0].CRC || !got[0].Records {
		t.Errorf("vouched %+v, want the first records", got)
	}
	if s.reread > 4*len(frame) {
		t.Errorf("read %d bytes again for a %d-byte frame", s.reread, len(frame))
	}
}

// Through a real connection, a real client's batches are checked as they
// arrive (and not again by the partition): their CRCs whatever the codec,
// their records when uncompressed; a batch whose CRC does not match is
// refused as before.
func TestProduceChecksCRCsOnTheRead(t *testing.T) {
	s, addr := startTxnServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cl *kgo.Client
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.SnappyCompression()} {
		var err error
		cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(codec))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if codec == kgo.NoCompression() {
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "scanned"); err != nil {
				t.Fatal(err)
			}
		}
		crcs, walked := s.precheckedCRC.Load(), s.precheckedRecords.Load()
		var recs []*kgo.Record
		for i := range 200 {
			recs = append(recs, &kgo.Record{Topic: "scanned", Partition: int32(i % 2), Value: bytes.Repeat([]byte{byte(i)}, 1000)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		compressed := codec != kgo.NoCompression()
		if s.precheckedCRC.Load() == crcs {
			t.Errorf("compressed %v: no records field had its CRCs checked on the read", compressed)
		}
		if got := s.precheckedRecords.Load() != walked; got == compressed {
			t.Errorf("compressed %v: records walked on the read: %v", compressed, got)
		}
	}

	bad := scanBatches(1, 3)
	bad[bytes.LastIndexByte(bad, 'v')] = 'w' // a value byte: the records still parse
	before := s.precheckedCRC.Load()
	req := produceReq("scanned", 0, -1, 5000)
	req.Topics[0].Partitions[0].Records = bad
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.CorruptMessage.Code {
		t.Errorf("a batch with a bad CRC: error %d, want CORRUPT_MESSAGE", got)
	}
	if s.precheckedCRC.Load() != before {
		t.Error("a batch with a bad CRC was vouched for")
	}
}

// A request made of null records fields (6 bytes each on the wire at v9)
// costs the scan nothing per field: only fields it vouches for, 61 bytes
// at least, are kept.
func TestCRCScanNullFieldsKeepNothing(t *testing.T) {
	parts := make([][]byte, 10000)
	parts[len(parts)-1] = scanBatches(1, 1)
	frame := scanFrame(scanProduce(9, parts...), "c")
	var s crcScan
	s.finish(frame)
	// The second topic's one field is parts[0], null too.
	if s.fields != len(parts)+1 || len(s.spans) != 1 {
		t.Fatalf("%d fields, %d spans kept; want %d fields and 1 span", s.fields, len(s.spans), len(parts)+1)
	}
	if got := vouched(t, &s, frame); got[0].CRC || !got[len(parts)-1].CRC || got[len(parts)].CRC {
		t.Errorf("vouched for field 0 %v, the first topic's last %v, the second topic's %v; want false true false",
			got[0].CRC, got[len(parts)-1].CRC, got[len(parts)].CRC)
	}
	allocs := testing.AllocsPerRun(10, func() {
		var s crcScan
		s.finish(frame)
	})
	if allocs > 2 {
		t.Errorf("%.0f allocations for 10,000 null fields, want at most 2", allocs)
	}
}
