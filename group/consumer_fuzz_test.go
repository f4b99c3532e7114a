package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzConsumerHeartbeats drives a consumer group with a sequence of
// heartbeats decoded from the input: joins, heartbeats at the member's
// epoch or a wrong one, with what the member was given or something else,
// leaves, static leaves, topic changes and clock advances. Invariants: the
// coordinator never panics and never answers a Go error; after every step
// no partition is held by two members, no member's epoch passes the group
// epoch, and the assignment epoch never passes the group epoch.
func FuzzConsumerHeartbeats(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 1, 0, 1, 3, 1, 1, 2, 4, 0, 5, 9})
	f.Add([]byte{0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2, 2, 0, 7, 3, 6, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 300 {
			in = in[:300]
		}
		topics := newFakeTopics(map[string]int32{"t": 4, "u": 2})
		e := newConsumerEnv(t, topics, func(o *Options) { o.ConsumerSessionTimeout = 5 * time.Second })
		type mstate struct {
			epoch int32
			owned []kmsg.ConsumerGroupHeartbeatRequestTopic
		}
		ms := map[string]*mstate{}
		for i := 0; i+1 < len(in); i += 2 {
			id := fmt.Sprintf("m%d", in[i]%4)
			instance := ""
			if in[i]%4 == 3 {
				instance = "static"
			}
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g", id, -1
			if instance != "" {
				req.InstanceID = &instance
			}
			st := ms[id]
			switch op := in[i+1] % 9; op {
			case 0: // join
				req.MemberEpoch, req.RebalanceTimeoutMillis = 0, 2000
				req.SubscribedTopicNames = []string{"t", "u"}[:1+int(in[i+1]/9)%2]
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			case 1, 2: // heartbeat at its epoch, reporting what it owns (2: nil)
				if st == nil {
					continue
				}
				req.MemberEpoch = st.epoch
				if op == 1 {
					req.Topics = st.owned
				}
			case 3: // a wrong epoch
				req.MemberEpoch = int32(in[i+1]) - 100
			case 4:
				req.MemberEpoch = -1
			case 5:
				req.MemberEpoch = -2
			case 6: // partitions added
				topics.set("t", 4+int32(in[i+1]%5))
				continue
			case 7:
				e.clock.Advance(time.Duration(in[i+1]) * 50 * time.Millisecond)
				continue
			case 8: // claims partitions it was never given
				req.MemberEpoch = 1
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: [16]byte{'t'}, Partitions: []int32{0, 1, 2, 3, 99, -1}}}
			}
			resp, err := e.c.Handle(WithClient(t.Context(), "c", "h"), req)
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
			if r.ErrorCode == 0 && req.MemberEpoch >= 0 {
				if st == nil {
					st = &mstate{}
					ms[id] = st
				}
				st.epoch = r.MemberEpoch
				if r.Assignment != nil {
					st.owned = ownedOfResp(r.Assignment)
				}
			}
			if r.ErrorCode == 0 && req.MemberEpoch < 0 {
				delete(ms, id)
			}
			checkConsumerGroup(t, e)
		}
	})
}

func checkConsumerGroup(t *testing.T, e *env) {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{"g"}
	g := do[*kmsg.ConsumerGroupDescribeResponse](e, req).Groups[0]
	if g.ErrorCode != 0 {
		return // not created yet
	}
	if g.AssignmentEpoch > g.Epoch {
		t.Fatalf("assignment epoch %d past group epoch %d", g.AssignmentEpoch, g.Epoch)
	}
	held := map[string]string{}
	for _, m := range g.Members {
		if m.MemberEpoch > g.Epoch {
			t.Fatalf("member %s at epoch %d past group epoch %d", m.MemberID, m.MemberEpoch, g.Epoch)
		}
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				k := fmt.Sprintf("%x/%d", tp.TopicID, p)
				if o, dup := held[k]; dup {
					t.Fatalf("partition %s held by %s and %s", k, o, m.MemberID)
				}
				held[k] = m.MemberID
			}
		}
	}
}
