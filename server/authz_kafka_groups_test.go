package server

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

// offsetFetchV8 fetches the committed offsets of groups through OffsetFetch
// v8; topics[g] nil asks for all of g's offsets.
func offsetFetchV8(t *testing.T, s *Server, groups []string, topics map[string][]string) []kmsg.OffsetFetchResponseGroup {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		if ts := topics[g]; ts != nil {
			rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, topic := range ts {
				rg.Topics = append(rg.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: topic, Partitions: []int32{0}})
			}
		}
		req.Groups = append(req.Groups, rg)
	}
	return mustCall(t, s, 8, req).(*kmsg.OffsetFetchResponse).Groups
}

// TestOffsetDeleteNeedsReadOnTopics: OffsetDelete needs Delete on the group
// and Read on each topic, as Kafka's handleOffsetDeleteRequest: a topic the
// principal may not Read answers TOPIC_AUTHORIZATION_FAILED for each
// partition and keeps its offset; the others are deleted.
func TestOffsetDeleteNeedsReadOnTopics(t *testing.T) {
	s, az := newDenyServer(t, nil, "mine", "secret")
	commitOffset(t, s, "g", "mine", 0, 5)
	commitOffset(t, s, "g", "secret", 0, 7)
	az.set(denyKey{acl.OpRead, acl.ResourceTopic, "secret"})

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	for _, topic := range []string{"mine", "secret"} {
		od.Topics = append(od.Topics, kmsg.OffsetDeleteRequestTopic{Topic: topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
	}
	resp := mustCall(t, s, 0, od).(*kmsg.OffsetDeleteResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("OffsetDelete: %s", code(resp.ErrorCode))
	}
	got := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got[rt.Topic] = p.ErrorCode
		}
	}
	if got["mine"] != 0 || got["secret"] != kerr.TopicAuthorizationFailed.Code || len(got) != 2 {
		t.Errorf("mine %s, secret %s (%d topics); want none, TOPIC_AUTHORIZATION_FAILED", code(got["mine"]), code(got["secret"]), len(got))
	}
	az.set()
	left := map[string]int64{}
	for _, rt := range offsetFetchV8(t, s, []string{"g"}, map[string][]string{"g": {"mine", "secret"}})[0].Topics {
		left[rt.Topic] = rt.Partitions[0].Offset
	}
	if left["mine"] != -1 || left["secret"] != 7 {
		t.Errorf("offsets left: mine %d, secret %d; want -1 (deleted), 7 (kept)", left["mine"], left["secret"])
	}
}

// TestFindCoordinatorEachKey: FindCoordinator v4 answers each key on its
// own, as Kafka's handleFindCoordinatorRequestV4AndAbove: a group the
// principal may not Describe is GROUP_AUTHORIZATION_FAILED with no node, a
// transactional id TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and the others
// name the coordinator. Before v4 the one key's refusal is the answer.
func TestFindCoordinatorEachKey(t *testing.T) {
	s, az := newDenyServer(t, nil)
	az.set(
		denyKey{acl.OpDescribe, acl.ResourceGroup, "secret"},
		denyKey{acl.OpDescribe, acl.ResourceTransactionalID, "secret"},
		denyKey{acl.OpDescribe, acl.ResourceTransactionalID, ""},
	)
	t.Run("empty transactional id", func(t *testing.T) {
		// Kafka's getCoordinator checks Describe before anything else.
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{""}
		if c := mustCall(t, s, 4, fc).(*kmsg.FindCoordinatorResponse).Coordinators[0]; c.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
			t.Errorf("got %s, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", code(c.ErrorCode))
		}
	})
	for _, tc := range []struct {
		name    string
		typ     int8
		refused int16
	}{
		{"group", 0, kerr.GroupAuthorizationFailed.Code},
		{"transaction", 1, kerr.TransactionalIDAuthorizationFailed.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorType, fc.CoordinatorKeys = tc.typ, []string{"mine", "secret", "also-mine"}
			cs := mustCall(t, s, 4, fc).(*kmsg.FindCoordinatorResponse).Coordinators
			if len(cs) != 3 {
				t.Fatalf("%d coordinators, want 3", len(cs))
			}
			for i, want := range []struct {
				key  string
				code int16
				node int32
			}{{"mine", 0, s.nodeID}, {"secret", tc.refused, -1}, {"also-mine", 0, s.nodeID}} {
				if c := cs[i]; c.Key != want.key || c.ErrorCode != want.code || c.NodeID != want.node {
					t.Errorf("coordinator %d: %q %s node %d; want %q %s node %d", i, c.Key, code(c.ErrorCode), c.NodeID, want.key, code(want.code), want.node)
				}
			}
			old := kmsg.NewPtrFindCoordinatorRequest()
			old.CoordinatorType, old.CoordinatorKey = tc.typ, "secret"
			if resp := mustCall(t, s, 3, old).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != tc.refused || resp.NodeID != -1 {
				t.Errorf("v3: %s node %d; want %s node -1", code(resp.ErrorCode), resp.NodeID, code(tc.refused))
			}
		})
	}
}

