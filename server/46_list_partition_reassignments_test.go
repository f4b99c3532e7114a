package server_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/internal/zktest"
)

// TestPartitionReassignmentsWire: AlterPartitionReassignments and
// ListPartitionReassignments through kadm against a cluster of in-process
// brokers: Kafka's error codes per partition, NOT_CONTROLLER from a broker
// that is not the controller, and a move that completes with real
// replication.
func TestPartitionReassignmentsWire(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 3, "memory", zk.Addr())
	cl := newClient(t, bs[0].Addr(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 90*time.Second)
	if r, err := adm.CreateTopic(ctx, 2, 2, nil, "w"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "w", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	md, err := adm.Metadata(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	p0 := md.Topics["w"].Partitions[0].Replicas
	third := int32(6) - p0[0] - p0[1] // the broker without a replica of w-0
	target := []int32{third, p0[1]}

	// Every broker but the controller answers NOT_CONTROLLER
	// (StartCluster numbers them 1..n).
	for i, b := range bs {
		one := newClient(t, b.Addr())
		resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, one.SeedBrokers()[0])
		if err != nil {
			t.Fatal(err)
		}
		want := error(kerr.NotController)
		if int32(i+1) == md.Controller {
			want = nil
		}
		if got := kerr.ErrorForCode(resp.ErrorCode); got != want {
			t.Errorf("list at broker %d (controller %d): %v, want %v", i+1, md.Controller, got, want)
		}
	}

	var bad kadm.AlterPartitionAssignmentsReq
	bad.Assign("w", 1, []int32{1, 1})
	bad.Assign("w", 7, []int32{1})
	bad.Assign("nope", 0, []int32{1})
	bad.Assign("w", 0, []int32{1, 99})
	res, err := adm.AlterPartitionAssignments(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]error{
		"w":    {1: kerr.InvalidReplicaAssignment, 7: kerr.UnknownTopicOrPartition, 0: kerr.InvalidReplicaAssignment},
		"nope": {0: kerr.UnknownTopicOrPartition},
	}
	for topic, ps := range want {
		for p, w := range ps {
			if got := res[topic][p].Err; !errors.Is(got, w) {
				t.Errorf("%s-%d: %v, want %v", topic, p, got, w)
			}
		}
	}
	var cancel kadm.AlterPartitionAssignmentsReq
	cancel.CancelAssign("w", 1)
	if res, err := adm.AlterPartitionAssignments(ctx, cancel); err != nil || !errors.Is(res["w"][1].Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel of nothing: %v %v", res, err)
	}

	var move kadm.AlterPartitionAssignmentsReq
	move.Assign("w", 0, target)
	if res, err := adm.AlterPartitionAssignments(ctx, move); err != nil || res["w"][0].Err != nil {
		t.Fatalf("move: %v %v", res, err)
	}
	for {
		list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"w": {0: {}, 1: {}}})
		md, err2 := adm.Metadata(ctx, "w")
		if err == nil && err2 == nil && len(list.Sorted()) == 0 && slices.Equal(md.Topics["w"].Partitions[0].Replicas, target) &&
			len(md.Topics["w"].Partitions[0].ISR) == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("move not done: %v %v %+v", list, err, md.Topics["w"].Partitions[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The moved partition keeps its records (the new leader's high
	// watermark catches up once its follower fetches).
	for {
		ends, err := adm.ListEndOffsets(ctx, "w")
		o, _ := ends.Lookup("w", 0)
		if err == nil && o.Err == nil && o.Offset == 50 {
			break
		}
		if ctx.Err() != nil || o.Offset > 50 {
			t.Fatalf("w-0 ends at %d after the move, want 50 (%v %v)", o.Offset, err, o.Err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
