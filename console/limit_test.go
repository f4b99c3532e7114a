package console

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// One client address holding idle connections gets at most perIP of the
// listener's slots: a probe from another address is still served though
// the client tried to open more connections than the whole listener
// takes. Each connection handed out is counted open, then closed.
func TestLimitPerIP(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opened, closed atomic.Int64
	ln := newLimitListener(raw, 4, 2, func() { opened.Add(1) }, func() { closed.Add(1) })
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	defer srv.Close()
	addr := raw.Addr().String()

	// The hog: ten idle connections from 127.0.0.1, more than the four
	// slots; its first request shows the server accepted them in order.
	var hog []net.Conn
	for range 10 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		hog = append(hog, c)
	}
	// The probe, from another loopback address.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	cl := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/healthz", nil)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("probe from 127.0.0.2 with 127.0.0.1 holding idle connections: %v", err)
	}
	resp.Body.Close()
	cl.CloseIdleConnections()
	// Of the hog's connections two stay open; the rest were closed at once.
	open := 0
	for _, c := range hog {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			open++
		}
	}
	if open != 2 {
		t.Errorf("%d of the hog's connections open, want 2", open)
	}
	for _, c := range hog {
		c.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); closed.Load() != opened.Load() || opened.Load() != 3; {
		if time.Now().After(deadline) {
			t.Fatalf("opened %d closed %d, want 3 and 3", opened.Load(), closed.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
