package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestShareGroupCLI runs `sluice share-group` in process against a broker
// serving share groups: list, describe (state, members, verbose), delete
// refused while the group has a member and done once it is empty.
func TestShareGroupCLI(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) { c.GroupShare.Enable = true })
	addr := b.Addr()
	sl := func(wantCode int, args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", addr), &stdout, &stderr); code != wantCode {
			t.Fatalf("sluice %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The manual partitioner: kgo's default one ignores Record.Partition,
	// which put the records below on any of jobs' partitions (issue 29's
	// "ShareFetch acquires nothing" was that, two runs in three).
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("share-me"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "jobs"); err != nil {
		t.Fatal(err)
	}
	hb := func(member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "workers", member, epoch, topics
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %s: %v %+v", member, err, resp)
		}
		return resp
	}
	r := hb("member-a", 0, []string{"jobs"})

	out := sl(0, "share-group", "list")
	if !strings.Contains(out, "GROUP") || !strings.Contains(out, "workers") || !strings.Contains(out, "Stable") {
		t.Fatalf("list:\n%s", out)
	}
	if out := sl(0, "share-group", "list", "--state", "Empty"); strings.Contains(out, "workers") {
		t.Fatalf("list --state Empty:\n%s", out)
	}
	out = sl(0, "share-group", "describe", "workers", "--verbose")
	for _, want := range []string{"COORDINATOR (ID)", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "Stable", "member-a", "share-me", "jobs:0,1,2", "MEMBER-EPOCH"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe --verbose lacks %q:\n%s", want, out)
		}
	}
	if out := sl(0, "share-group", "describe", "workers", "--members"); strings.Contains(out, "COORDINATOR") || !strings.Contains(out, "#PARTITIONS") {
		t.Fatalf("describe --members:\n%s", out)
	}
	// The offsets view: with share.auto.offset.reset=earliest set before
	// the group's first ShareFetch (Kafka initializes a share partition's
	// start offset when the partition is first loaded, at the group's reset
	// strategy then), member-a takes the five records produced to jobs/0
	// before it and accepts offsets 0-1: start offset 2, lag 3.
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "workers"
	earliest := "earliest"
	ir.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpSet, Value: &earliest}}
	ia.Resources = append(ia.Resources, ir)
	if r, err := ia.RequestWith(ctx, cl); err != nil || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("group config: %v %+v", err, r)
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, "jobs")
	if err != nil || td["jobs"].Err != nil {
		t.Fatalf("list topics: %v %v", err, td["jobs"].Err)
	}
	group, member := "workers", "member-a"
	fetch := func(epoch int32) int {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
		req.MaxRecords, req.BatchSize, req.MaxBytes, req.MaxWaitMillis = 10, 10, 1<<20, 100
		if epoch == 0 {
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = td["jobs"].ID
			rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch: %v %+v", err, resp)
		}
		n := 0
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				for _, ar := range rp.AcquiredRecords {
					n += int(ar.LastOffset - ar.FirstOffset + 1)
				}
			}
		}
		return n
	}
	for i := range 5 {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "jobs", Partition: 0, Value: []byte{byte(i)}}).First()
		if err != nil || r.Partition != 0 || r.Offset != int64(i) {
			t.Fatalf("produce %d: %v, landed at jobs/%d@%d", i, err, r.Partition, r.Offset)
		}
	}
	epoch := int32(0)
	got := 0
	for ; got < 5 && epoch < 50; epoch++ { // bounded
		got += fetch(epoch)
	}
	if got != 5 {
		t.Fatalf("acquired %d records of jobs/0, want 5", got)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &group, &member, epoch
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = td["jobs"].ID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ap.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 1, AcknowledgeTypes: []int8{1}}}
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	if ar, err := ack.RequestWith(ctx, cl); err != nil || ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v %+v", err, ar)
	}
	out = sl(0, "share-group", "describe", "workers", "--offsets", "--verbose")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "GROUP TOPIC PARTITION LEADER-EPOCH START-OFFSET LAG" {
		t.Fatalf("describe --offsets header:\n%s", out)
	}
	rows := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		rows[f[1]+"/"+f[2]] = strings.Join(f[3:], " ")
	}
	if rows["jobs/0"] != "0 2 3" || len(rows) != 3 {
		t.Fatalf("describe --offsets: %v\n%s", rows, out)
	}
	sl(2, "share-group", "describe", "workers", "--offsets", "--members")
	sl(1, "share-group", "describe", "nope")
	sl(1, "share-group", "delete", "workers")
	hb("member-a", r.MemberEpoch, nil)
	hb("member-a", -1, nil)
	if out := sl(0, "share-group", "describe", "workers"); !strings.Contains(out, "has no active members") || !strings.Contains(out, "Empty") {
		t.Fatalf("describe empty group:\n%s", out)
	}
	if out := sl(0, "share-group", "delete", "workers"); !strings.Contains(out, "Deleted share group workers") {
		t.Fatalf("delete:\n%s", out)
	}
	if out := sl(0, "share-group", "list"); strings.Contains(out, "workers") {
		t.Fatalf("list after delete:\n%s", out)
	}
}
