package server

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/zerocopy"
)

// metadataFuzzInput hands out fuzz input bytes, zeros once they run out,
// so every input describes some answer.
type metadataFuzzInput struct{ b []byte }

func (in *metadataFuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *metadataFuzzInput) bytes(n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = in.byte()
	}
	return out
}

func (in *metadataFuzzInput) int32() int32 { return int32(binary.BigEndian.Uint32(in.bytes(4))) }
func (in *metadataFuzzInput) int16() int16 { return int16(binary.BigEndian.Uint16(in.bytes(2))) }

// string is up to max-1 bytes, any bytes (kmsg and the hand encoder copy
// them as they are).
func (in *metadataFuzzInput) string(max int) string { return string(in.bytes(int(in.byte()) % max)) }

// nullableString is nil when the next byte is odd.
func (in *metadataFuzzInput) nullableString(max int) *string {
	if in.byte()&1 != 0 {
		return nil
	}
	s := in.string(max)
	return &s
}

func (in *metadataFuzzInput) int32s(max int) []int32 {
	xs := make([]int32, int(in.byte())%max)
	for i := range xs {
		xs[i] = in.int32()
	}
	return xs
}

// fuzzLocalTopic is a single node's registry topic as localMetadata
// writes it: name, id and the leader epochs of its partitions, which its
// metadata cache already holds (so no partition is opened).
func fuzzLocalTopic(name string, id [16]byte, epochs []int32) *replica.Topic {
	return replica.TopicView(name, id, epochs)
}

