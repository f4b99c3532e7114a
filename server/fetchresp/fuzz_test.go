package fetchresp_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/zerocopy"
)

// fuzzReader hands out fuzz input bytes, zeros once they run out.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *fuzzReader) bytes(n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = r.byte()
	}
	return out
}

func (r *fuzzReader) int64() int64 { return int64(binary.BigEndian.Uint64(r.bytes(8))) }
func (r *fuzzReader) int32() int32 { return int32(binary.BigEndian.Uint32(r.bytes(4))) }
func (r *fuzzReader) int16() int16 { return int16(binary.BigEndian.Uint16(r.bytes(2))) }

// FuzzWrite builds a Fetch response from the fuzz input, for both Write and
// kmsg, and checks: Write never panics; an unsupported version is refused
// with ErrVersion and leaves the Writer empty; otherwise the frame is
// byte-identical to kmsg's (size prefix, header, AppendTo body) and kmsg
// decodes it back to the same body.
func FuzzWrite(f *testing.F) {
	f.Add(int16(4), []byte{1, 3, 'a', 'b', 'c', 1})
	f.Add(int16(12), []byte{2, 1, 'x', 2, 0xff, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(int16(16), bytes.Repeat([]byte{7}, 200))
	f.Add(int16(99), []byte{})
	f.Fuzz(func(t *testing.T, version int16, data []byte) {
		in := &fuzzReader{b: data}
		r := &fetchresp.Response{ThrottleMillis: in.int32(), ErrorCode: in.int16(), SessionID: in.int32()}
		k := kmsg.NewPtrFetchResponse()
		k.Version = version
		k.ThrottleMillis, k.ErrorCode, k.SessionID = r.ThrottleMillis, r.ErrorCode, r.SessionID
		for range in.byte() % 4 {
			name := string(in.bytes(int(in.byte() % 40)))
			var id [16]byte
			copy(id[:], in.bytes(int(in.byte()%17)))
			t := fetchresp.Topic{Name: name, ID: id}
			kt := kmsg.NewFetchResponseTopic()
			kt.Topic, kt.TopicID = name, id
			for range in.byte() % 4 {
				p := fetchresp.Partition{Partition: in.int32(), ErrorCode: in.int16(), HighWatermark: in.int64(),
					LastStableOffset: in.int64(), LogStartOffset: in.int64(), PreferredReadReplica: in.int32()}
				kp := kmsg.NewFetchResponseTopicPartition()
				kp.Partition, kp.ErrorCode, kp.HighWatermark = p.Partition, p.ErrorCode, p.HighWatermark
				kp.LastStableOffset, kp.LogStartOffset, kp.PreferredReadReplica = p.LastStableOffset, p.LogStartOffset, p.PreferredReadReplica
				flags := in.byte()
				if flags&1 != 0 {
					p.AbortedTransactions = []fetchresp.AbortedTransaction{}
					kp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
					for range in.byte() % 3 {
						a := fetchresp.AbortedTransaction{ProducerID: in.int64(), FirstOffset: in.int64()}
						p.AbortedTransactions = append(p.AbortedTransactions, a)
						kp.AbortedTransactions = append(kp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
					}
				}
				// kmsg leaves a tag out when its fields are all -1; so must we.
				if flags&2 != 0 && version >= 12 {
					p.CurrentLeader = &fetchresp.LeaderIDAndEpoch{LeaderID: in.int32() & 0xffff, LeaderEpoch: in.int32()}
					kp.CurrentLeader.LeaderID, kp.CurrentLeader.LeaderEpoch = p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch
				}
				if flags&4 != 0 && version >= 12 {
					p.DivergingEpoch = &fetchresp.EpochEndOffset{Epoch: in.int32() & 0xffff, EndOffset: in.int64()}
					kp.DivergingEpoch.Epoch, kp.DivergingEpoch.EndOffset = p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset
				}
				if flags&8 != 0 && version >= 12 {
					p.SnapshotID = &fetchresp.SnapshotID{EndOffset: in.int64() & 0xffff, Epoch: in.int32()}
					kp.SnapshotID.EndOffset, kp.SnapshotID.Epoch = p.SnapshotID.EndOffset, p.SnapshotID.Epoch
				}
				recs := in.bytes(int(in.byte()) * 3)
				p.Records = zerocopy.BytesSlice(recs)
				kp.RecordBatches = recs
				t.Partitions = append(t.Partitions, p)
				kt.Partitions = append(kt.Partitions, kp)
			}
			r.Topics = append(r.Topics, t)
			k.Topics = append(k.Topics, kt)
		}
		if version >= 16 {
			for range in.byte() % 3 {
				e := fetchresp.NodeEndpoint{NodeID: in.int32(), Host: string(in.bytes(int(in.byte() % 200))), Port: in.int32()}
				if in.byte()&1 != 0 {
					rack := string(in.bytes(int(in.byte() % 10)))
					e.Rack = &rack
				}
				r.NodeEndpoints = append(r.NodeEndpoints, e)
				k.Brokers = append(k.Brokers, kmsg.FetchResponseBroker{NodeID: e.NodeID, Host: e.Host, Port: e.Port, Rack: e.Rack})
			}
		}

		var buf bytes.Buffer
		w := zerocopy.NewWriter(&buf)
		err := fetchresp.Write(w, version, 77, r)
		if version < fetchresp.MinVersion || version > fetchresp.MaxVersion {
			if err == nil || w.Buffered() != 0 {
				t.Fatalf("v%d: Write = %v with %d bytes pending, want ErrVersion and nothing", version, err, w.Buffered())
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		want := kmsgFrame(k, 77)
		if got := buf.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("v%d: differs from kmsg at %d of %d/%d", version, commonPrefix(got, want), len(got), len(want))
		}
	})
}

// TestWriteAllocs pins the hot path at zero allocations once the Writer's
// buffers have grown: Write plus Flush of a two-partition response.
func TestWriteAllocs(t *testing.T) {
	recs := batches(2, 5)
	w := zerocopy.NewWriter(io.Discard)
	parts := make([]fetchresp.Partition, 2)
	topics := []fetchresp.Topic{{Name: "t", Partitions: parts}}
	r := &fetchresp.Response{Topics: topics}
	leader := &fetchresp.LeaderIDAndEpoch{LeaderID: 1, LeaderEpoch: 2}
	run := func() {
		for i := range parts {
			parts[i] = fetchresp.Partition{Partition: int32(i), LastStableOffset: -1, LogStartOffset: -1, PreferredReadReplica: -1,
				Records: zerocopy.BytesSlice(recs), CurrentLeader: leader}
		}
		if err := fetchresp.Write(w, 16, 1, r); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocs per Write+Flush, want 0", n)
	}
}
