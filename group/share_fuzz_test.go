package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzShareHeartbeats drives a share group with a sequence of heartbeats
// decoded from the input: joins with one or two topics, heartbeats at the
// member's epoch or a wrong one, leaves, bad epochs, partitions added and
// clock advances (sessions expire). Invariants: the coordinator never
// panics and never answers a Go error; after every step no member's epoch
// and not the assignment epoch passes the group epoch, a member holds only
// partitions that exist, and a target at the group epoch, for the topics
// as they are, gives every partition of a subscribed topic to at least one
// member.
func FuzzShareHeartbeats(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 1, 0, 1, 3, 1, 1, 2, 4, 0, 5, 9})
	f.Add([]byte{0, 0, 1, 9, 2, 0, 0, 5, 1, 6, 2, 1, 3, 7, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 300 {
			in = in[:300]
		}
		topics := newFakeTopics(map[string]int32{"t": 3, "u": 1})
		e := newShareEnv(t, topics, nil)
		epochs := map[string]int32{}
		for i := 0; i+1 < len(in); i += 2 {
			id := fmt.Sprintf("m%d", in[i]%5)
			req := kmsg.NewPtrShareGroupHeartbeatRequest()
			req.Version, req.GroupID, req.MemberID = 1, "g", id
			switch op := in[i+1] % 7; op {
			case 0: // join
				req.SubscribedTopicNames = []string{"t", "u"}[:1+int(in[i+1]/7)%2]
			case 1: // heartbeat at its epoch
				ep, ok := epochs[id]
				if !ok {
					continue
				}
				req.MemberEpoch = ep
			case 2: // a wrong epoch
				req.MemberEpoch = int32(in[i+1]) - 100
			case 3:
				req.MemberEpoch = -1
			case 4: // partitions added
				topics.set("t", 3+int32(in[i+1]%5))
				continue
			case 5:
				e.clock.Advance(time.Duration(in[i+1]) * 500 * time.Millisecond)
				continue
			case 6: // a subscription change
				ep, ok := epochs[id]
				if !ok {
					continue
				}
				req.MemberEpoch = ep
				req.SubscribedTopicNames = []string{"u", "t"}[:1+int(in[i+1]/7)%2]
			}
			resp, err := e.c.Handle(WithClient(t.Context(), "c", "h"), req)
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			r := resp.(*kmsg.ShareGroupHeartbeatResponse)
			switch {
			case r.ErrorCode == 0 && req.MemberEpoch >= 0:
				epochs[id] = r.MemberEpoch
			case req.MemberEpoch == -1 || r.ErrorCode != 0:
				delete(epochs, id)
			}
			checkShareInvariants(t, e, topics)
		}
	})
}

func checkShareInvariants(t *testing.T, e *env, topics *fakeTopics) {
	t.Helper()
	sg := e.c.shareGroup("g", false)
	if sg == nil {
		return
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	g := sg.g
	if g.AssignmentEpoch > g.Epoch {
		t.Fatalf("assignment epoch %d past group epoch %d", g.AssignmentEpoch, g.Epoch)
	}
	parts := map[[16]byte]int32{}
	for _, n := range []string{"t", "u"} {
		ti, _ := topics.Topic(n)
		parts[ti.ID] = ti.Partitions
	}
	for _, m := range g.Members() {
		if m.MemberEpoch > g.Epoch {
			t.Fatalf("member %s at epoch %d past group epoch %d", m.ID, m.MemberEpoch, g.Epoch)
		}
		for id, ps := range m.Assigned {
			for _, p := range ps {
				if p < 0 || p >= parts[id] {
					t.Fatalf("member %s holds %x/%d of %d partitions", m.ID, id[0], p, parts[id])
				}
			}
		}
	}
	if g.AssignmentEpoch != g.Epoch || e.c.shareHash(g) != g.MetadataHash {
		return // the next heartbeat computes a new target
	}
	held := map[[16]byte]map[int32]bool{}
	for _, a := range g.Target {
		for id, ps := range a {
			if held[id] == nil {
				held[id] = map[int32]bool{}
			}
			for _, p := range ps {
				held[id][p] = true
			}
		}
	}
	for _, n := range g.SubscribedTopics() {
		ti, _ := topics.Topic(n)
		for p := range ti.Partitions {
			if !held[ti.ID][p] {
				t.Fatalf("target at epoch %d leaves %s/%d unassigned: %v", g.Epoch, n, p, g.Target)
			}
		}
	}
}
