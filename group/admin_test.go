package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDeleteGroups(t *testing.T) {
	e := newEnv(t, nil)
	e.stableGroup("active", 1)
	if got := e.commit("idle", "", -1, "t", 0, 5); got != 0 {
		t.Fatal(got)
	}
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Version = 2
	r.Groups = []string{"idle", "active", "missing", "idle"}
	want := []int16{0, kerr.NonEmptyGroup.Code, kerr.GroupIDNotFound.Code, kerr.GroupIDNotFound.Code}
	for i, g := range do[*kmsg.DeleteGroupsResponse](e, r).Groups {
		t.Run(fmt.Sprint(i, g.Group), func(t *testing.T) {
			if g.ErrorCode != want[i] {
				t.Fatalf("error %d, want %d", g.ErrorCode, want[i])
			}
		})
	}
	if got := e.fetch("idle", "t", 0); got != -1 {
		t.Fatalf("offset of deleted group %d, want -1", got)
	}
	e.restart()
	if got := e.fetch("idle", "t", 0); got != -1 {
		t.Fatalf("offset of deleted group after restart %d, want -1", got)
	}
}

func TestDescribeAndListGroups(t *testing.T) {
	e := newEnv(t, nil)
	e.stableGroup("stable", 2)
	e.commit("simple", "", -1, "t", 0, 1)
	e.joinAsync(9, "preparing", "", nil, consumerMeta("t")) // waits out the initial delay
	e.waitMembers("preparing", 1)

	list := func(version int16, states ...string) map[string]string {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version, r.StatesFilter = version, states
		resp := do[*kmsg.ListGroupsResponse](e, r)
		out := map[string]string{}
		for _, g := range resp.Groups {
			out[g.Group] = g.GroupState + "/" + g.ProtocolType
		}
		return out
	}
	tests := []struct {
		name    string
		version int16
		states  []string
		want    map[string]string
	}{
		{"all", 4, nil, map[string]string{"stable": "Stable/consumer", "simple": "Empty/", "preparing": "PreparingRebalance/consumer"}},
		{"stable only", 4, []string{"stable"}, map[string]string{"stable": "Stable/consumer"}},
		{"two states", 5, []string{"Empty", "PreparingRebalance"}, map[string]string{"simple": "Empty/", "preparing": "PreparingRebalance/consumer"}},
		{"v3 has no state", 3, []string{"Empty"}, map[string]string{"stable": "/consumer", "simple": "/", "preparing": "/consumer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := list(tt.version, tt.states...)
			if tt.version < 4 {
				for k, v := range got {
					got[k] = v[len(v)-len(tt.want[k]):] // the state is not on the wire; strip it
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}

	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version, r.IncludeAuthorizedOperations = 5, true
	r.Groups = []string{"stable", "preparing", "unknown", ""}
	resp := do[*kmsg.DescribeGroupsResponse](e, r)
	for _, g := range resp.Groups {
		t.Run("describe/"+g.Group, func(t *testing.T) {
			switch g.Group {
			case "stable":
				if g.State != "Stable" || g.Protocol != "range" || len(g.Members) != 2 || len(g.Members[0].ProtocolMetadata) == 0 {
					t.Fatalf("%+v", g)
				}
				if g.AuthorizedOperations != groupOperations {
					t.Fatalf("operations %d", g.AuthorizedOperations)
				}
			case "preparing":
				if g.State != "PreparingRebalance" || g.Protocol != "" || len(g.Members) != 1 || len(g.Members[0].ProtocolMetadata) != 0 {
					t.Fatalf("%+v", g)
				}
			case "unknown":
				if g.State != "Dead" || g.ErrorCode != 0 || len(g.Members) != 0 {
					t.Fatalf("%+v", g)
				}
			case "":
				if g.ErrorCode != kerr.InvalidGroupID.Code {
					t.Fatalf("%+v", g)
				}
			}
		})
	}
}

func TestFindCoordinator(t *testing.T) {
	e := newEnv(t, nil)
	for v := int16(0); v <= 4; v++ {
		for _, kt := range []int8{0, 1, 5} {
			t.Run(fmt.Sprintf("v%d/type%d", v, kt), func(t *testing.T) {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.Version, r.CoordinatorType = v, kt
				r.CoordinatorKey, r.CoordinatorKeys = "g", []string{"g", "h"}
				resp := do[*kmsg.FindCoordinatorResponse](e, r)
				want := map[int8]int16{0: 0, 1: kerr.CoordinatorNotAvailable.Code, 5: kerr.InvalidRequest.Code}[kt]
				if v == 0 {
					want = 0 // v0 has no key type: always a group
				}
				type answer struct {
					code       int16
					node, port int32
					host       string
				}
				var got []answer
				if v >= 4 {
					for _, c := range resp.Coordinators {
						got = append(got, answer{c.ErrorCode, c.NodeID, c.Port, c.Host})
					}
				} else {
					got = append(got, answer{resp.ErrorCode, resp.NodeID, resp.Port, resp.Host})
				}
				for _, a := range got {
					if a.code != want || (want == 0 && (a.node != 1 || a.host != "localhost" || a.port != 9092)) {
						t.Fatalf("%+v, want code %d at 1 localhost:9092", a, want)
					}
				}
			})
		}
	}
}

func TestOffsetDelete(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 2) // subscribed to "t"
	e.commit("g", ids[0], gen, "t", 0, 1)
	e.commit("g", ids[0], gen, "old", 0, 1)
	e.commit("simple", "", -1, "t", 0, 1)
	del := func(group string, topics ...string) *kmsg.OffsetDeleteResponse {
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group
		for _, tp := range topics {
			r.Topics = append(r.Topics, kmsg.OffsetDeleteRequestTopic{Topic: tp, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
		}
		return do[*kmsg.OffsetDeleteResponse](e, r)
	}
	resp := del("g", "t", "old")
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || resp.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("%+v", resp)
	}
	if e.fetch("g", "t", 0) != 1 || e.fetch("g", "old", 0) != -1 {
		t.Fatal("wrong offsets deleted")
	}
	if resp := del("missing", "t"); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("missing group: %d", resp.ErrorCode)
	}
	if resp := del("simple", "t"); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("simple: %+v", resp)
	}
	if d := e.describe("simple"); d.State != "Dead" {
		t.Fatalf("simple group without offsets: %s, want removed", d.State)
	}
}

func TestLoadingAndClose(t *testing.T) {
	e := newEnv(t, nil)
	e.stableGroup("g", 1)
	// A JoinGroup blocked in a rebalance is answered when the coordinator closes.
	ch := e.joinAsync(9, "h", "", nil, consumerMeta("t"))
	e.waitMembers("h", 1)
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	if r := await(t, ch); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("blocked join after close: %d", r.ErrorCode)
	}
	if code := e.heartbeat("g", "x", 1, nil); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("heartbeat after close: %d", code)
	}
	// A cancelled context ends a blocked join with its error.
	e.start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.c.Handle(ctx, joinReq(3, "h2", "", nil, consumerMeta("t")))
		done <- err
	}()
	e.waitMembers("h2", 1)
	cancel()
	if err := await(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled join: %v", err)
	}
	if _, err := e.c.Handle(ctx, kmsg.NewPtrProduceRequest()); !errors.Is(err, ErrUnhandled) {
		t.Fatalf("produce: %v", err)
	}
	bad := kmsg.NewPtrOffsetCommitRequest()
	bad.Version = 0 // stored in ZooKeeper by Kafka: not served (README)
	if _, err := e.c.Handle(ctx, bad); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("offset commit v0: %v", err)
	}
}

