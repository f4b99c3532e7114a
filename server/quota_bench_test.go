package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/quota"
)

// BenchmarkRequestPathQuota is BenchmarkRequestPath with client quotas:
// none set (quota=off: one atomic load per request), and a quota on the
// client's id for every type, high enough never to throttle (quota=on:
// the sensors are recorded). allocs/op must be equal: enforcement
// allocates nothing per request once a client's sensors exist.
func BenchmarkRequestPathQuota(b *testing.B) {
	for _, api := range []string{"produce", "fetch"} {
		for _, on := range []bool{false, true} {
			name := "api=" + api + "/quota=off"
			if on {
				name = "api=" + api + "/quota=on"
			}
			b.Run(name, func(b *testing.B) {
				s := newTestServer(b, nil, Options{ClusterID: "bench"})
				if on {
					var v quota.Values
					for t := range v {
						v[t] = 1e12
					}
					s.quotas.Set(quota.Entity{ClientID: quota.Named("bench")}, v)
				}
				frame, cl := benchQuotaConn(b, s, api)
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
				for range 100 {
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

// benchQuotaConn is benchRequestConn on a server the caller made.
func benchQuotaConn(b *testing.B, s *Server, api string) ([]byte, net.Conn) {
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
