package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metrics"
)

// BenchmarkRequestPath runs produce (acks=1, one small batch) and fetch
// (one partition, from offset 0, no wait) requests one at a time over a
// loopback connection through the whole server path (reader, handler,
// writer), with metrics off and on. Metrics must cost no allocation on
// these paths: allocs/op of metrics=on must equal metrics=off (the client
// side of the loop allocates nothing).
func BenchmarkRequestPath(b *testing.B) {
	for _, api := range []string{"produce", "fetch"} {
		for _, on := range []bool{false, true} {
			name := "api=" + api + "/metrics=off"
			if on {
				name = "api=" + api + "/metrics=on"
			}
			b.Run(name, func(b *testing.B) {
				var m *metrics.Metrics
				if on {
					m = metrics.New()
				}
				frame, cl := benchRequestConn(b, m, api)
				rd := bufio.NewReaderSize(cl, 64<<10)
				var size [4]byte
				var body []byte
				roundTrip := func() {
					if _, err := cl.Write(frame); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(rd, size[:]); err != nil {
						b.Fatal(err)
					}
					n := int(binary.BigEndian.Uint32(size[:]))
					if cap(body) < n {
						body = make([]byte, n)
					}
					if _, err := io.ReadFull(rd, body[:n]); err != nil {
						b.Fatal(err)
					}
				}
				for range 100 { // warm up: pools, the API's metrics handle
					roundTrip()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					roundTrip()
				}
			})
		}
	}
}

// benchRequestConn serves a server with metrics m on loopback, with topic
// "bench" holding 100 records, and returns a connection to it and the
// frame of the api's request.
func benchRequestConn(b *testing.B, m *metrics.Metrics, api string) ([]byte, net.Conn) {
	return benchServerConn(b, newTestServer(b, nil, Options{ClusterID: "bench", Metrics: m}), api)
}

// benchServerConn is benchRequestConn on a server the caller made.
func benchServerConn(b *testing.B, s *Server, api string) ([]byte, net.Conn) {
	s.rm.Lock()
	t, err := s.createTopicLocked(topicSpec{name: "bench", partitions: 1, rf: 1})
	s.rm.Unlock()
	if err != nil {
		b.Fatal(err)
	}
	for range 100 {
		if _, err := t.Parts[0].Append(context.Background(), oneRecord(), 1); err != nil {
			b.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.ServeListener(ln, "PLAINTEXT")
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })

	var req kmsg.Request
	switch api {
	case "produce":
		r := kmsg.NewPtrProduceRequest()
		r.SetVersion(9)
		r.Acks, r.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bench"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = oneRecord()
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		r.Topics = []kmsg.ProduceRequestTopic{rt}
		req = r
	default:
		r := wideFetch(t, 0, 0)
		r.Topics[0].Partitions[0].FetchOffset = 0
		req = r
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))
	return f.AppendRequest(nil, req, 1), cl
}
