package kconn_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
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

// TestRequestBuffered: responses read into a caller's buffer decode like
// Request's, the buffer grows when a response does not fit and is reused
// when it does, and a Fetch's record bytes alias it (no copy, no new
// allocation per response).
func TestRequestBuffered(t *testing.T) {
	b := brokertest.Start(t, "memory")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("buffered"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 50
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: bytes.Repeat([]byte{byte(i)}, 1000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	c := kconn.New(b.Addr(), "kconn-test", 10*time.Second)
	defer c.Close()
	fetch := func(buf *[]byte, maxBytes int32) []byte {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID, req.MaxBytes = -1, maxBytes
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "buffered"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = maxBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.RequestBuffered(ctx, req, buf)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.FetchResponse)
		if len(r.Topics) != 1 || r.Topics[0].Topic != "buffered" || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("fetch: %+v", r)
		}
		return r.Topics[0].Partitions[0].RecordBatches
	}
	within := func(b, buf []byte) bool {
		start := uintptr(unsafe.Pointer(unsafe.SliceData(buf[:1])))
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return p >= start && p+uintptr(len(b)) <= start+uintptr(cap(buf))
	}

	var buf []byte
	small := fetch(&buf, 1) // KIP-74: one batch
	if len(small) == 0 || !within(small, buf) {
		t.Fatalf("first fetch: %d record bytes, aliasing the buffer: %v", len(small), len(small) > 0 && within(small, buf))
	}
	first := unsafe.SliceData(buf)
	all := fetch(&buf, 1<<20)
	if len(all) <= len(small) || !within(all, buf) {
		t.Fatalf("second fetch: %d record bytes (first %d), aliasing the buffer: %v", len(all), len(small), within(all, buf))
	}
	if unsafe.SliceData(buf) == first {
		t.Fatalf("the buffer did not grow for a larger response (cap %d)", cap(buf))
	}
	grown := unsafe.SliceData(buf)
	again := fetch(&buf, 1<<20)
	if unsafe.SliceData(buf) != grown || !bytes.Equal(again, all) {
		t.Fatalf("a response that fits was not read into the same buffer (or differs: %d vs %d bytes)", len(again), len(all))
	}
	// The record bytes are the records produced.
	var got int
	for rest := again; len(rest) > 0; {
		batch := kmsg.RecordBatch{}
		if err := batch.ReadFrom(rest); err != nil {
			t.Fatal(err)
		}
		got += int(batch.NumRecords)
		rest = rest[12+int(batch.Length):]
	}
	if got != n {
		t.Fatalf("%d records fetched, want %d", got, n)
	}
	if resp := fetch(nil, 1<<20); !bytes.Equal(resp, all) {
		t.Fatal("RequestBuffered with no buffer differs")
	}
}
