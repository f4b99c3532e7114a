package server_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareMetricsAfterScenario scrapes the share partition counters
// after a known scenario with share.delivery.count.limit=2: member a takes
// offsets 0-9, accepts 0-3, releases 4-5, rejects 6 and leaves (7-9 go
// back); member b takes 4,5,7,8,9 (their second delivery) and leaves, so
// they are archived at the limit.
func TestShareMetricsAfterScenario(t *testing.T) {
	ms := startMetricsServer(t, "memory", fastShareGroups)
	ctx := testCtx(t, time.Minute)
	group, topic := "metered-share", "metered-share"
	two := "2"
	cl := shareE2ESetup(t, ctx, ms.addr, group, topic, 1, 10,
		groupOp{kmsg.IncrementalAlterConfigOpSet, "share.delivery.count.limit", &two})
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("list topics: %v %v", err, td[topic].Err)
	}
	tid := td[topic].ID
	a, sess := handShareMember(t, ctx, cl, group, topic, tid, 10)
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &group, &a, sess
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = tid
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
		{FirstOffset: 0, LastOffset: 3, AcknowledgeTypes: []int8{1}},
		{FirstOffset: 4, LastOffset: 5, AcknowledgeTypes: []int8{2}},
		{FirstOffset: 6, LastOffset: 6, AcknowledgeTypes: []int8{3}},
	}
	rt.Partitions = append(rt.Partitions, rp)
	ack.Topics = append(ack.Topics, rt)
	if ar, err := ack.RequestWith(ctx, cl); err != nil || ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v %+v", err, ar)
	}
	leaveShareGroup(t, ctx, cl, group, a)
	b, _ := handShareMember(t, ctx, cl, group, topic, tid, 5)
	leaveShareGroup(t, ctx, cl, group, b)

	fams := scrape(t, ms.metrics)
	labels := map[string]string{"group": group, "topic": topic, "partition": "0"}
	for name, want := range map[string]float64{
		"sluice_share_partition_acquired_records_total":          15,
		"sluice_share_partition_accepted_records_total":          4,
		"sluice_share_partition_released_records_total":          10,
		"sluice_share_partition_rejected_records_total":          1,
		"sluice_share_partition_archived_records_total":          6,
		"sluice_share_partition_lock_expiries_total":             0,
		"sluice_share_partition_delivery_count_limit_hits_total": 5,
	} {
		if got := mustValue(t, fams, name, labels); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
