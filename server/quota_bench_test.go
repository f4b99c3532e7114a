package server

import (
	"bufio"
	"encoding/binary"
	"io"
	"testing"

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
				frame, cl := benchServerConn(b, s, api)
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