// FuzzMetadataEncoding builds a Metadata answer from the fuzz input at a
// version the broker serves (brokers with and without racks, a null or
// set cluster id, topics with any error code, null or set names, ids and
// partitions with any leaders, epochs and replica lists, and topics of a
// single node's registry whose partitions localMetadata writes from the
// topic) and checks, against kmsg, for the hand-written encoder
// (localMetadata.appendTo and the frame localMetadata.response writes):
//
//   - it never panics;
//   - its body is byte for byte what kmsg's AppendTo writes for the same
//     answer, the registry topics' partitions spelled out as kmsg structs
//     (led by this broker, its only replica and ISR, none offline, the
//     cached leader epochs);
//   - kmsg decodes that body at the version into an answer that kmsg
//     encodes back to the same bytes, and whose registry topics have their
//     partitions with this broker as leader;
//   - the framed response (size, correlation id, header tags) is what
//     encodeResponse writes for kmsg's answer;
//   - the size hint is not below the body's size when every topic that is
//     not the registry's has no partitions, as in a single node's answers
//     (a larger cluster answer may outgrow the hint: it only sizes the
//     first buffer).
//
// The answers carry no unknown tags: the broker sets none, and the hand
// encoder writes none.
func FuzzMetadataEncoding(f *testing.F) {
	f.Add(int16(0), []byte{})
	f.Add(int16(-1), bytes.Repeat([]byte{0xfe}, 64))
	// Every version served, each with answers drawn from a fixed seed.
	rng := rand.New(rand.NewPCG(3, 26))
	for v := range apis[apiKeyMetadata].max + 1 {
		for range 6 {
			data := make([]byte, 200+rng.IntN(600))
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			f.Add(v, data)
		}
	}
	f.Fuzz(func(t *testing.T, version int16, data []byte) {
		in := &metadataFuzzInput{b: data}
		v := int16(uint16(version) % uint16(apis[apiKeyMetadata].max+1))
		self := in.int32()

		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = v
		resp.ThrottleMillis = in.int32()
		for range in.byte() % 5 {
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = in.int32(), in.string(64), in.int32()
			b.Rack = in.nullableString(16)
			resp.Brokers = append(resp.Brokers, b)
		}
		resp.ClusterID = in.nullableString(40)
		resp.ControllerID = in.int32()
		resp.AuthorizedOperations = in.int32()

		lm := &localMetadata{self: self}
		local := map[int][]int32{} // resp.Topics index -> a registry topic's epochs
		onlyLocalParts := true
		for i := range int(in.byte() % 6) {
			if in.byte()&1 != 0 {
				var id [16]byte
				copy(id[:], in.bytes(16))
				epochs := in.int32s(20)
				local[i] = epochs
				lm.add(resp, fuzzLocalTopic(in.string(64), id, epochs))
				continue
			}
			mt := kmsg.NewMetadataResponseTopic()
			mt.ErrorCode = in.int16()
			mt.Topic = in.nullableString(64)
			copy(mt.TopicID[:], in.bytes(16))
			mt.IsInternal = in.byte()&1 != 0
			mt.AuthorizedOperations = in.int32()
			for range in.byte() % 4 {
				p := kmsg.NewMetadataResponseTopicPartition()
				p.ErrorCode, p.Partition, p.Leader, p.LeaderEpoch = in.int16(), in.int32(), in.int32(), in.int32()
				p.Replicas, p.ISR = in.int32s(5), in.int32s(5)
				if in.byte()&1 == 0 {
					p.OfflineReplicas = in.int32s(3)
				}
				mt.Partitions = append(mt.Partitions, p)
				onlyLocalParts = false
			}
			lm.addResponse(resp, mt)
		}

		// The same answer as kmsg structs: the registry topics' partitions
		// spelled out here, not by the code under test.
		full := *resp
		full.Topics = append([]kmsg.MetadataResponseTopic(nil), resp.Topics...)
		for i, epochs := range local {
			mt := &full.Topics[i]
			mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(epochs))
			for p, epoch := range epochs {
				mp := &mt.Partitions[p]
				mp.Default()
				mp.Partition, mp.Leader, mp.LeaderEpoch = int32(p), self, epoch
				mp.Replicas, mp.ISR, mp.OfflineReplicas = []int32{self}, []int32{self}, []int32{}
			}
		}
		want := full.AppendTo(nil)

		got := lm.appendTo(nil, resp)
		if !bytes.Equal(got, want) {
			t.Fatalf("v%d: written %d bytes, kmsg writes %d:\n% x\nwant\n% x", v, len(got), len(want), got, want)
		}

		back := kmsg.NewPtrMetadataResponse()
		back.Version = v
		if err := back.ReadFrom(got); err != nil {
			t.Fatalf("v%d: kmsg cannot read the written answer: %v", v, err)
		}
		if again := back.AppendTo(nil); !bytes.Equal(again, got) {
			t.Fatalf("v%d: kmsg reads the answer into one it writes as %d bytes, not the %d written", v, len(again), len(got))
		}
		for i, epochs := range local {
			ps := back.Topics[i].Partitions
			if len(ps) != len(epochs) {
				t.Fatalf("v%d: registry topic %d decodes with %d partitions, want %d", v, i, len(ps), len(epochs))
			}
			for p := range ps {
				if ps[p].Partition != int32(p) || ps[p].Leader != self {
					t.Fatalf("v%d: registry topic %d partition %d decodes as %d led by %d, want led by %d", v, i, p, ps[p].Partition, ps[p].Leader, self)
				}
			}
		}

		const corr = 0x01020304
		var buf bytes.Buffer
		w := zerocopy.NewWriter(&buf)
		out := lm.response(resp)
		out.corr = corr // set by the connection loop
		if err := encodeResponse(w, out); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		frame := buf.Bytes()
		if wantFrame := appendKmsgFrame(nil, corr, &full); !bytes.Equal(frame, wantFrame) {
			t.Fatalf("v%d: framed %d bytes, kmsg frames %d:\n% x\nwant\n% x", v, len(frame), len(wantFrame), frame, wantFrame)
		}

		if onlyLocalParts {
			if hint := localMetadataSize(v, resp, lm.topics); hint < len(want) {
				t.Fatalf("v%d: size hint %d for an answer of %d bytes", v, hint, len(want))
			}
		}
	})
}
