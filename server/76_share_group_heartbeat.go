package server

// ShareGroupHeartbeat (key 76), version 1 (KIP-932; Kafka 4.1+ serves v1
// only). The group coordinator (package group, share_heartbeat.go) owns the
// semantics; here, as Kafka 4.2's KafkaApis.handleShareGroupHeartbeat:
//
//   - Read on the group, else GROUP_AUTHORIZATION_FAILED;
//   - Describe on every subscribed topic name, else the whole answer is
//     TOPIC_AUTHORIZATION_FAILED.
//
// The key is in the dispatch table (and so in ApiVersions) only when
// group.share.enable is set (apisFor): a client sees share groups only
// once the broker serves them. franz-go's kgo.ShareGroup needs 76-79 all
// advertised.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/group"
	"github.com/sluice/sluice/internal/errcode"
)

const (
	apiKeyShareGroupHeartbeat int16 = 76
	apiKeyShareGroupDescribe  int16 = 77
)

func handleShareGroupHeartbeat(s *Server, rc *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	deny := func(err error, msg string) (*response, error) {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = errorCode(err)
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return kresp(resp), nil
	}
	if !s.az.allowed(rc, acl.OpRead, acl.ResourceGroup, req.GroupID) {
		return deny(errGroupAuthorization, "")
	}
	for _, t := range req.SubscribedTopicNames {
		if !s.az.allowed(rc, acl.OpDescribe, acl.ResourceTopic, t) {
			return deny(errcode.ErrTopicAuthorization, "The group has subscribed topic(s) that the client is not authorized to describe.")
		}
	}
	return handleGroupWith(s, rc, req, nil)
}

// shareGroupConfig is group.Options.ShareGroupConfigs: the group's share.*
// configs over the broker's group.share.* values.
func (s *Server) shareGroupConfig(name string) group.ShareGroupConfig {
	st := s.currentConfig().ShareGroupSettings(s.groupConfig(name))
	return group.ShareGroupConfig{
		SessionTimeout:          st.SessionTimeout,
		HeartbeatInterval:       st.HeartbeatInterval,
		RecordLockDuration:      st.RecordLockDuration,
		DeliveryCountLimit:      st.DeliveryCountLimit,
		PartitionMaxRecordLocks: st.PartitionMaxRecordLocks,
		AutoOffsetReset:         st.AutoOffsetReset,
		IsolationLevel:          st.IsolationLevel,
		RenewAcknowledgeEnable:  st.RenewAcknowledgeEnable,

		RedeliveryBackoff:           st.RedeliveryBackoff,
		RedeliveryBackoffMax:        st.RedeliveryBackoffMax,
		RedeliveryBackoffMultiplier: st.RedeliveryBackoffMultiplier,
		DLQTopic:                    st.DLQTopic,
		DLQCopyRecord:               st.DLQCopyRecord,
	}
}

// coordinatorShareMembership is the group coordinator as the share data
// path's ShareMembership: who is a member with which partitions, and the
// group's effective share.* configs.
type coordinatorShareMembership struct{ s *Server }

func (m coordinatorShareMembership) Member(groupID, memberID string) (map[[16]byte][]int32, bool) {
	if m.s.groups == nil {
		return nil, false
	}
	// In a cluster the leader of a share partition is often not the
	// group's coordinator and cannot know its members: as Kafka's
	// SharePartitionManager, it trusts the share session
	// (share_state.go).
	if owned, _ := m.s.offsets.Owns(groupID); !owned && !m.s.singleNode() {
		return nil, true
	}
	return m.s.groups.ShareMember(groupID, memberID)
}

func (m coordinatorShareMembership) GroupConfig(groupID string) ShareGroupConfig {
	g := m.s.shareGroupConfig(groupID)
	return ShareGroupConfig{
		RecordLockDuration:     g.RecordLockDuration,
		DeliveryCountLimit:     g.DeliveryCountLimit,
		PartitionMaxRecordLock: g.PartitionMaxRecordLocks,
		AutoOffsetReset:        g.AutoOffsetReset,
		ReadCommitted:          g.IsolationLevel == "read_committed",
		RenewEnabled:           g.RenewAcknowledgeEnable,

		RedeliveryBackoff:           g.RedeliveryBackoff,
		RedeliveryBackoffMax:        g.RedeliveryBackoffMax,
		RedeliveryBackoffMultiplier: g.RedeliveryBackoffMultiplier,
		DLQTopic:                    g.DLQTopic,
		DLQCopyRecord:               g.DLQCopyRecord,
	}
}
