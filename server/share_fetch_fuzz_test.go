package server

import (
	"context"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// FuzzShareRequests dispatches arbitrary ShareFetch and ShareAcknowledge
// frames (v1-2) to a server with share groups and a topic of three
// records. Invariants: no panic is recovered, every
// request gets a response that encodes, and the share partition's window
// stays within its bound.
func FuzzShareRequests(f *testing.F) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	g, m := "g", "a"
	add := func(req kmsg.Request) {
		b := fm.AppendRequest(nil, req, 1)
		f.Add(b[4:])
	}
	s := newTestServer(f, nil, Options{ClusterID: "fuzz", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092,
		ShareMembership: &testShareMembers{members: map[string]bool{"a": true}}})
	s.share.members.(*testShareMembers).cfg = s.defaultShareGroupConfig()
	s.share.members.(*testShareMembers).cfg.AutoOffsetReset = "earliest"
	id, err := s.admin.createTopic(context.Background(), topicSpec{name: "sq", partitions: 1, rf: 1})
	if err != nil {
		f.Fatal(err)
	}
	batch := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Value: []byte("0")}, {Value: []byte("1")}, {Value: []byte("2")}})
	if _, err := s.rm.Partition("sq", 0).Append(context.Background(), batch, -1); err != nil {
		f.Fatal(err)
	}
	s.Shutdown() // long polls return at once
	for _, v := range []int16{1, 2} {
		sf := kmsg.NewPtrShareFetchRequest()
		sf.Version, sf.GroupID, sf.MemberID, sf.MaxRecords, sf.MaxBytes = v, &g, &m, 10, 1<<20
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		sf.Topics = append(sf.Topics, rt)
		add(sf)
		sa := kmsg.NewPtrShareAcknowledgeRequest()
		sa.Version, sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = v, &g, &m, 1
		at := kmsg.NewShareAcknowledgeRequestTopic()
		at.TopicID = id
		ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
		ap.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 1, AcknowledgeTypes: []int8{1}}}
		at.Partitions = append(at.Partitions, ap)
		sa.Topics = append(sa.Topics, at)
		add(sa)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) < 2 {
			return
		}
		// Only the two share keys: the other APIs have FuzzDispatch.
		body = append([]byte(nil), body...)
		body[0], body[1] = 0, 78+body[1]%2
		r := s.decodeRequest(body)
		if r == nil {
			t.Fatal("decodeRequest returned nil")
		}
		resp := s.handleRequest(nil, r)
		if n := s.panics.Load(); n != 0 {
			t.Fatalf("%d panics recovered", n)
		}
		if resp == nil {
			t.Fatalf("no response to %T", r.kreq)
		}
		if !resp.close {
			w := zerocopy.NewWriter(io.Discard)
			if err := encodeResponse(w, resp); err != nil {
				t.Fatalf("encode: %v", err)
			}
		}
		if h := s.share.parts.Lookup(share.Key{Group: g, Topic: id}); h != nil {
			h.Lock()
			n := h.P.InFlight()
			h.Unlock()
			if n > s.currentConfig().GroupShare.PartitionMaxRecordLocks {
				t.Fatalf("%d in flight", n)
			}
		}
	})
}