// TestDeleteGroupsEachGroup: DeleteGroups deletes the groups the principal
// may Delete and answers GROUP_AUTHORIZATION_FAILED for the others only,
// each group once, as Kafka's handleDeleteGroupsRequest.
func TestDeleteGroupsEachGroup(t *testing.T) {
	s, az := newDenyServer(t, nil, "t")
	commitOffset(t, s, "mine", "t", 0, 1)
	commitOffset(t, s, "secret", "t", 0, 1)
	az.set(denyKey{acl.OpDelete, acl.ResourceGroup, "secret"})
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"mine", "secret", "mine"}
	got := map[string]int16{}
	resp := mustCall(t, s, 2, dg).(*kmsg.DeleteGroupsResponse)
	for _, g := range resp.Groups {
		got[g.Group] = g.ErrorCode
	}
	if len(resp.Groups) != 2 || got["mine"] != 0 || got["secret"] != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("%d results: mine %s, secret %s; want 2: none, GROUP_AUTHORIZATION_FAILED", len(resp.Groups), code(got["mine"]), code(got["secret"]))
	}
	groups := offsetFetchV8(t, s, []string{"mine", "secret"}, map[string][]string{"mine": {"t"}, "secret": {"t"}})
	if groups[0].Topics[0].Partitions[0].Offset != -1 || groups[1].Topics[0].Partitions[0].Offset != 1 {
		t.Errorf("offsets after: mine %d, secret %d; want -1 (deleted), 1 (kept)",
			groups[0].Topics[0].Partitions[0].Offset, groups[1].Topics[0].Partitions[0].Offset)
	}
}