// TestConcurrentMembers runs members as real clients would, on the real
// clock, each in its own goroutine: join (with the MEMBER_ID_REQUIRED round
// trip), sync (the leader assigns each member its own id), heartbeat, rejoin
// on REBALANCE_IN_PROGRESS, until each has seen a generation holding all of
// them. Run under -race. Loops are bounded; nothing asserts on timing.
func TestConcurrentMembers(t *testing.T) {
	const n = 6
	e := newEnv(t, func(o *Options) {
		o.Clock = nil
		o.InitialRebalanceDelay = 20 * time.Millisecond
	})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- runMember(e.c, "race", n)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func runMember(c *Coordinator, group string, n int) error {
	ctx := WithClient(context.Background(), "racer", "127.0.0.1")
	call := func(req kmsg.Request) kmsg.Response {
		resp, err := c.Handle(ctx, req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	memberID := ""
	for attempt := 0; attempt < 500; attempt++ {
		j := call(joinReq(9, group, memberID, nil, consumerMeta("t"))).(*kmsg.JoinGroupResponse)
		switch j.ErrorCode {
		case 0:
		case kerr.MemberIDRequired.Code, kerr.UnknownMemberID.Code:
			memberID = j.MemberID
			continue
		default:
			continue
		}
		memberID = j.MemberID
		var assign map[string][]byte
		if j.LeaderID == memberID {
			assign = map[string][]byte{}
			for _, m := range j.Members {
				assign[m.MemberID] = []byte(fmt.Sprintf("%s/%d", m.MemberID, len(j.Members)))
			}
		}
		s := call(syncReq(group, memberID, j.Generation, nil, assign)).(*kmsg.SyncGroupResponse)
		if s.ErrorCode != 0 {
			continue
		}
		if want := fmt.Sprintf("%s/%d", memberID, n); string(s.MemberAssignment) == want {
			// Everyone is in this generation: commit and stop.
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Version, r.Group, r.MemberID, r.Generation = 8, group, memberID, j.Generation
			r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: memberID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Offset: 1}}}}
			code := call(r).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
			if code == 0 || code == kerr.RebalanceInProgress.Code || code == kerr.IllegalGeneration.Code {
				return nil
			}
			return fmt.Errorf("member %s: commit error %d", memberID, code)
		}
		// Heartbeat until told to rejoin.
		for hb := 0; hb < 1000; hb++ {
			h := kmsg.NewPtrHeartbeatRequest()
			h.Version, h.Group, h.MemberID, h.Generation = 4, group, memberID, j.Generation
			if call(h).(*kmsg.HeartbeatResponse).ErrorCode != 0 {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return fmt.Errorf("member %s never saw all %d members", memberID, n)
}
