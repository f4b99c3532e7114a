package kconn_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	_ "github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/internal/kconn"
)

func TestRequestRoundTrip(t *testing.T) {
	b := brokertest.Start(t, "memory")
	c := kconn.New(b.Addr(), "kconn-test", 10*time.Second)
	defer c.Close()
	ctx := context.Background()
	for _, v := range []int16{0, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kconn", "1"
		resp, err := c.Request(ctx, req)
		if err != nil {
			t.Fatalf("ApiVersions v%d: %v", v, err)
		}
		if r := resp.(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
			t.Fatalf("ApiVersions v%d: %+v", v, r)
		}
	}
	for _, v := range []int16{1, 9, 12} { // non-flexible and flexible
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		resp, err := c.Request(ctx, req)
		if err != nil {
			t.Fatalf("Metadata v%d: %v", v, err)
		}
		if r := resp.(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
			t.Fatalf("Metadata v%d: %d brokers", v, len(r.Brokers))
		}
	}
	c.Close()
	if _, err := c.Request(ctx, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Fatal("request after Close succeeded")
	}
}

// TestCancelAfterFailedRoundTrip: a request whose context ends while (or
// just after) it fails must not touch the connection Request cleared:
// each attempt races the context's AfterFunc against the read deadline
// at the same instant. Before the fix this crashed with a nil pointer
// dereference within a few hundred attempts.
func TestCancelAfterFailedRoundTrip(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accept and never answer
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	c := kconn.New(ln.Addr().String(), "t", 5*time.Second)
	defer c.Close()
	for range 300 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Microsecond)
		if _, err := c.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err == nil {
			t.Fatal("answered by a peer that never answers")
		}
		cancel()
	}
}
