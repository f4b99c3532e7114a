package offsets

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replication"
)

// TestMigrate: the groups a metastore-only data dir holds (saved state,
// committed offsets, a pending transactional offset) are written to the
// log once; a migration that failed before recording itself (a crash) runs
// again in full, and the replay of the log then holds exactly what the
// metastore held, whatever was written twice.
func TestMigrate(t *testing.T) {
	parts := []*replication.Partition{newReplica(t, 0), newReplica(t, 1)}
	meta, err := metastore.Open(t.TempDir(), metastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	sg := metastore.Group{Name: "a", State: "Empty", ProtocolType: "consumer", Generation: 4}
	if err := meta.PutGroup(sg); err != nil {
		t.Fatal(err)
	}
	offsA := map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(7), tp(1): committed(9)}
	offsB := map[metastore.TopicPartition]metastore.CommittedOffset{tp(2): committed(3)}
	for g, o := range map[string]map[metastore.TopicPartition]metastore.CommittedOffset{"a": offsA, "b": offsB} {
		if err := meta.CommitOffsets(g, o); err != nil {
			t.Fatal(err)
		}
	}
	pend := metastore.PendingTxnOffset{ProducerID: 5, ProducerEpoch: 1, TopicPartition: tp(3), Offset: committed(11), Position: 1}
	if err := meta.UpdateOffsets("b", metastore.OffsetsUpdate{PutPending: []metastore.PendingTxnOffset{pend}}); err != nil {
		t.Fatal(err)
	}

	created := false
	c := New(Options{
		NumPartitions: func() int32 {
			if created {
				return 2
			}
			return 0
		},
		Partition: func(i int32) *replication.Partition { return parts[i] },
		Unload:    func(func(string) bool) {},
		Reload:    func(func(string) bool) error { return nil },
		Meta:      meta,
	})
	defer c.Close()
	ctx := context.Background()

	// A first run that fails after writing group "a" (as a crash would
	// stop it): nothing is recorded. The replica of b's partition goes
	// away once learnSequences has looked at both partitions.
	lookups := 0
	c.opts.Partition = func(i int32) *replication.Partition {
		lookups++
		if lookups > len(parts) && i == coordlogPartition("b", 2) {
			return nil
		}
		return parts[i]
	}
	if _, err := c.Migrate(ctx, func(context.Context) error { created = true; return nil }); err == nil {
		t.Fatal("migration with an unwritable group succeeded")
	}
	if parts[coordlogPartition("a", 2)].LogEndOffset() == 0 {
		t.Fatal("the failed run wrote nothing of group a")
	}
	if _, err := meta.GetCheckpoint(migratedCheckpoint); !errors.Is(err, metastore.ErrNotFound) {
		t.Fatalf("checkpoint after a failed migration: %v, want ErrNotFound", err)
	}

	// The second run writes everything (again) and records it.
	c.opts.Partition = func(i int32) *replication.Partition { return parts[i] }
	n, err := c.Migrate(ctx, func(context.Context) error { created = true; return nil })
	if err != nil || n != 2 {
		t.Fatalf("Migrate = %d, %v; want 2 groups", n, err)
	}
	if n, err := c.Migrate(ctx, func(context.Context) error { t.Fatal("create called after the migration"); return nil }); err != nil || n != 0 {
		t.Fatalf("second Migrate = %d, %v; want 0, nil", n, err)
	}

	for i, p := range parts {
		v, _, err := replay(p, p.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		for g, want := range map[string]map[metastore.TopicPartition]metastore.CommittedOffset{"a": offsA, "b": offsB} {
			if coordlogPartition(g, 2) != int32(i) {
				continue
			}
			got := map[metastore.TopicPartition]metastore.CommittedOffset{}
			for k, o := range v.offsets[g] {
				got[k] = *o
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("partition %d: offsets of %s %v, want %v", i, g, got, want)
			}
		}
		if coordlogPartition("a", 2) == int32(i) {
			if g := v.groups["a"]; g == nil || g.Generation != 4 || g.ProtocolType != "consumer" {
				t.Errorf("partition %d: group a %+v, want generation 4", i, g)
			}
		}
		if coordlogPartition("b", 2) == int32(i) {
			got := v.pendingOf("b")
			if len(got) != 1 || got[0].ProducerID != 5 || got[0].Offset.Offset != 11 || got[0].TopicPartition != tp(3) {
				t.Errorf("partition %d: pending of b %+v, want producer 5's offset 11 on t-3", i, got)
			}
		}
	}
}

func coordlogPartition(g string, n int32) int32 { return coordlog.PartitionFor(g, n) }

// TestMigrateFencedPending: pending offsets of one producer at an older
// epoch than its offsets written first (in another group of the same
// partition) are a fenced zombie's: the migration drops them instead of
// failing the start.
func TestMigrateFencedPending(t *testing.T) {
	part := newReplica(t, 0)
	meta, err := metastore.Open(t.TempDir(), metastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	for g, epoch := range map[string]int16{"a": 2, "b": 1} {
		p := metastore.PendingTxnOffset{ProducerID: 5, ProducerEpoch: epoch, TopicPartition: tp(0), Offset: committed(int64(epoch)), Position: 1}
		if err := meta.UpdateOffsets(g, metastore.OffsetsUpdate{PutPending: []metastore.PendingTxnOffset{p}}); err != nil {
			t.Fatal(err)
		}
	}
	c := New(Options{
		NumPartitions: func() int32 { return 1 },
		Partition:     func(int32) *replication.Partition { return part },
		Unload:        func(func(string) bool) {},
		Reload:        func(func(string) bool) error { return nil },
		Meta:          meta,
	})
	defer c.Close()
	if n, err := c.Migrate(context.Background(), func(context.Context) error { return nil }); err != nil || n != 2 {
		t.Fatalf("Migrate = %d, %v; want 2 groups", n, err)
	}
	v, _, err := replay(part, part.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if got := v.pendingOf("a"); len(got) != 1 || got[0].ProducerEpoch != 2 {
		t.Errorf("pending of a: %+v, want producer 5 at epoch 2", got)
	}
	if got := v.pendingOf("b"); len(got) != 0 {
		t.Errorf("pending of b: %+v, want none (epoch 1 is fenced)", got)
	}
}
