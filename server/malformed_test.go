package server_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// header builds a v1 request header.
func header(key, version int16, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return append(b, 0, 1, 'x') // client id "x"
}

// TestMalformedInput: each bad frame closes its connection (or gets an
// error answer) and the broker keeps serving a healthy connection.
func TestMalformedInput(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *configT) { c.SocketRequestMaxBytes = 1 << 20 })
	healthy := dialRaw(t, b.Addr())
	ping := func() {
		t.Helper()
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		if resp := healthy.Do(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
			t.Fatalf("healthy connection: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	ping()
	truncatedMeta := func() []byte {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(1)
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("some-topic")}}
		full := kmsg.NewRequestFormatter(kmsg.FormatterClientID("x")).AppendRequest(nil, req, 1)
		body := full[4 : len(full)-4] // drop 4 bytes of the body
		return frame(body)
	}
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"negative length", []byte{0xff, 0xff, 0xff, 0xfe, 1, 2, 3}},
		{"oversized length", binary.BigEndian.AppendUint32(nil, 1<<20+1)},
		{"tiny length", frame([]byte{0, 3, 0})},
		{"truncated header", frame([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0})},
		{"truncated request", truncatedMeta()},
		{"unknown api key", frame(append(header(999, 0, 1), 0, 0))},
		{"unsupported produce version", frame(append(header(0, 2, 1), 0, 0))},
		{"unsupported fetch version", frame(append(header(1, 3, 1), 0, 0))},
		{"garbage", frame([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, b.Addr())
			rc.WriteRaw(tc.raw)
			rc.ExpectClosed()
			ping()
		})
	}
	t.Run("bad crc produce", func(t *testing.T) {
		rc := dialRaw(t, b.Addr())
		bad := buildBatch(-1, -1, -1, 3, 1)
		bad[30] ^= 1
		resp := rc.Do(produceReq(11, 1, "auto-bad-crc", 0, bad)).(*kmsg.ProduceResponse)
		if ec := resp.Topics[0].Partitions[0].ErrorCode; ec == 0 {
			t.Fatalf("bad CRC accepted")
		}
		ping()
	})
	t.Run("requests before a bad frame are answered", func(t *testing.T) {
		rc := dialRaw(t, b.Addr())
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		raw := kmsg.NewRequestFormatter().AppendRequest(nil, req, 7)
		raw = append(raw, frame(append(header(999, 0, 8), 0))...)
		rc.WriteRaw(raw)
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(3)
		rc.Recv(7, resp)
		rc.ExpectClosed()
	})
}

// TestIdleConnectionClosed: connections.max.idle.ms closes a silent client.
func TestIdleConnectionClosed(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *configT) { c.ConnectionsMaxIdle = 200 * time.Millisecond })
	rc := dialRaw(t, b.Addr())
	rc.ExpectClosed()
}

// TestPipelinedResponsesInOrder sends many requests without waiting and
// checks the answers come back in request order.
func TestPipelinedResponsesInOrder(t *testing.T) {
	b := brokertest.Start(t, "memory")
	rc := dialRaw(t, b.Addr())
	var raw []byte
	f := kmsg.NewRequestFormatter()
	const n = 100
	for i := int32(1); i <= n; i++ {
		var req kmsg.Request
		if i%2 == 0 {
			r := kmsg.NewPtrMetadataRequest()
			r.SetVersion(12)
			req = r
		} else {
			r := kmsg.NewPtrApiVersionsRequest()
			r.SetVersion(3)
			req = r
		}
		raw = append(raw, f.AppendRequest(nil, req, i)...) // AppendRequest sizes from dst[0]
	}
	rc.WriteRaw(raw)
	for i := int32(1); i <= n; i++ {
		body, err := rc.ReadFrame(10 * time.Second)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if got := int32(binary.BigEndian.Uint32(body)); got != i {
			t.Fatalf("response %d has correlation id %d", i, got)
		}
	}
}
