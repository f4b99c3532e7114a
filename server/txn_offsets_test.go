package server

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/coordlog"
)

// TestTxnOffsetCommitSingleNode: a raw TxnOffsetCommit leaves the offset
// pending (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT,
// without it the old offset); completeTxnOffsets, the WriteTxnMarkers
// hook, with commit makes it what a franz-go client fetches.
func TestTxnOffsetCommitSingleNode(t *testing.T) {
	s := newTestServer(t, nil, Options{ClusterID: "txn", AdvertisedHost: "127.0.0.1"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.advPort = int32(ln.Addr().(*net.TCPAddr).Port)
	s.self.Port = s.advPort
	go s.ServeListener(ln, "PLAINTEXT")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	const group, topic = "g", "t"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	committed, err := adm.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 3}))
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, 1000, 0
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, 42
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
	}

	fetch := func(stable bool) (int64, error) {
		t.Helper()
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group, r.RequireStable = group, stable
		r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
		// v8+ asks per group; the client picks the version.
		r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Groups) > 0 { // v8+
			g := resp.Groups[0]
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				return -1, err
			}
			p := g.Topics[0].Partitions[0]
			return p.Offset, kerr.ErrorForCode(p.ErrorCode)
		}
		p := resp.Topics[0].Partitions[0]
		return p.Offset, kerr.ErrorForCode(p.ErrorCode)
	}
	if _, err := fetch(true); err != kerr.UnstableOffsetCommit {
		t.Fatalf("require_stable fetch while pending: %v, want UNSTABLE_OFFSET_COMMIT", err)
	}
	if off, err := fetch(false); err != nil || off != 4 {
		t.Fatalf("fetch while pending = %d, %v; want the committed 4", off, err)
	}

	n := coordlog.PartitionFor(group, s.cfg.OffsetsTopicPartitions)
	if err := s.completeTxnOffsets(1000, 0, []int32{n}, true); err != nil {
		t.Fatal(err)
	}
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup(topic, 0); !ok || o.At != 42 || o.Err != nil {
		t.Fatalf("franz-go fetch after commit = %+v (found %v), want 42", o, ok)
	}
	if off, err := fetch(true); err != nil || off != 42 {
		t.Fatalf("require_stable fetch after commit = %d, %v; want 42", off, err)
	}
}
