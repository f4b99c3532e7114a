package e2e

// The share-group offsets admin in a 3-broker cluster: a group whose three
// share partitions (of a 3-partition topic) have their state on three
// different share coordinators, so at least two are not the group's
// coordinator, which serves DescribeShareGroupOffsets (90),
// AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92) and
// DeleteGroups. Through the sluice CLI:
//
//   - share-group describe --offsets shows every partition's start offset
//     and lag;
//   - reset-offsets --to-earliest takes effect on all of them: a member
//     joining afterwards is delivered every record again, from offset 0,
//     although it was accepted before (the partition leaders forgot their
//     copies when the group's sessions ended);
//   - delete-offsets leaves no state on any coordinator, and a member
//     starts afresh at share.auto.offset.reset;
//   - delete leaves no state on any coordinator.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/sharecoord"
)

func TestClusterShareGroupOffsetsAdmin(t *testing.T) {
	t.Parallel()
	const (
		topic = "shareadm"
		parts = 3
		n     = 10 // records per partition in each round
	)
	c := startCluster(t, 3,
		"group.share.enable=true",
		"offsets.topic.num.partitions=3", "offsets.topic.replication.factor=3",
		"share.coordinator.state.topic.num.partitions=3",
		"group.share.min.heartbeat.interval.ms=500", "group.share.heartbeat.interval.ms=500")
	c.createTopic(topic, parts, 3, nil)
	topicID := c.topicID(topic)

	// A group whose three share partitions have three different share
	// coordinators (the leaders of their __share_group_state partitions;
	// FindCoordinator creates the topic).
	c.shareCoordinator("probe", topicID, 0)
	stateLeaders := map[int32]int32{}
	c.retryFor(60*time.Second, "leaders of "+sharecoord.Topic, func() bool {
		for p := int32(0); p < 3; p++ {
			pd, ok := c.partition(sharecoord.Topic, p)
			if !ok || pd.Leader < 0 {
				return false
			}
			stateLeaders[p] = pd.Leader
		}
		return true
	}, func() string { return fmt.Sprint(stateLeaders) })
	group := ""
	for i := 0; i < 1000 && group == ""; i++ {
		g := fmt.Sprintf("gadm-%d", i)
		seen := map[int32]bool{}
		for p := int32(0); p < parts; p++ {
			seen[stateLeaders[sharecoord.PartitionFor(share.Key{Group: g, Topic: topicID, Partition: p}, 3)]] = true
		}
		if len(seen) == parts {
			group = g
		}
	}
	if group == "" {
		t.Fatalf("no group name with its share partitions on 3 coordinators (state partition leaders %v)", stateLeaders)
	}
	coords := map[int32]int32{}
	for p := int32(0); p < parts; p++ {
		coords[p] = c.shareCoordinator(group, topicID, p)
	}
	t.Logf("group %s: share coordinators by partition %v, group coordinator %d", group, coords, c.groupCoordinator(group))
	c.setGroupConfig(group, "share.auto.offset.reset", "earliest")

	produce := func(round int) {
		t.Helper()
		cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for p := int32(0); p < parts; p++ {
			for i := 0; i < n; i++ {
				v := fmt.Sprintf("p%d-%02d", p, round*n+i)
				if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatalf("produce %s: %v", v, err)
				}
			}
		}
	}
	// consume runs a member until it has seen every value of want (each
	// accepted) and stops it; it returns what it saw.
	consume := func(what string, want []string) map[string]int {
		t.Helper()
		l := &shareLedger{deliveries: map[string]int{}, confirmed: map[string]bool{}}
		m := c.startShareMember(group, topic, l)
		defer m.close()
		c.retryFor(120*time.Second, what, func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, v := range want {
				if !l.confirmed[v] {
					return false
				}
			}
			return true
		}, func() string {
			l.mu.Lock()
			defer l.mu.Unlock()
			return fmt.Sprintf("%d of %d confirmed", len(l.confirmed), len(want))
		})
		l.mu.Lock()
		defer l.mu.Unlock()
		out := map[string]int{}
		for v, k := range l.deliveries {
			out[v] = k
		}
		return out
	}
	values := func(upTo int) []string {
		var out []string
		for p := 0; p < parts; p++ {
			for i := 0; i < upTo; i++ {
				out = append(out, fmt.Sprintf("p%d-%02d", p, i))
			}
		}
		return out
	}
	// offsets is `sluice share-group describe --offsets`: start offset and
	// lag by partition ("-" without state).
	offsets := func() map[int32][2]string {
		t.Helper()
		out := map[int32][2]string{}
		for _, line := range strings.Split(c.sluiceCLI("share-group", "describe", group, "--offsets"), "\n") {
			f := strings.Fields(line)
			if len(f) != 5 || f[0] != group || f[1] != topic {
				continue
			}
			p, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("describe --offsets row %q", line)
			}
			out[int32(p)] = [2]string{f[3], f[4]}
		}
		return out
	}
	wantOffsets := func(what, start, lag string) {
		t.Helper()
		var got map[int32][2]string
		c.retryFor(60*time.Second, what, func() bool {
			got = offsets()
			for p := int32(0); p < parts; p++ {
				g, ok := got[p]
				if !ok && start == "-" {
					g = [2]string{"-", "-"} // no row: no state and no member
				}
				if g != [2]string{start, lag} {
					return false
				}
			}
			return true
		}, func() string {
			return fmt.Sprintf("describe --offsets: %v, want start %s lag %s on each partition", got, start, lag)
		})
	}
	noState := func(what string) {
		t.Helper()
		for p := int32(0); p < parts; p++ {
			if r := c.readShareState(coords[p], group, topicID, p); r.ErrorCode != 0 || r.StartOffset != -1 {
				t.Fatalf("%s: ReadShareGroupState of partition %d from its coordinator %d: error %d, start offset %d", what, p, coords[p], r.ErrorCode, r.StartOffset)
			}
		}
	}

	// 1. Consume and accept the first round, then write a second one.
	produce(0)
	consume("the first round accepted", values(n))
	produce(1)
	wantOffsets("start offsets after the first round", strconv.Itoa(n), strconv.Itoa(n))

	// 2. Reset to the earliest offsets: every record comes again.
	c.sluiceCLI("share-group", "reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	wantOffsets("start offsets after reset-offsets", "0", strconv.Itoa(2*n))
	seen := consume("both rounds after the reset", values(2*n))
	for _, v := range values(n) {
		if seen[v] == 0 {
			t.Fatalf("%s, accepted before the reset, not delivered after it", v)
		}
	}
	wantOffsets("start offsets after consuming both rounds", strconv.Itoa(2*n), "0")

	// 3. Delete the topic's share state: none is left anywhere, and the
	// next member starts at share.auto.offset.reset (earliest).
	c.sluiceCLI("share-group", "delete-offsets", "--group", group, "--topic", topic)
	noState("after delete-offsets")
	wantOffsets("no start offsets after delete-offsets", "-", "-")
	consume("both rounds after delete-offsets", values(2*n))

	// 4. Delete the group: no state is left on any coordinator.
	c.sluiceCLI("share-group", "delete", group)
	noState("after delete")
}
