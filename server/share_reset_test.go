package server

// When a share partition's start offset is chosen (issue 29's "a raw
// ShareFetch right after producing acquires nothing"): as Kafka's
// SharePartition.maybeInitialize / startOffsetDuringInitialization, a share
// partition with no persisted state starts where the group's
// share.auto.offset.reset points at the moment it is first loaded, which is
// the group's first ShareFetch of it. Under latest (the default), records
// produced before that fetch are not delivered, even if the member joined
// before they were produced; under earliest they are.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestShareResetLatestAtFirstFetch(t *testing.T) {
	// Three records before the group's first fetch: skipped under latest.
	e := startShareServer(t, 3, func(c *ShareGroupConfig) { c.AutoOffsetReset = "latest" })
	cl := e.client()
	if got := acquired(t, e.fetch(cl, sfetch{member: "a", max: 10})); len(got) != 0 {
		t.Fatalf("latest: acquired %v produced before the first fetch", got)
	}
	// What is produced after it is delivered, from the start offset on.
	e.produce(2, 3)
	wantRanges(t, acquired(t, e.fetch(cl, sfetch{member: "a", epoch: 1, max: 10})), [3]int64{3, 4, 1})
	// The reset applies once: changing it later moves nothing.
	e.members.mu.Lock()
	e.members.cfg.AutoOffsetReset = "earliest"
	e.members.mu.Unlock()
	if got := acquired(t, e.fetch(cl, sfetch{member: "a", epoch: 2, max: 10})); len(got) != 0 {
		t.Fatalf("acquired %v after the reset changed", got)
	}
}

func TestShareResetChangedBeforeFirstFetch(t *testing.T) {
	// The group's reset as it is at the first fetch counts, not as it was
	// when the records were produced (the CLI test's order: produce, then
	// earliest, then the first fetch).
	e := startShareServer(t, 5, func(c *ShareGroupConfig) { c.AutoOffsetReset = "latest" })
	e.members.mu.Lock()
	e.members.cfg.AutoOffsetReset = "earliest"
	e.members.mu.Unlock()
	e.clock.add(time.Second)
	wantRanges(t, acquired(t, e.fetch(e.client(), sfetch{member: "a", max: 10})), [3]int64{0, 4, 1})
}

// TestShareAcknowledgeUnloadedPartition: acknowledging a partition the group
// has no share partition of on this broker (never fetched) is
// UNKNOWN_TOPIC_OR_PARTITION, as Kafka's SharePartitionManager.acknowledge;
// a malformed batch there is still INVALID_REQUEST (checked first).
func TestShareAcknowledgeUnloadedPartition(t *testing.T) {
	e := startShareServer(t, 2, nil)
	cl := e.client()
	ctx := context.Background()
	ct, err := kadm.NewClient(e.admin).CreateTopic(ctx, 1, 1, nil, "other")
	if err != nil || ct.Err != nil {
		t.Fatalf("create topic: %v %v", err, ct.Err)
	}
	wantRanges(t, acquired(t, e.fetch(cl, sfetch{member: "a", max: 10})), [3]int64{0, 1, 1})
	ack := func(epoch int32, b kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) int16 {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		g, m := "g", "a"
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &m, epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = ct.ID
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share acknowledge: %v %+v", err, resp)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if c := ack(1, ackBatch(0, 0, 1)); c != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unloaded partition: %v", kerr.ErrorForCode(c))
	}
	if c := ack(2, ackBatch(3, 1, 1)); c != kerr.InvalidRequest.Code {
		t.Fatalf("malformed batch on an unloaded partition: %v", kerr.ErrorForCode(c))
	}
	// The group's own records are untouched.
	if c := e.ack(cl, "a", 3, ackBatch(0, 1, 1)).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("ack: %v", kerr.ErrorForCode(c))
	}
}

// TestShareRenewDisabled: share.renew.acknowledge.enable is true by
// default (Kafka's GroupConfig); a group that sets it false gets
// INVALID_RECORD_STATE for a Renew acknowledgement, which changes nothing,
// while a Renew in a request without IsRenewAck stays INVALID_REQUEST.
func TestShareRenewDisabled(t *testing.T) {
	if !startShareServer(t, 1, nil).members.cfg.RenewEnabled {
		t.Fatal("share.renew.acknowledge.enable defaults to false, Kafka's is true")
	}
	e := startShareServer(t, 2, func(c *ShareGroupConfig) { c.RenewEnabled = false })
	cl := e.client()
	wantRanges(t, acquired(t, e.fetch(cl, sfetch{member: "a", max: 10})), [3]int64{0, 1, 1})
	r := e.fetch(cl, sfetch{member: "a", epoch: 1, renew: true, acks: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 1, 4)}})
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].AcknowledgeErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("renew while disabled: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	if c := e.ack(cl, "a", 2, ackBatch(0, 1, 4)).Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRequest.Code {
		t.Fatalf("renew without IsRenewAck: %v", kerr.ErrorForCode(c))
	}
	// The records are still a's, with their first lock.
	if c := e.ack(cl, "a", 3, ackBatch(0, 1, 1)).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("accept: %v", kerr.ErrorForCode(c))
	}
}

// TestShareFetchHostilePiggybackedAcks: acknowledgements piggy-backed on
// ShareFetch get the same codes as ShareAcknowledge's, in the partition's
// AcknowledgeErrorCode, apply nothing when refused, and do not stop the
// fetch.
func TestShareFetchHostilePiggybackedAcks(t *testing.T) {
	e := startShareServer(t, 5, nil)
	cl := e.client()
	wantRanges(t, acquired(t, e.fetch(cl, sfetch{member: "a", max: 3})), [3]int64{0, 2, 1})
	type ab = kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	epoch := int32(1)
	for _, tc := range []struct {
		name string
		acks []ab
		want int16
	}{
		{"huge range", []ab{fetchAck(0, 1<<62, 1)}, kerr.InvalidRequest.Code},
		{"min to max", []ab{fetchAck(-1<<63, 1<<63-1, 1)}, kerr.InvalidRequest.Code},
		{"negative", []ab{fetchAck(-3, -2, 1)}, kerr.InvalidRequest.Code},
		{"overlap", []ab{fetchAck(0, 1, 1), fetchAck(1, 2, 1)}, kerr.InvalidRecordState.Code},
		{"out of order", []ab{fetchAck(2, 2, 1), fetchAck(0, 1, 1)}, kerr.InvalidRequest.Code},
		{"huge per-offset types", []ab{{FirstOffset: 0, LastOffset: 1 << 62, AcknowledgeTypes: []int8{1, 1, 1}}}, kerr.InvalidRequest.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.fetch(cl, sfetch{member: "a", epoch: epoch, max: 1, acks: tc.acks})
			epoch++
			if resp.ErrorCode != 0 {
				t.Fatalf("top-level %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			if c := resp.Topics[0].Partitions[0].AcknowledgeErrorCode; c != tc.want {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(c), kerr.ErrorForCode(tc.want))
			}
		})
	}
	// Each fetch above acquired one more record; nothing was acknowledged:
	// all five are a's to accept.
	if c := e.ack(cl, "a", epoch, ackBatch(0, 4, 1)).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("accept: %v", kerr.ErrorForCode(c))
	}
}
