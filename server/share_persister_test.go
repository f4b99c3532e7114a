package server

// The persister APIs (83-87) with raw requests, as another broker sends
// them: Kafka's answers for a state's life (initialize, read, write,
// summary, delete), its fencing, and hostile input (unknown groups,
// topics and partitions, bad epochs, more state batches than a share
// partition may hold); FindCoordinator key type 2.

import (
	"context"
	"encoding/base64"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/sharecoord"
)

// persisterReq sends a persister API request straight to the broker (not
// through kgo's share coordinator routing) and returns the first
// partition's answer fields through get.
func persisterReq[R kmsg.Response](t *testing.T, e *shareEnv, req kmsg.Request) R {
	t.Helper()
	resp, err := e.admin.Broker(int(e.s.nodeID)).Request(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

type psBatch struct {
	first, last int64
	state       int8
	count       int16
}

func psWrite(t *testing.T, e *shareEnv, group string, topic [16]byte, part, stateEpoch, leaderEpoch int32, start int64, batches []psBatch) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = part, stateEpoch, leaderEpoch, start
	for _, b := range batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.first, b.last, b.state, b.count
		rp.StateBatches = append(rp.StateBatches, sb)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r := persisterReq[*kmsg.WriteShareGroupStateResponse](t, e, req)
	return r.Topics[0].Partitions[0].ErrorCode
}

func psRead(t *testing.T, e *shareEnv, group string, topic [16]byte, part, leaderEpoch int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = part, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return persisterReq[*kmsg.ReadShareGroupStateResponse](t, e, req).Topics[0].Partitions[0]
}

// psReadLoaded reads group's state once its __share_group_state
// partition has loaded (COORDINATOR_LOAD_IN_PROGRESS until then, which a
// persister retries), bounded.
func psReadLoaded(t *testing.T, e *shareEnv, group string, topic [16]byte, part int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	t.Helper()
	r := psRead(t, e, group, topic, part, 0)
	for i := 0; i < 500 && r.ErrorCode == kerr.CoordinatorLoadInProgress.Code; i++ { // bounded
		time.Sleep(10 * time.Millisecond)
		r = psRead(t, e, group, topic, part, 0)
	}
	return r
}

func psInit(t *testing.T, e *shareEnv, group string, topic [16]byte, part, stateEpoch int32, start int64) int16 {
	t.Helper()
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.StartOffset = part, stateEpoch, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return persisterReq[*kmsg.InitializeShareGroupStateResponse](t, e, req).Topics[0].Partitions[0].ErrorCode
}

func psSummary(t *testing.T, e *shareEnv, group string, topic [16]byte, part, leaderEpoch int32) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = part, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return persisterReq[*kmsg.ReadShareGroupStateSummaryResponse](t, e, req).Topics[0].Partitions[0]
}

func psDelete(t *testing.T, e *shareEnv, group string, topic [16]byte, part int32) int16 {
	t.Helper()
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewDeleteShareGroupStateRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = part
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return persisterReq[*kmsg.DeleteShareGroupStateResponse](t, e, req).Topics[0].Partitions[0].ErrorCode
}

func psBatches(p kmsg.ReadShareGroupStateResponseTopicPartition) []psBatch {
	var out []psBatch
	for _, b := range p.StateBatches {
		out = append(out, psBatch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
	}
	return out
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: %s, want %s", what, psErrName(got), psErrName(w))
	}
}