// TestOffsetFetchEachGroupAndTopic: OffsetFetch v8 answers a group the
// principal may not Describe with GROUP_AUTHORIZATION_FAILED and the others
// normally; a requested topic it may not Describe is
// TOPIC_AUTHORIZATION_FAILED (offset -1) per partition, and a fetch of all
// a group's offsets leaves it out, as Kafka's
// handleOffsetFetchRequestFromCoordinator. v7 the same for one group.
func TestOffsetFetchEachGroupAndTopic(t *testing.T) {
	s, az := newDenyServer(t, nil, "mine", "secret")
	for _, g := range []string{"named", "denied", "all"} {
		commitOffset(t, s, g, "mine", 0, 3)
		commitOffset(t, s, g, "secret", 0, 4)
	}
	az.set(
		denyKey{acl.OpDescribe, acl.ResourceGroup, "denied"},
		denyKey{acl.OpDescribe, acl.ResourceTopic, "secret"},
	)
	type part struct {
		offset int64
		code   int16
	}
	offsets := func(topics []kmsg.OffsetFetchResponseGroupTopic) map[string]part {
		m := map[string]part{}
		for _, rt := range topics {
			m[rt.Topic] = part{rt.Partitions[0].Offset, rt.Partitions[0].ErrorCode}
		}
		return m
	}
	denied := part{-1, kerr.TopicAuthorizationFailed.Code}
	groups := offsetFetchV8(t, s, []string{"named", "denied", "all"}, map[string][]string{"named": {"mine", "secret"}, "denied": {"mine"}})
	if len(groups) != 3 || groups[0].Group != "named" || groups[1].Group != "denied" || groups[2].Group != "all" {
		t.Fatalf("groups %v, want named, denied, all", groups)
	}
	if got := offsets(groups[0].Topics); groups[0].ErrorCode != 0 || len(got) != 2 || got["mine"] != (part{3, 0}) || got["secret"] != denied {
		t.Errorf("named: %s %v; want mine 3, secret TOPIC_AUTHORIZATION_FAILED", code(groups[0].ErrorCode), got)
	}
	if groups[1].ErrorCode != kerr.GroupAuthorizationFailed.Code || len(groups[1].Topics) != 0 {
		t.Errorf("denied: %s, %d topics; want GROUP_AUTHORIZATION_FAILED, none", code(groups[1].ErrorCode), len(groups[1].Topics))
	}
	if got := offsets(groups[2].Topics); groups[2].ErrorCode != 0 || len(got) != 1 || got["mine"] != (part{3, 0}) {
		t.Errorf("all: %s %v; want mine 3 only", code(groups[2].ErrorCode), got)
	}

	t.Run("v7", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			topics []string
			want   map[string]part
		}{
			{"named", []string{"mine", "secret"}, map[string]part{"mine": {3, 0}, "secret": denied}},
			{"all", nil, map[string]part{"mine": {3, 0}}},
		} {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group = tc.name
			if tc.topics != nil {
				req.Topics = []kmsg.OffsetFetchRequestTopic{}
				for _, topic := range tc.topics {
					req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: topic, Partitions: []int32{0}})
				}
			}
			resp := mustCall(t, s, 7, req).(*kmsg.OffsetFetchResponse)
			got := map[string]part{}
			for _, rt := range resp.Topics {
				got[rt.Topic] = part{rt.Partitions[0].Offset, rt.Partitions[0].ErrorCode}
			}
			if resp.ErrorCode != 0 || len(got) != len(tc.want) {
				t.Errorf("%s: %s %v; want %v", tc.name, code(resp.ErrorCode), got, tc.want)
				continue
			}
			for topic, w := range tc.want {
				if got[topic] != w {
					t.Errorf("%s: %s %v, want %v", tc.name, topic, got[topic], w)
				}
			}
		}
	})
}

// TestDescribeGroupsEachGroup: DescribeGroups answers the groups the
// principal may not Describe GROUP_AUTHORIZATION_FAILED, first, then the
// others as the coordinator describes them (Kafka's
// handleDescribeGroupsRequest).
func TestDescribeGroupsEachGroup(t *testing.T) {
	s, az := newDenyServer(t, nil, "t")
	commitOffset(t, s, "mine", "t", 0, 1)
	az.set(denyKey{acl.OpDescribe, acl.ResourceGroup, "secret"})
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"mine", "secret"}
	gs := mustCall(t, s, 5, dg).(*kmsg.DescribeGroupsResponse).Groups
	if len(gs) != 2 || gs[0].Group != "secret" || gs[0].ErrorCode != kerr.GroupAuthorizationFailed.Code ||
		gs[1].Group != "mine" || gs[1].ErrorCode != 0 || gs[1].State != "Empty" {
		t.Errorf("got %+v; want secret GROUP_AUTHORIZATION_FAILED, then mine Empty", gs)
	}
}

// TestOffsetDeleteUnknownPartitions: OffsetDelete answers
// UNKNOWN_TOPIC_OR_PARTITION for a topic or partition the cluster does not
// have, before the coordinator sees the request, and deletes the others,
// as Kafka's handleOffsetDeleteRequest.
func TestOffsetDeleteUnknownPartitions(t *testing.T) {
	s, _ := newDenyServer(t, nil, "mine")
	commitOffset(t, s, "g", "mine", 0, 5)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "gone", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "mine", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 5}}},
	}
	resp := mustCall(t, s, 0, od).(*kmsg.OffsetDeleteResponse)
	got := map[string]int16{}
	n := 0
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got[fmt.Sprintf("%s-%d", rt.Topic, p.Partition)] = p.ErrorCode
			n++
		}
	}
	unknown := kerr.UnknownTopicOrPartition.Code
	if resp.ErrorCode != 0 || n != 3 || got["gone-0"] != unknown || got["mine-0"] != 0 || got["mine-5"] != unknown {
		t.Errorf("got %s, %v; want gone-0 and mine-5 UNKNOWN_TOPIC_OR_PARTITION, mine-0 none", code(resp.ErrorCode), got)
	}
}
