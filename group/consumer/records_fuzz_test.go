package consumer

import (
	"testing"

	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/offsets"
)

// checkInvariants checks Group's partition epoch invariants: no partition
// in two members' assignments, and partitionEpochs is exactly the
// members' partitions at their epochs.
func checkInvariants(t *testing.T, g *Group) {
	t.Helper()
	want := map[assignor.TopicID]map[int32]int32{}
	for id, m := range g.members {
		for _, a := range []assignor.Assignment{m.Assigned, m.PendingRevocation} {
			for tid, ps := range a {
				for _, p := range ps {
					if want[tid] == nil {
						want[tid] = map[int32]int32{}
					}
					if _, dup := want[tid][p]; dup {
						t.Fatalf("%x-%d held twice (member %s)", tid, p, id)
					}
					want[tid][p] = m.MemberEpoch
				}
			}
		}
	}
	if len(want) != len(g.partitionEpochs) {
		t.Fatalf("partition epochs %v, members hold %v", g.partitionEpochs, want)
	}
	for tid, ps := range want {
		for p, e := range ps {
			if got, ok := g.partitionEpochs[tid][p]; !ok || got != e {
				t.Fatalf("%x-%d: epoch %d (%v), members say %d", tid, p, got, ok, e)
			}
		}
		if len(ps) != len(g.partitionEpochs[tid]) {
			t.Fatalf("topic %x: epochs %v, members hold %v", tid, g.partitionEpochs[tid], ps)
		}
	}
	for inst, id := range g.static {
		if m, ok := g.members[id]; !ok || m.InstanceID != inst {
			t.Fatalf("instance %s points at %s, not its holder", inst, id)
		}
	}
}

// FuzzConsumerReplay decodes arbitrary key and value bytes as a consumer
// group record (offsets.DecodeConsumerKey/DecodeConsumerValue) and replays
// it into a group mid-rebalance, then replays the group's own records
// again. Invariants:
//   - nothing panics, whatever record is replayed, accepted or refused;
//   - the group's partition epochs stay exactly its members' partitions
//     at their epochs, no partition held twice, and every instance id
//     points at its member (checkInvariants).
func FuzzConsumerReplay(f *testing.F) {
	g := sampleGroup(f)
	for _, r := range groupRecords(g) {
		k, _ := offsets.AppendConsumerKey(nil, r.Key)
		var v []byte
		if r.Value != nil {
			v, _ = r.Value.AppendTo(nil)
		}
		f.Add(k, v)
	}
	for _, r := range MemberTombstones(g.ID, "A") {
		k, _ := offsets.AppendConsumerKey(nil, r.Key)
		f.Add(k, []byte(nil))
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		k, err := offsets.DecodeConsumerKey(key)
		if err != nil {
			return
		}
		k.Group = "orders-app"
		r := Record{Key: k}
		if len(value) > 0 {
			if r.Value, err = offsets.DecodeConsumerValue(k.Type, value); err != nil {
				return
			}
		}
		g := sampleGroup(t)
		_ = g.Replay(r)
		checkInvariants(t, g)
		for _, rec := range groupRecords(sampleGroup(t)) {
			_ = g.Replay(rec)
		}
		checkInvariants(t, g)
	})
}