// TestSharePersisterAPIs: a state's life through 83-87 as Kafka's share
// coordinator answers it, then hostile input, none of which changes the
// state or panics the broker.
func TestSharePersisterAPIs(t *testing.T) {
	e := startShareServer(t, 0, nil)
	const g = "pg"
	topic := e.topicID

	// No __share_group_state yet: no coordinator. FindCoordinator (key
	// type 2), as a persister asks first, creates it.
	wantCode(t, "read without the topic", psRead(t, e, g, topic, 0, 0).ErrorCode, kerr.NotCoordinator)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = coordinatorTypeShare
	fc.CoordinatorKeys = []string{g + ":" + base64.RawURLEncoding.EncodeToString(topic[:]) + ":0"}
	if c := persisterReq[*kmsg.FindCoordinatorResponse](t, e, fc).Coordinators[0]; c.ErrorCode != 0 {
		t.Fatalf("find coordinator: %s", psErrName(c.ErrorCode))
	}
	// Nothing yet: start offset -1, state epoch 0, no error (once the new
	// partition is loaded: COORDINATOR_LOAD_IN_PROGRESS until then).
	r0 := psReadLoaded(t, e, g, topic, 0)
	// The other groups below may hash to other partitions of the topic,
	// each loaded on its own.
	for _, other := range []string{"nobody", "other"} {
		psReadLoaded(t, e, other, topic, 0)
	}
	if r := r0; r.ErrorCode != 0 || r.StartOffset != -1 || r.StateEpoch != 0 || len(r.StateBatches) != 0 {
		t.Fatalf("read of no state: %+v", r)
	}
	wantCode(t, "initialize", psInit(t, e, g, topic, 0, 1, 5), nil)
	if r := psRead(t, e, g, topic, 0, 3); r.ErrorCode != 0 || r.StartOffset != 5 || r.StateEpoch != 1 || len(r.StateBatches) != 0 {
		t.Fatalf("read after initialize: %+v", r)
	}
	written := []psBatch{{5, 7, int8(share.Acknowledged), 1}, {8, 8, int8(share.Available), 2}}
	wantCode(t, "write", psWrite(t, e, g, topic, 0, 1, 3, 5, written), nil)
	if r := psRead(t, e, g, topic, 0, 3); r.ErrorCode != 0 || r.StartOffset != 5 || !slices.Equal(psBatches(r), written) {
		t.Fatalf("read after write: %+v", r)
	}
	// A write merges: offset 8 is acknowledged now, the start moves to 6.
	wantCode(t, "merging write", psWrite(t, e, g, topic, 0, -1, 3, 6, []psBatch{{8, 8, int8(share.Acknowledged), 2}}), nil)
	want := []psBatch{{6, 7, int8(share.Acknowledged), 1}, {8, 8, int8(share.Acknowledged), 2}}
	if r := psRead(t, e, g, topic, 0, 3); r.ErrorCode != 0 || r.StartOffset != 6 || !slices.Equal(psBatches(r), want) {
		t.Fatalf("read after the merging write: %+v, want batches %v", r, want)
	}

	// Fencing: an older leader epoch or state epoch changes nothing.
	wantCode(t, "write of an older leader epoch", psWrite(t, e, g, topic, 0, 1, 2, 9, nil), kerr.FencedLeaderEpoch)
	wantCode(t, "read of an older leader epoch", psRead(t, e, g, topic, 0, 2).ErrorCode, kerr.FencedLeaderEpoch)
	wantCode(t, "write of an older state epoch", psWrite(t, e, g, topic, 0, 0, 3, 9, nil), kerr.FencedStateEpoch)
	wantCode(t, "initialize of an older state epoch", psInit(t, e, g, topic, 0, 0, 0), kerr.FencedStateEpoch)
	// A read with a newer leader epoch moves it: the leader before is
	// fenced from then on.
	if r := psRead(t, e, g, topic, 0, 4); r.ErrorCode != 0 || r.StartOffset != 6 {
		t.Fatalf("read with a newer leader epoch: %+v", r)
	}
	wantCode(t, "write of the leader before", psWrite(t, e, g, topic, 0, 1, 3, 9, nil), kerr.FencedLeaderEpoch)
	if s := psSummary(t, e, g, topic, 0, -1); s.ErrorCode != 0 || s.StateEpoch != 1 || s.LeaderEpoch != 4 || s.StartOffset != 6 {
		t.Fatalf("summary: %+v", s)
	}
	wantCode(t, "summary of an older leader epoch", psSummary(t, e, g, topic, 0, 3).ErrorCode, kerr.FencedLeaderEpoch)

	// Hostile input.
	var unknownTopic [16]byte
	unknownTopic[0] = 0xee
	for _, tc := range []struct {
		name string
		code int16
		want *kerr.Error
	}{
		{"unknown group reads as no state", psRead(t, e, "nobody", topic, 0, 0).ErrorCode, nil},
		{"empty group", psRead(t, e, "", topic, 0, 0).ErrorCode, kerr.InvalidRequest},
		{"zero topic id", psWrite(t, e, g, [16]byte{}, 0, 1, 4, 0, nil), kerr.InvalidRequest},
		{"negative partition", psRead(t, e, g, topic, -1, 0).ErrorCode, kerr.InvalidRequest},
		{"leader epoch below -1", psWrite(t, e, g, topic, 0, 1, -7, 0, nil), kerr.InvalidRequest},
		{"state epoch below -1", psInit(t, e, g, topic, 0, -9, 0), kerr.InvalidRequest},
		{"start offset below -1", psWrite(t, e, g, topic, 0, 1, 4, -5, nil), kerr.InvalidRequest},
		{"unknown topic", psRead(t, e, g, unknownTopic, 0, 0).ErrorCode, kerr.UnknownTopicOrPartition},
		{"partition past the topic", psWrite(t, e, g, topic, 99, 1, 4, 0, nil), kerr.UnknownTopicOrPartition},
		{"more state batches than a share partition holds", psWrite(t, e, g, topic, 0, 1, 4, 6, func() []psBatch {
			bs := make([]psBatch, sharecoord.MaxBatches+1)
			for i := range bs {
				bs[i] = psBatch{int64(10 + 2*i), int64(10 + 2*i), int8(share.Archived), 1}
			}
			return bs
		}()), kerr.InvalidRequest},
		{"inverted and overlapping batches", psWrite(t, e, "other", topic, 0, 0, 0, 0, []psBatch{{9, 3, 2, 1}, {2, 4, 2, 1}, {3, 5, 4, 1}}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.name, tc.code, tc.want) })
	}
	if r := psRead(t, e, g, topic, 0, 4); r.ErrorCode != 0 || r.StartOffset != 6 || !slices.Equal(psBatches(r), want) {
		t.Fatalf("state after hostile writes: %+v, want batches %v", r, want)
	}

	// Delete: gone, and deleting again is no error.
	wantCode(t, "delete", psDelete(t, e, g, topic, 0), nil)
	if r := psRead(t, e, g, topic, 0, 4); r.ErrorCode != 0 || r.StartOffset != -1 {
		t.Fatalf("read after delete: %+v", r)
	}
	wantCode(t, "delete again", psDelete(t, e, g, topic, 0), nil)
	wantCode(t, "delete of an unknown topic's state", psDelete(t, e, g, unknownTopic, 0), nil)
}

