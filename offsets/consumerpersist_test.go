package offsets

import (
	"context"
	"testing"

	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replication"
)

// TestReplayConsumerRecords: consumer group records (types 3-8 and 16)
// written by PersistConsumer beside offset commits replay instead of
// failing the load; each group gets the latest record of each key, in log
// order, tombstones included, and the offsets replay as before.
func TestReplayConsumerRecords(t *testing.T) {
	p := newReplica(t, 0)
	c := New(Options{
		NumPartitions: func() int32 { return 1 },
		Partition:     func(int32) *replication.Partition { return p },
	})
	ctx := context.Background()
	md := func(epoch int32) ConsumerValue {
		v := NewConsumerGroupMetadataValue()
		v.Epoch = epoch
		return v
	}
	key := func(typ int16, member string) ConsumerKey {
		return ConsumerKey{Type: typ, Group: "cg", Member: member}
	}
	steps := [][]ConsumerRecord{
		{{Key: key(ConsumerGroupMetadataType, ""), Value: md(1)}},
		{{Key: key(ConsumerGroupMemberMetadataType, "m1"), Value: ConsumerGroupMemberMetadataValue{ClientID: "c1", SubscribedTopicNames: []string{"t"}}},
			{Key: key(ConsumerGroupCurrentMemberAssignmentType, "m1"), Value: ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 1}}},
		{{Key: key(ConsumerGroupMetadataType, ""), Value: md(2)}},
		{{Key: ConsumerKey{Type: ConsumerGroupRegularExpressionType, Group: "cg", Regex: "t.*"}, Value: ConsumerGroupRegularExpressionValue{Topics: []string{"t"}}}},
		{{Key: ConsumerKey{Type: ConsumerGroupRegularExpressionType, Group: "cg", Regex: "t.*"}}}, // tombstone
	}
	for _, recs := range steps {
		if err := c.PersistConsumer(ctx, "cg", recs); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Persist(ctx, "cg", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(7)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.PersistConsumer(ctx, "other", []ConsumerRecord{{Key: key(ConsumerGroupMetadataType, "")}}); err == nil {
		t.Fatal("a record of group cg persisted as group other")
	}

	v, _, err := replay(p, p.LogEndOffset())
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	got := v.consumerGroups(func(string) bool { return true })["cg"]
	var types []int16
	for _, r := range got {
		types = append(types, r.Key.Type)
	}
	want := []int16{ConsumerGroupMemberMetadataType, ConsumerGroupCurrentMemberAssignmentType, ConsumerGroupMetadataType, ConsumerGroupRegularExpressionType}
	if len(types) != len(want) {
		t.Fatalf("replayed types %v, want %v (latest per key, in log order)", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("replayed types %v, want %v (latest per key, in log order)", types, want)
		}
	}
	if e := got[2].Value.(ConsumerGroupMetadataValue).Epoch; e != 2 {
		t.Fatalf("group epoch %d, want the latest, 2", e)
	}
	if got[3].Value != nil {
		t.Fatal("regex tombstone replayed as a value")
	}
	if o := v.offsets["cg"][tp(0)]; o == nil || o.Offset != 7 {
		t.Fatalf("offset beside consumer records: %v", o)
	}
}
