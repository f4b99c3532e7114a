package server_test

import (
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

// ping sends ApiVersions on rc and waits up to 10 s for the answer.
func ping(t *testing.T, rc *rawConn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	if resp := rc.Do(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error %d", resp.ErrorCode)
	}
}

// expectNoAnswer sends ApiVersions on rc and checks nothing comes back
// within wait: the broker has not served the connection (yet). A broker
// that wrongly answers does so well within wait, so this cannot fail
// spuriously; it could only pass spuriously on a very slow machine.
func expectNoAnswer(t *testing.T, rc *rawConn, wait time.Duration) int32 {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	corr := rc.Send(req)
	if b, err := rc.ReadFrame(wait); err == nil {
		t.Fatalf("got a %d-byte answer, want none yet", len(b))
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection closed (%v), want it waiting", err)
	}
	return corr
}

// TestMaxConnections: at max.connections a new connection is not served
// (it waits in the listen backlog, as Kafka's blocked acceptor leaves it)
// until an open one closes; then it is served, not closed.
func TestMaxConnections(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *configT) { c.MaxConnections = 3 })
	var open []*rawConn
	for range 3 {
		rc := dialRaw(t, b.Addr())
		ping(t, rc)
		open = append(open, rc)
	}
	extra := dialRaw(t, b.Addr()) // the kernel completes the handshake
	corr := expectNoAnswer(t, extra, 300*time.Millisecond)
	open[0].NetConn().Close()
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	extra.Recv(corr, resp) // served once a slot freed
	ping(t, open[1])
}

// TestMaxConnectionsPerIP: a connection over max.connections.per.ip is
// closed at once while those before it keep working; an override raises
// the limit for its address; a closed connection frees its place.
func TestMaxConnectionsPerIP(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perIP     int32
		overrides map[string]int32
		allowed   int
	}{
		{"default limit", 2, nil, 2},
		{"ip override", 1, map[string]int32{"127.0.0.1": 3}, 3},
		{"zero with override", 0, map[string]int32{"127.0.0.1": 1}, 1},
		{"override of another address", 2, map[string]int32{"127.0.0.9": 5}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t, "memory", func(c *configT) {
				c.MaxConnectionsPerIP = tc.perIP
				c.MaxConnectionsPerIPOverrides = tc.overrides
			})
			var open []*rawConn
			for range tc.allowed {
				rc := dialRaw(t, b.Addr())
				ping(t, rc)
				open = append(open, rc)
			}
			over := dialRaw(t, b.Addr())
			over.ExpectClosed()
			for _, rc := range open {
				ping(t, rc)
			}
			open[0].NetConn().Close()
			// The broker counts the close when it notices it: retry a
			// bounded number of times until a new connection is served.
			for attempt := 1; ; attempt++ {
				rc := dialRaw(t, b.Addr())
				req := kmsg.NewPtrApiVersionsRequest()
				req.SetVersion(3)
				rc.Send(req)
				if _, err := rc.ReadFrame(5 * time.Second); err == nil {
					break
				}
				if attempt == 50 {
					t.Fatal("no connection served after one closed")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestSlowFrameCutOff: a client that announces a large frame and trickles
// its body is closed at request.read.timeout.ms, and the broker serves
// others meanwhile.
func TestSlowFrameCutOff(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *configT) { c.RequestReadTimeout = 300 * time.Millisecond })
	healthy := dialRaw(t, b.Addr())
	slow := dialRaw(t, b.Addr())
	slow.WriteRaw(binary.BigEndian.AppendUint32(nil, 100<<20))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // a byte every 20 ms, for at most 10 s
		defer close(done)
		for range 500 {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			slow.NetConn().SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := slow.NetConn().Write([]byte{0}); err != nil {
				return
			}
		}
	}()
	ping(t, healthy)
	slow.ExpectClosed()
	close(stop)
	<-done
	ping(t, healthy)
}

// TestReadsWaitForRequestMemory: when one connection holds all of
// queued.max.request.bytes with a half-sent frame, another connection's
// request waits (its reads are muted) until the first is cut off at
// request.read.timeout.ms and its bytes return to the pool; then it is
// answered. The waiter sends half a timeout after the hog, so that its own
// timeout, which counts the wait, ends well after the hog's.
func TestReadsWaitForRequestMemory(t *testing.T) {
	t.Parallel()
	b := brokertest.Start(t, "memory", func(c *configT) {
		c.SocketRequestMaxBytes = 1 << 20
		c.QueuedMaxRequestBytes = 64 << 10
		c.RequestReadTimeout = 3 * time.Second
	})
	hog := dialRaw(t, b.Addr())
	// 64 KiB of a 1 MiB frame: buffers of 4+4+8+16+32 KiB, the whole pool.
	hog.WriteRaw(append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, 64<<10)...))
	waiter := dialRaw(t, b.Addr())
	time.Sleep(1500 * time.Millisecond)
	corr := expectNoAnswer(t, waiter, 500*time.Millisecond)
	hog.ExpectClosed()
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	waiter.Recv(corr, resp)
	ping(t, waiter)
}

// TestSmallRequestsServedWhilePoolFull: with the pool outside its reserve
// held by a half-sent large frame, a small request is still answered at
// once (from the reserve), while a larger one waits for the hog to go.
func TestSmallRequestsServedWhilePoolFull(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *configT) {
		c.SocketRequestMaxBytes = 1 << 20
		c.QueuedMaxRequestBytes = 1<<20 + 128<<10 // reserve: 128 KiB
		c.RequestReadTimeout = 3 * time.Second
	})
	hog := dialRaw(t, b.Addr())
	// All but a byte of a 1 MiB frame: its buffer is the whole pool
	// outside the reserve.
	hog.WriteRaw(append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, 1<<20-1)...))
	// Wait, bounded, for the broker to charge the frame's buffer to the
	// pool (a fixed sleep failed under -race on a loaded machine).
	for deadline := time.Now().Add(10 * time.Second); b.Stats().RequestPoolUsed < 1<<20; {
		if time.Now().After(deadline) {
			t.Fatalf("the 1 MiB frame was not charged to the pool within 10 s: %d bytes in use", b.Stats().RequestPoolUsed)
		}
		time.Sleep(5 * time.Millisecond)
	}
	small := dialRaw(t, b.Addr())
	ping(t, small)
	large := dialRaw(t, b.Addr())
	// A 100 KB Metadata request: too big for the reserve.
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	for i := range 20 {
		name := strings.Repeat("t", 5000) + strconv.Itoa(i)
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: &name})
	}
	corr := large.Send(req)
	if b, err := large.ReadFrame(500 * time.Millisecond); err == nil {
		t.Fatalf("large request answered (%d bytes) while the pool was full", len(b))
	}
	ping(t, small)
	hog.ExpectClosed()
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(1)
	large.Recv(corr, resp)
}
