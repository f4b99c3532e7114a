package server_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/record"
)

// TestLargeFrameInPieces: the reader raises SO_RCVLOWAT while the rest of
// a large frame is to come (rcvlowat.go). A 3 MiB produce request sent in
// uneven pieces with pauses (a piece ends short of every mark the reader
// may have set, and one ends a byte before the frame does), then small
// requests on the same connection, are all answered: the mark never makes
// the reader wait for bytes the client is not sending, and it is back to 1
// for the next frame.
func TestLargeFrameInPieces(t *testing.T) {
	b := brokertest.Start(t, "segment")
	adm := kadm.NewClient(newClient(t, b.Addr()))
	createTopic(t, adm, "big", 1, nil)
	rc := dialRaw(t, b.Addr())

	val := bytes.Repeat([]byte("v"), 1000)
	recs := make([]record.BuildRecord, 800)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: val, Timestamp: time.Now().UnixMilli()}
	}
	var batch []byte // four batches under max.message.bytes
	for range 4 {
		batch = record.AppendBatch(batch, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	}
	produce := func() *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks = -1
		req.TimeoutMillis = 10000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "big"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = batch
		tp.Partitions = append(tp.Partitions, pp)
		req.Topics = append(req.Topics, tp)
		return req
	}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("rawconn")).AppendRequest(nil, produce(), 1)
	if len(frame) < 3<<20 {
		t.Fatalf("frame of %d bytes, want >= 3 MiB", len(frame))
	}
	// Pieces: a few bytes past the size, 100 KiB, 700 KiB, 40 KiB, then all
	// but the last byte, then the last byte.
	cuts := []int{7, 7 + 100<<10, 7 + 800<<10, 7 + 840<<10, len(frame) - 1, len(frame)}
	prev := 0
	for _, c := range cuts {
		rc.WriteRaw(frame[prev:c])
		prev = c
		time.Sleep(50 * time.Millisecond)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	rc.Recv(1, resp)
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("large produce: %v", err)
	}

	// Small requests after it, one of them right behind a large frame in
	// the same write.
	corr := int32(2)
	for i := range 3 {
		var buf []byte
		if i == 1 {
			buf = kmsg.NewRequestFormatter(kmsg.FormatterClientID("rawconn")).AppendRequest(nil, produce(), corr)
			corr++
		}
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(9)
		// AppendRequest writes the size at the start of what it is given:
		// one frame per call.
		buf = append(buf, kmsg.NewRequestFormatter(kmsg.FormatterClientID("rawconn")).AppendRequest(nil, md, corr)...)
		rc.WriteRaw(buf)
		if i == 1 {
			pr := kmsg.NewPtrProduceResponse()
			pr.SetVersion(9)
			rc.Recv(corr-1, pr)
			if err := kerr.ErrorForCode(pr.Topics[0].Partitions[0].ErrorCode); err != nil {
				t.Fatalf("second large produce: %v", err)
			}
		}
		mr := kmsg.NewPtrMetadataResponse()
		mr.SetVersion(9)
		rc.Recv(corr, mr)
		corr++
	}
	ends, err := adm.ListEndOffsets(t.Context(), "big")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("big", 0); o.Offset != 6400 {
		t.Fatalf("log end offset %d, want 6400", o.Offset)
	}
}
