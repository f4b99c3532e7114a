package server

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/zerocopy"
)

// benchScaleServer returns a single-node server on the memory backend
// holding topics of perTopic partitions, total partitions in all.
func benchScaleServer(b *testing.B, total, perTopic int) *Server {
	b.Helper()
	s := newTestServer(b, nil, Options{ClusterID: "bench", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092})
	s.rm.Lock()
	defer s.rm.Unlock()
	for i := 0; i*perTopic < total; i++ {
		spec := topicSpec{name: fmt.Sprintf("scale-%06d", i), partitions: int32(perTopic), rf: 1}
		if _, err := s.createTopicLocked(spec); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkMetadataAllTopics answers Metadata for every topic (v12, a null
// topic list, as franz-go and the Java client ask) on a single node with
// 100,000 partitions (1,000 topics of 100), and encodes the response as
// the connection's writer does (written to io.Discard). stage=handle is
// the handler alone; stage=encode adds the encoding, whose floor (the
// bytes of a response of that size) SetBytes shows.
func BenchmarkMetadataAllTopics(b *testing.B) {
	s := benchScaleServer(b, 100_000, 100)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = nil
	w := zerocopy.NewWriter(io.Discard)
	encode := func(resp *response) {
		if err := encodeResponse(w, resp); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	resp, err := handleMetadata(s, &reqCtx{version: 12}, req)
	if err != nil {
		b.Fatal(err)
	}
	size := localMetadataSize(12, resp.kresp.(*kmsg.MetadataResponse), s.rm.Topics())
	encode(resp)
	for _, stage := range []string{"handle", "encode"} {
		b.Run("partitions=100000/stage="+stage, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := handleMetadata(s, &reqCtx{version: 12}, req)
				if err != nil {
					b.Fatal(err)
				}
				if stage == "encode" {
					encode(resp)
				}
			}
		})
	}
}

// BenchmarkCreateTopics creates one topic of 1 or 100 partitions through
// the CreateTopics handler on a single node already holding 100,000
// partitions in 1,000 topics (memory backend, so the server's own cost
// shows, not the logs'). Each created topic is deleted outside the timer.
func BenchmarkCreateTopics(b *testing.B) {
	s := benchScaleServer(b, 100_000, 100)
	for _, parts := range []int32{1, 100} {
		b.Run(fmt.Sprintf("existing=100000/partitions=%d", parts), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				req := kmsg.NewPtrCreateTopicsRequest()
				req.SetVersion(7)
				req.TimeoutMillis = 10_000
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic = fmt.Sprintf("bench-new-%d", i)
				rt.NumPartitions, rt.ReplicationFactor = parts, 1
				req.Topics = append(req.Topics, rt)
				resp, err := handleCreateTopics(s, &reqCtx{version: 7}, req)
				if err != nil {
					b.Fatal(err)
				}
				if c := resp.kresp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; c != 0 {
					b.Fatalf("CreateTopics %s: error %d", rt.Topic, c)
				}
				b.StopTimer()
				if err := s.admin.deleteTopic(context.Background(), rt.Topic); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				i++
			}
		})
	}
}
