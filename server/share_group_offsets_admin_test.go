package server_test

// AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92) through
// kadm, on Sluice and on kfake as the reference: refused while the group
// has a member (NON_EMPTY_GROUP), then a reset drops the in-flight state
// (acknowledged records below the old start are delivered again) and a
// delete makes the partition stateless.

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

func TestShareGroupOffsetsAlterDelete(t *testing.T) {
	t.Run("broker=sluice", func(t *testing.T) {
		b := brokertest.Start(t, "memory", fastShareGroups)
		runShareOffsetsAdmin(t, b.Addr())
		shareOffsetsAdminHostile(t, b.Addr())
	})
	t.Run("broker=kfake", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
			"group.share.heartbeat.interval.ms": "200",
			"group.share.session.timeout.ms":    "2000",
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		runShareOffsetsAdmin(t, c.ListenAddrs()[0])
	})
}

// describeShareStart returns the start offset and lag of group's partition
// p of topic (DescribeShareGroupOffsets).
func describeShareStart(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, p int32) (int64, int64) {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group,
		Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{p}}}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 {
		t.Fatalf("describe share group offsets: %v %+v", err, resp)
	}
	rp := resp.Groups[0].Topics[0].Partitions[0]
	return rp.StartOffset, rp.Lag
}

func leaveShareGroup(t *testing.T, ctx context.Context, cl *kgo.Client, group, member string) {
	t.Helper()
	if r, err := shareHeartbeat(ctx, cl, group, member, -1, nil); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}
}

func runShareOffsetsAdmin(t *testing.T, addr string) {
	ctx := testCtx(t, time.Minute)
	const n = 10
	group, topic := "admin-offsets", "admin-offsets"
	cl := shareE2ESetup(t, ctx, addr, group, topic, 2, 0)
	adm := kadm.NewClient(cl)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("list topics: %v %v", err, td[topic].Err)
	}
	tid := td[topic].ID
	a, sess := handShareMember(t, ctx, cl, group, topic, tid, n)
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &group, &a, sess
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = tid
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
		{FirstOffset: 0, LastOffset: 5, AcknowledgeTypes: []int8{1}},
	}
	rt.Partitions = append(rt.Partitions, rp)
	ack.Topics = append(ack.Topics, rt)
	if ar, err := ack.RequestWith(ctx, cl); err != nil || ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v %+v", err, ar)
	}
	if start, lag := describeShareStart(t, ctx, cl, group, topic, 0); start != 6 || lag != 4 {
		t.Fatalf("before: start %d lag %d, want 6 and 4", start, lag)
	}

	// A member: both refused.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2})
	if _, err := adm.AlterShareGroupOffsets(ctx, group, offs); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("alter with a member: %v, want NON_EMPTY_GROUP", err)
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, group, topic); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("delete with a member: %v, want NON_EMPTY_GROUP", err)
	}
	leaveShareGroup(t, ctx, cl, group, a)

	// Empty: back to 2, the accepted 2-5 are in flight no more.
	offs.Add(kadm.Offset{Topic: topic, Partition: 7, At: 0})
	offs.Add(kadm.Offset{Topic: "admin-no-such-topic", Partition: 0, At: 0})
	res, err := adm.AlterShareGroupOffsets(ctx, group, offs)
	if err != nil {
		t.Fatalf("alter: %v", err)
	}
	want := map[string]map[int32]error{
		topic:                 {0: nil, 7: kerr.UnknownTopicOrPartition},
		"admin-no-such-topic": {0: kerr.UnknownTopicOrPartition},
	}
	for tp, ps := range want {
		for p, w := range ps {
			if got := res[tp][p]; !errors.Is(got, w) && got != w {
				t.Errorf("alter %s/%d: %v, want %v", tp, p, got, w)
			}
		}
	}
	if start, lag := describeShareStart(t, ctx, cl, group, topic, 0); start != 2 || lag != n-2 {
		t.Fatalf("after alter: start %d lag %d, want 2 and %d", start, lag, n-2)
	}
	// A new member gets 2..9 again, then leaves.
	b, _ := handShareMember(t, ctx, cl, group, topic, tid, n-2)
	leaveShareGroup(t, ctx, cl, group, b)

	// Delete: no state left for the topic.
	dres, err := adm.DeleteShareGroupOffsets(ctx, group, topic, "admin-no-such-topic")
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if dres[topic] != nil || !errors.Is(dres["admin-no-such-topic"], kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete: %v", dres)
	}
	if start, lag := describeShareStart(t, ctx, cl, group, topic, 0); start != -1 || lag != -1 {
		t.Fatalf("after delete: start %d lag %d, want -1 -1", start, lag)
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, "admin-no-such-group", topic); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("delete of no group: %v, want GROUP_ID_NOT_FOUND", err)
	}
}

