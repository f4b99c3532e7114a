package bench

import (
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/zerocopy"
)

// codecShapes are the request shapes measured: one partition with a
// linger-sized or a full batch, and a wide request of many small batches
// (a producer spraying a 100-partition topic).
var codecShapes = []struct {
	partitions int
	batch      int
	name       string
}{
	{1, 16 << 10, "partitions=1/batch=16KiB"},
	{1, 1 << 20, "partitions=1/batch=1MiB"},
	{100, 16 << 10, "partitions=100/batch=16KiB"},
}

// Versions measured: the newest the broker serves with topic names (Produce
// v11) and the newest Fetch (v16, topic IDs), which is what franz-go
// negotiates with Sluice.
const (
	produceVersion = 11
	fetchVersion   = 16
)

// BenchmarkDecode measures decoding a request body as the server does
// (server/conn.go: a fresh kmsg request per frame, SetVersion, ReadFrom).
// Record sets stay slices of the frame, so the cost is in the framing and
// allocs/op counts kmsg's structs.
func BenchmarkDecode(b *testing.B) {
	for _, s := range codecShapes {
		b.Run("api=produce/"+s.name, func(b *testing.B) {
			batch := makeBatch(s.batch)
			req := kmsg.NewPtrProduceRequest()
			req.Version = produceVersion
			req.Acks = -1
			req.TimeoutMillis = 30000
			topic := kmsg.NewProduceRequestTopic()
			topic.Topic = "bench"
			for p := range s.partitions {
				part := kmsg.NewProduceRequestTopicPartition()
				part.Partition = int32(p)
				part.Records = batch
				topic.Partitions = append(topic.Partitions, part)
			}
			req.Topics = append(req.Topics, topic)
			body := req.AppendTo(nil)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				kreq := kmsg.RequestForKey(0)
				kreq.SetVersion(produceVersion)
				if err := kreq.ReadFrom(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode measures encoding a Fetch response two ways: kmsg's
// AppendTo into a reused buffer (copies every record byte), and the
// broker's fetchresp.Write into a zerocopy.Writer flushed to io.Discard
// (framing only: records stay slices, on a socket they go by sendfile).
func BenchmarkEncode(b *testing.B) {
	for _, s := range codecShapes {
		batch := makeBatch(s.batch)
		id := [16]byte{1, 2, 3}
		b.Run("api=fetch/codec=kmsg/"+s.name, func(b *testing.B) {
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = fetchVersion
			topic := kmsg.NewFetchResponseTopic()
			topic.Topic, topic.TopicID = "bench", id
			for p := range s.partitions {
				part := kmsg.NewFetchResponseTopicPartition()
				part.Partition = int32(p)
				part.HighWatermark, part.LastStableOffset, part.LogStartOffset = 1e6, 1e6, 0
				part.PreferredReadReplica = -1
				part.RecordBatches = batch
				topic.Partitions = append(topic.Partitions, part)
			}
			resp.Topics = append(resp.Topics, topic)
			buf := resp.AppendTo(nil)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = resp.AppendTo(buf[:0])
			}
		})
		b.Run("api=fetch/codec=fetchresp/"+s.name, func(b *testing.B) {
			w := zerocopy.NewWriter(io.Discard)
			resp := &fetchresp.Response{Topics: []fetchresp.Topic{{Name: "bench", ID: id,
				Partitions: make([]fetchresp.Partition, s.partitions)}}}
			fill := func() {
				for p := range resp.Topics[0].Partitions {
					resp.Topics[0].Partitions[p] = fetchresp.Partition{
						Partition: int32(p), HighWatermark: 1e6, LastStableOffset: 1e6,
						PreferredReadReplica: -1, Records: zerocopy.BytesSlice(batch),
					}
				}
			}
			fill()
			if err := fetchresp.Write(w, fetchVersion, 1, resp); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(w.Buffered())
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				fill() // Write takes the slices
				if err := fetchresp.Write(w, fetchVersion, 1, resp); err != nil {
					b.Fatal(err)
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
