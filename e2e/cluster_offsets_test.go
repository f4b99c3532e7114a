package e2e

// Consumer offsets in cluster mode: committed offsets live in the
// replicated __consumer_offsets topic, so a group resumes from them after
// its coordinator broker is SIGKILLed.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterOffsetsCoordinatorKill: a group consumes part of a
// three-partition topic and commits; the broker coordinating the group is
// SIGKILLed; a new member of the group, through the new coordinator,
// fetches the same committed offsets and consumes exactly the records past
// them: none that was committed again, none skipped.
func TestClusterOffsetsCoordinatorKill(t *testing.T) {
	t.Parallel()
	const (
		topic  = "orders"
		grp    = "resume-group"
		rounds = 20
		per    = 30 // records per round: small batches, so phase 1 stops midway
		total  = rounds * per
	)
	c := startCluster(t, 3, "offsets.topic.num.partitions=5", "offsets.topic.replication.factor=3")
	c.createTopic(topic, 3, 3, nil)
	var all []string
	for r := range rounds {
		prefix := fmt.Sprintf("r%02d", r)
		c.produceN(topic, prefix, per)
		for i := range per {
			all = append(all, fmt.Sprintf("%s-%06d", prefix, i))
		}
	}

	// Phase 1: consume at least a third, commit everything seen, leave.
	seen := map[string]bool{}
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(2000),
		kgo.FetchMaxPartitionBytes(1000))
	if err != nil {
		t.Fatal(err)
	}
	// Each phase has its own generous deadline: on a loaded machine one
	// slow phase must not eat the next one's time.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(seen) < total/3 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Errorf("phase 1: %s delivered twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
	if ctx.Err() != nil {
		cl.Close()
		t.Fatalf("phase 1 consumed %d records before the deadline\n%s", len(seen), c.logs())
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	if err := cl.CommitUncommittedOffsets(cctx); err != nil {
		cl.Close()
		t.Fatalf("commit: %v\n%s", err, c.logs())
	}
	cl.Close()
	if len(seen) >= total {
		t.Fatalf("phase 1 consumed everything (%d); nothing left to resume", len(seen))
	}

	adm, acl := c.admin()
	fctx, fcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer fcancel()
	before, err := adm.FetchOffsets(fctx, grp)
	if err != nil || before.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, before.Error())
	}
	var committed int64
	before.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != int64(len(seen)) {
		t.Fatalf("committed offsets sum to %d, consumed %d", committed, len(seen))
	}
	coords := adm.FindGroupCoordinators(fctx, grp)
	acl.Close()
	if coords[grp].Err != nil {
		t.Fatalf("find coordinator: %v", coords[grp].Err)
	}
	coord := coords[grp].NodeID
	t.Logf("phase 1 consumed and committed %d of %d; coordinator is broker %d; SIGKILL it", len(seen), total, coord)
	killed := time.Now()
	c.brokers[coord].kill()

	// The new coordinator serves the same offsets once it has loaded its
	// partition (clients retry NOT_COORDINATOR and LOAD_IN_PROGRESS).
	c.waitFor(60*time.Second, "the group's offsets served by a new coordinator", func(adm *kadm.Client) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		after, err := adm.FetchOffsets(ctx, grp)
		if err != nil || after.Error() != nil {
			return false
		}
		same := len(after) == len(before)
		before.Each(func(o kadm.OffsetResponse) {
			a, ok := after.Lookup(o.Topic, o.Partition)
			same = same && ok && a.At == o.At
		})
		return same
	})
	// Every broker learns the new leader of the group's offsets partition
	// from the controller, asynchronously: ask until one names a live
	// coordinator other than the killed one.
	c.waitFor(30*time.Second, fmt.Sprintf("FindCoordinator naming another broker than %d", coord), func(adm *kadm.Client) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		coords = adm.FindGroupCoordinators(ctx, grp)
		return coords[grp].Err == nil && coords[grp].NodeID != coord
	})
	t.Logf("broker %d serves the committed offsets %v after the kill", coords[grp].NodeID, time.Since(killed).Round(time.Millisecond))

	// Phase 2: a new member resumes from the committed offsets.
	cl2, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	var again []string
	rest := map[string]bool{}
	for len(seen)+len(rest) < total && ctx2.Err() == nil && len(again) == 0 {
		fs := cl2.PollFetches(ctx2)
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if seen[v] || rest[v] {
				again = append(again, v)
			}
			rest[v] = true
		})
	}
	if len(again) > 0 {
		t.Fatalf("records committed before the kill delivered again: %v", again[:min(len(again), 10)])
	}
	if len(seen)+len(rest) != total {
		var missing []string
		for _, v := range all {
			if !seen[v] && !rest[v] {
				missing = append(missing, v)
			}
		}
		t.Fatalf("after the kill: %d + %d of %d records; missing %s\n%s", len(seen), len(rest), total, strings.Join(missing[:min(len(missing), 10)], " "), c.logs())
	}
}
