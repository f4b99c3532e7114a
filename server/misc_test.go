package server_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

func fetchReq(version int16, topic string, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = offset
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
	req.Topics = []kmsg.FetchRequestTopic{ft}
	return req
}

func TestMiscAPIs(t *testing.T) {
	b := brokertest.Start(t, "memory")
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "misc", 1, nil)
	ctx := testCtx(t, 30*time.Second)
	for i := 0; i < 5; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "misc", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rc := dialRaw(t, b.Addr())

	t.Run("describe cluster", func(t *testing.T) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(1)
		req.EndpointType = 1
		resp := rc.Do(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || resp.ClusterID != b.ClusterID() || len(resp.Brokers) != 1 {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("offset for leader epoch", func(t *testing.T) {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(4)
		req.ReplicaID = -2
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "misc"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, 0
		rt.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{rp}
		req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{rt}
		p := rc.Do(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LeaderEpoch != 0 || p.EndOffset != 5 {
			t.Fatalf("%+v", p)
		}
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = 3
		p = rc.Do(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
		if p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
			t.Fatalf("future epoch: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	})
	t.Run("transactional init producer id without a timeout", func(t *testing.T) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		req.TransactionalID = kmsg.StringPtr("txn")
		resp := rc.Do(req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != kerr.InvalidTransactionTimeout.Code {
			t.Fatalf("%v", kerr.ErrorForCode(resp.ErrorCode))
		}
	})
	t.Run("fetch session id unknown", func(t *testing.T) {
		req := fetchReq(12, "misc", 0)
		req.SessionID, req.SessionEpoch = 42, 1 // incremental, no such session
		resp := rc.Do(req).(*kmsg.FetchResponse)
		if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("%v", kerr.ErrorForCode(resp.ErrorCode))
		}
	})
	t.Run("fetch out of range", func(t *testing.T) {
		for _, off := range []int64{-1, 6, 1000} {
			resp := rc.Do(fetchReq(11, "misc", off)).(*kmsg.FetchResponse)
			if ec := resp.Topics[0].Partitions[0].ErrorCode; ec != kerr.OffsetOutOfRange.Code {
				t.Fatalf("offset %d: %v", off, kerr.ErrorForCode(ec))
			}
		}
	})
	t.Run("fetch at end is empty", func(t *testing.T) {
		resp := rc.Do(fetchReq(11, "misc", 5)).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 5 || p.LastStableOffset != 5 || p.LogStartOffset != 0 {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("fetch unknown topic", func(t *testing.T) {
		resp := rc.Do(fetchReq(11, "nope", 0)).(*kmsg.FetchResponse)
		if ec := resp.Topics[0].Partitions[0].ErrorCode; ec != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("%v", kerr.ErrorForCode(ec))
		}
		req := fetchReq(13, "", 0)
		req.Topics[0].TopicID = [16]byte{1, 2, 3}
		resp = rc.Do(req).(*kmsg.FetchResponse)
		if ec := resp.Topics[0].Partitions[0].ErrorCode; ec != kerr.UnknownTopicID.Code {
			t.Fatalf("v13: %v", kerr.ErrorForCode(ec))
		}
	})
	t.Run("fetch max bytes keeps the first batch whole", func(t *testing.T) {
		req := fetchReq(11, "misc", 0)
		req.MaxBytes = 1
		req.Topics[0].Partitions[0].PartitionMaxBytes = 1
		p := rc.Do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) < 61 {
			t.Fatalf("KIP-74: %d bytes", len(p.RecordBatches))
		}
	})
	t.Run("read committed consumer", func(t *testing.T) {
		cons := newClient(t, b.Addr(), kgo.ConsumeTopics("misc"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		got := 0
		for got < 5 {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d", got)
			}
			got += fs.NumRecords()
		}
	})
}