// shareOffsetsAdminHostile: Sluice's answers to requests kfake does not
// check: an empty group id, a negative start offset, a consumer group's
// id, many partitions of nothing; the broker answers them all.
func shareOffsetsAdminHostile(t *testing.T, addr string) {
	ctx := testCtx(t, time.Minute)
	cl := newClient(t, addr)
	topic := "admin-offsets"
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic,
		Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: -5}, {Partition: -1, StartOffset: 0}}}}
	if r, err := req.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group id: %v %+v", err, r)
	}
	req.GroupID = "admin-hostile"
	r, err := req.RequestWith(ctx, cl)
	if err != nil || r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 {
		t.Fatalf("hostile alter: %v %+v", err, r)
	}
	if c := r.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRequest.Code {
		t.Errorf("negative start offset: %s, want INVALID_REQUEST", errName(c))
	}
	if c := r.Topics[0].Partitions[1].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partition -1: %s, want UNKNOWN_TOPIC_OR_PARTITION", errName(c))
	}
	// A consumer group's id is no share group.
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, "admin-consumer", func() kadm.Offsets {
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
		return o
	}()); err != nil {
		t.Fatalf("commit: %v", err)
	}
	req.GroupID = "admin-consumer"
	if r, err := req.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer group id: %v %+v", err, r)
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "admin-consumer"
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
	if r, err := del.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete, consumer group id: %v %+v", err, r)
	}
	// A thousand partitions of no topic, bounded.
	big := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	big.GroupID = "admin-hostile"
	bt := kmsg.AlterShareGroupOffsetsRequestTopic{Topic: "admin-nothing"}
	for i := range 1000 {
		bt.Partitions = append(bt.Partitions, kmsg.AlterShareGroupOffsetsRequestTopicPartition{Partition: int32(i), StartOffset: 1 << 62})
	}
	big.Topics = append(big.Topics, bt)
	if r, err := big.RequestWith(ctx, cl); err != nil || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1000 ||
		r.Topics[0].Partitions[999].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("many partitions: %v", err)
	}
}

// TestShareGroupOffsetsAlterSurvivesRestart: the start offset set by
// AlterShareGroupOffsets is in __share_group_state, so after a restart
// DescribeShareGroupOffsets still answers it.
func TestShareGroupOffsetsAlterSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, "segment", fastShareGroups)
	ctx := testCtx(t, time.Minute)
	group, topic := "admin-restart", "admin-restart"
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	if ct, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || ct.Err != nil {
		t.Fatalf("create: %v %v", err, ct.Err)
	}
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 7})
	if res, err := adm.AlterShareGroupOffsets(ctx, group, offs); err != nil || res.Error() != nil {
		t.Fatalf("alter: %v %v", err, res.Error())
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = brokertest.StartIn(t, dir, "segment", fastShareGroups)
	cl = newClient(t, b.Addr())
	var start, lag int64 = -1, -1
	for i := 0; i < 100 && start == -1; i++ { // bounded: the state topic loads
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group,
			Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Groups) == 1 && resp.Groups[0].ErrorCode == 0 && len(resp.Groups[0].Topics) == 1 {
			rp := resp.Groups[0].Topics[0].Partitions[0]
			start, lag = rp.StartOffset, rp.Lag
		}
		if start == -1 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if start != 7 || lag != 3 {
		t.Fatalf("after restart: start %d lag %d, want 7 and 3", start, lag)
	}
}
