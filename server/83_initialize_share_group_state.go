package server

// InitializeShareGroupState (key 83), served v0, inter-broker: a share
// partition's state becomes a state epoch and start offset with nothing in
// flight (sharecoord.Coordinator.Initialize). Served only with
// group.share.enable, by the share coordinator of each named share
// partition (the leader of its __share_group_state partition).
//
// The checks every persister API (83-87) makes, in Kafka's order
// (KafkaApis, ShareCoordinatorService, ShareCoordinatorShard), are
// shareStateCheck's: ClusterAction on the cluster
// (CLUSTER_AUTHORIZATION_FAILED for every partition); an empty group id,
// a zero topic id, a negative partition, or an epoch below -1:
// INVALID_REQUEST; not the coordinator: NOT_COORDINATOR; still loading:
// COORDINATOR_LOAD_IN_PROGRESS; a topic or partition the cluster does not
// have (not for Delete): UNKNOWN_TOPIC_OR_PARTITION. Then
// FENCED_STATE_EPOCH when the state is at a newer state epoch.

import (
	"context"
	"errors"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/sharecoord"
)

const (
	apiKeyInitializeShareGroupState  int16 = 83
	apiKeyReadShareGroupState        int16 = 84
	apiKeyWriteShareGroupState       int16 = 85
	apiKeyDeleteShareGroupState      int16 = 86
	apiKeyReadShareGroupStateSummary int16 = 87
)

// withSharePersister returns t with the persister APIs (83-87).
func withSharePersister(t apiTable) apiTable {
	t = maps.Clone(t)
	t[apiKeyInitializeShareGroupState] = api{0, 0, handleInitializeShareGroupState}
	t[apiKeyReadShareGroupState] = api{0, 0, handleReadShareGroupState}
	t[apiKeyWriteShareGroupState] = api{0, 1, handleWriteShareGroupState}
	t[apiKeyDeleteShareGroupState] = api{0, 0, handleDeleteShareGroupState}
	t[apiKeyReadShareGroupStateSummary] = api{0, 1, handleReadShareGroupStateSummary}
	return t
}

// shareStateReq is what the persister APIs share: the authorization of
// the request, checked once.
type shareStateReq struct {
	s       *Server
	allowed bool
	group   string
}

func newShareStateReq(s *Server, rc *reqCtx, req kmsg.Request, group string) shareStateReq {
	r := shareStateReq{s: s, allowed: s.az.allowedCluster(rc, acl.OpClusterAction), group: group}
	if !r.allowed {
		rc.logRefused(s.log, req, -1, -1, errClusterAuthorization)
	}
	return r
}

// check returns the share partition a persister API names and the code
// to answer it with instead of serving it (0: serve it). epochs are the
// request's leader or state epochs; known asks that the topic partition
// exist.
func (r shareStateReq) check(topic [16]byte, partition int32, known bool, epochs ...int32) (share.Key, int16, *string) {
	k := share.Key{Group: r.group, Topic: topic, Partition: partition}
	msg := func(s string) *string { return &s }
	if !r.allowed {
		return k, kerr.ClusterAuthorizationFailed.Code, nil
	}
	if r.group == "" {
		return k, kerr.InvalidRequest.Code, msg("the group id cannot be empty")
	}
	if topic == ([16]byte{}) {
		return k, kerr.InvalidRequest.Code, msg("the topic id cannot be null")
	}
	if partition < 0 {
		return k, kerr.InvalidRequest.Code, msg("the partition id cannot be a negative number")
	}
	for _, e := range epochs {
		if e < -1 {
			return k, kerr.InvalidRequest.Code, msg("an epoch cannot be below -1")
		}
	}
	if err := r.s.share.coord.Check(k); err != nil {
		return k, errorCode(err), nil
	}
	if known {
		name := r.s.lookup.topicNameByID(topic)
		if name == "" || int(partition) >= len(r.s.md.partitions(name)) {
			return k, kerr.UnknownTopicOrPartition.Code, nil
		}
	}
	return k, 0, nil
}

// shareStateCode is the code of a coordinator error.
func shareStateCode(err error) (int16, *string) {
	var code int16
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, sharecoord.ErrFencedLeaderEpoch):
		code = kerr.FencedLeaderEpoch.Code
	case errors.Is(err, sharecoord.ErrFencedStateEpoch):
		code = kerr.FencedStateEpoch.Code
	case errors.Is(err, sharecoord.ErrInvalid):
		code = kerr.InvalidRequest.Code
	case errors.Is(err, coordlog.ErrNotCoordinator):
		code = kerr.NotCoordinator.Code
	default:
		code = errorCode(err)
	}
	m := err.Error()
	return code, &m
}

// shareStateCtx bounds a persister API's coordinator work.
func shareStateCtx(rc *reqCtx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(shareCtx(rc), sharePersistRequestTimeout)
}

func handleInitializeShareGroupState(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.InitializeShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	sr := newShareStateReq(s, rc, r, r.GroupID)
	ctx, cancel := shareStateCtx(rc)
	defer cancel()
	for _, t := range r.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k, code, msg := sr.check(t.TopicID, p.Partition, true, p.StateEpoch)
			if code == 0 {
				code, msg = shareStateCode(s.share.coord.Initialize(ctx, k, p.StateEpoch, p.StartOffset))
			}
			rp.ErrorCode, rp.ErrorMessage = code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kresp(resp), nil
}