// TestFindShareCoordinator: FindCoordinator key type 2 names the leader of
// the key's __share_group_state partition; a malformed key is
// INVALID_REQUEST.
func TestFindShareCoordinator(t *testing.T) {
	e := startShareServer(t, 0, nil)
	key := "g:" + base64.RawURLEncoding.EncodeToString(e.topicID[:]) + ":0"
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = coordinatorTypeShare
	req.CoordinatorKeys = []string{key, "g:notanid:0", "g:" + base64.RawURLEncoding.EncodeToString(e.topicID[:]) + ":-1", "nocolons"}
	resp := persisterReq[*kmsg.FindCoordinatorResponse](t, e, req)
	if len(resp.Coordinators) != 4 {
		t.Fatalf("answered %d keys", len(resp.Coordinators))
	}
	if c := resp.Coordinators[0]; c.ErrorCode != 0 || c.NodeID != int32(e.s.nodeID) || c.Port != e.s.advPort {
		t.Fatalf("coordinator of %s: %+v (node %d port %d)", key, c, e.s.nodeID, e.s.advPort)
	}
	for _, c := range resp.Coordinators[1:] {
		if c.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("key %q: %s, want INVALID_REQUEST", c.Key, psErrName(c.ErrorCode))
		}
	}
	if k, ok := parseShareCoordinatorKey(key); !ok || k.Group != "g" || k.Topic != e.topicID || k.Partition != 0 || sharecoord.CoordinatorKey(k) != key {
		t.Fatalf("parse %q: %+v %v", key, k, ok)
	}
}

func psErrName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).Error()
}

// denyClusterAction refuses ClusterAction on the cluster, allows the rest.
type denyClusterAction struct{}

func (denyClusterAction) Authorize(_ string, _ netip.Addr, op acl.Operation, rt acl.ResourceType, _ string) bool {
	return !(op == acl.OpClusterAction && rt == acl.ResourceCluster)
}

// TestSharePersisterAuthorization: without ClusterAction on the cluster
// every persister API answers CLUSTER_AUTHORIZATION_FAILED for each
// partition, and FindCoordinator for a share key too (Kafka's
// KafkaApis), and nothing is written.
func TestSharePersisterAuthorization(t *testing.T) {
	e := startShareServer(t, 0, nil, func(s *Server) { s.az.authz = denyClusterAction{} })
	topic := e.topicID
	for _, tc := range []struct {
		name string
		code int16
	}{
		{"initialize", psInit(t, e, "g", topic, 0, 1, 0)},
		{"read", psRead(t, e, "g", topic, 0, 0).ErrorCode},
		{"write", psWrite(t, e, "g", topic, 0, 1, 0, 0, []psBatch{{0, 0, int8(share.Acknowledged), 1}})},
		{"summary", psSummary(t, e, "g", topic, 0, 0).ErrorCode},
		{"delete", psDelete(t, e, "g", topic, 0)},
	} {
		wantCode(t, tc.name, tc.code, kerr.ClusterAuthorizationFailed)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = coordinatorTypeShare
	fc.CoordinatorKeys = []string{"g:" + base64.RawURLEncoding.EncodeToString(topic[:]) + ":0"}
	wantCode(t, "find coordinator", persisterReq[*kmsg.FindCoordinatorResponse](t, e, fc).Coordinators[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	if st, ok, err := e.s.share.coord.ReadState(context.Background(), share.Key{Group: "g", Topic: topic}, -1); ok || err == nil && st.StartOffset != -1 {
		t.Fatalf("state written without authorization: %+v %v %v", st, ok, err)
	}
}
