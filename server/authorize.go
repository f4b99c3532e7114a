package server

// Authorization: with authorizer.class.name set, every request is checked
// the way Kafka's KafkaApis checks it, once per resource, against the
// connection's principal and address (package acl decides, without
// locking or allocating). What each API needs:
//
//	Produce                  Write on each topic (TOPIC_AUTHORIZATION_FAILED per partition)
//	Fetch (consumer)         Read on each topic
//	Fetch (follower), LeaderAndIsr, StopReplica, UpdateMetadata,
//	ControlledShutdown, WriteTxnMarkers
//	                         ClusterAction on the cluster
//	DescribeProducers        Read on each topic
//	ListOffsets, OffsetForLeaderEpoch (consumer)
//	                         Describe on each topic
//	Metadata                 topics the principal may not Describe are left out
//	                         (asked for by name: TOPIC_AUTHORIZATION_FAILED);
//	                         auto-creation needs Create on the cluster or topic
//	CreateTopics             Create on the cluster or the topic
//	DeleteTopics             Delete on the topic; DeleteRecords Delete on the topic
//	CreatePartitions         Alter on the topic
//	DescribeConfigs          DescribeConfigs on the topic or cluster (broker)
//	AlterConfigs, IncrementalAlterConfigs
//	                         AlterConfigs on the topic or cluster
//	ElectLeaders             Alter on the cluster; DescribeCluster Describe on it
//	InitProducerId           IdempotentWrite on the cluster, or Write on any
//	                         topic (Kafka 3's rule, KIP-679)
//	InitProducerId (transactional), AddPartitionsToTxn, EndTxn
//	                         Write on the TransactionalId (AddPartitionsToTxn:
//	                         and Write on each topic, never an internal one)
//	AddOffsetsToTxn          Write on the TransactionalId, Read on the group
//	FindCoordinator          Describe on the group, or on the TransactionalId
//	                         (key type 1)
//	DescribeTransactions     Describe on each TransactionalId (partitions of
//	                         topics the principal may not Describe left out)
//	ListTransactions         only the ids the principal may Describe
//	JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit
//	                         Read on the group (OffsetCommit: and Read on each topic)
//	OffsetFetch              Describe on the group and on each topic
//	DescribeGroups           Describe on the group; DeleteGroups Delete on it
//	OffsetDelete             Delete on the group and Read on each topic
//	TxnOffsetCommit          Write on the TransactionalId
//	                         (TRANSACTIONAL_ID_AUTHORIZATION_FAILED everywhere),
//	                         Read on the group, Read on each topic
//	ListGroups               Describe on the cluster, else only the groups
//	                         the principal may Describe
//	CreateAcls, DeleteAcls   Alter on the cluster; DescribeAcls Describe on it
//	DescribeUserScramCredentials / AlterUserScramCredentials
//	                         Describe / Alter on the cluster
//
// Without an authorizer everything is allowed, as in Kafka.

import (
	"cmp"
	"fmt"
	"net/netip"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authorizer checks requests: a pure function of (principal, host,
// operation, resource) over the configured Authorizer, checked once per
// resource where a request is dispatched, without allocating. The zero
// value allows everything.
type authorizer struct {
	// authz is Options.Authorizer (nil: everything allowed).
	authz Authorizer
	// acls is Options.ACLs, where the ACL APIs keep ACLs (nil:
	// SECURITY_DISABLED).
	acls acl.Store
	// topicNames lists the cluster's topics (mayWriteSomeTopic).
	topicNames func() []string
	// controlListener is control.plane.listener.name ("": any listener).
	controlListener string
}

// checkControlListener checks the sender of an inter-broker request:
// ClusterAction on the cluster, and a connection that came in on
// control.plane.listener.name, when one is set (KIP-291). Handlers called
// without a connection (tests) pass the listener check.
func (a *authorizer) checkControlListener(rc *reqCtx) error {
	if !a.allowedCluster(rc, acl.OpClusterAction) {
		return errClusterAuthorization
	}
	cp := a.controlListener
	if cp == "" || rc.conn == nil || rc.conn.listener == cp {
		return nil
	}
	return fmt.Errorf("%w (%s), not on %s", errNotControlPlaneListener, cp, cmp.Or(rc.conn.listener, "the client listener"))
}

// Authorizer decides whether a principal may do something (package acl's
// Authorizer).
type Authorizer interface {
	Authorize(principal string, host netip.Addr, op acl.Operation, rt acl.ResourceType, name string) bool
}

// allowed reports whether rc's principal may do op on the resource.
func (a *authorizer) allowed(rc *reqCtx, op acl.Operation, rt acl.ResourceType, name string) bool {
	if a.authz == nil {
		return true
	}
	principal, host := anonymous, netip.Addr{}
	if rc != nil && rc.conn != nil {
		principal, host = rc.conn.auth.principal, rc.conn.ip
	}
	return a.authz.Authorize(principal, host, op, rt, name)
}

// configAuthz checks op on a config resource: the topic, or the cluster
// for a broker resource (as Kafka's broker configs are checked).
func (a *authorizer) configAuthz(rc *reqCtx, op acl.Operation, typ kmsg.ConfigResourceType, name string) error {
	switch typ {
	case resourceTopic:
		if !a.allowedTopic(rc, op, name) {
			return errTopicAuthorization
		}
	case resourceBroker:
		if !a.allowedCluster(rc, op) {
			return errClusterAuthorization
		}
	}
	return nil
}

// mayWriteSomeTopic reports whether rc's principal may Write on at least
// one topic (what lets an idempotent producer start, KIP-679).
func (a *authorizer) mayWriteSomeTopic(rc *reqCtx) bool {
	for _, name := range a.topicNames() {
		if a.allowedTopic(rc, acl.OpWrite, name) {
			return true
		}
	}
	return false
}

// addrOf is broker b's address on the listener rc came in on (this
// broker's from the listener itself, another's from its registration), or
// b's default address when that listener is unknown for it.
func (rc *reqCtx) addrOf(selfID int32, b metadata.Broker) (string, int32) {
	if b.ID == selfID {
		return rc.selfAddr(b.Host, b.Port)
	}
	if rc != nil && rc.conn != nil {
		if h, p, ok := b.EndpointFor(rc.conn.listener); ok {
			return h, p
		}
	}
	return b.Host, b.Port
}

// selfAddr is this broker's address on the listener rc came in on, or
// host and port (the client listener's) when that listener has none.
func (rc *reqCtx) selfAddr(host string, port int32) (string, int32) {
	if rc == nil || rc.conn == nil || rc.conn.auth.sec.Host == "" {
		return host, port
	}
	return rc.conn.auth.sec.Host, rc.conn.auth.sec.Port
}

// principal is the connection's principal (User:ANONYMOUS without one).
func (rc *reqCtx) principal() string {
	if rc == nil || rc.conn == nil {
		return anonymous
	}
	return rc.conn.auth.principal
}

// allowedTopic is allowed for a topic.
func (a *authorizer) allowedTopic(rc *reqCtx, op acl.Operation, topic string) bool {
	return a.allowed(rc, op, acl.ResourceTopic, topic)
}

// allowedTxnID is allowed for a transactional id.
func (a *authorizer) allowedTxnID(rc *reqCtx, op acl.Operation, id string) bool {
	return a.allowed(rc, op, acl.ResourceTransactionalID, id)
}

// allowedCluster is allowed for the cluster.
func (a *authorizer) allowedCluster(rc *reqCtx, op acl.Operation) bool {
	return a.allowed(rc, op, acl.ResourceCluster, acl.ClusterName)
}

// authorizeGroupRequest applies the group APIs' checks to req. It returns
// the whole answer when the request is refused (GROUP_AUTHORIZATION_FAILED
// where Kafka puts it); else nil, with req stripped of the topics the
// principal may not use, and after, which adds their
// TOPIC_AUTHORIZATION_FAILED entries (or filters what the principal may not
// see) to the coordinator's answer.
func (a *authorizer) authorizeGroupRequest(rc *reqCtx, req kmsg.Request) (refused kmsg.Response, after func(kmsg.Response)) {
	if a.authz == nil {
		return nil, nil
	}
	group := func(op acl.Operation, g string) bool { return a.allowed(rc, op, acl.ResourceGroup, g) }
	denied := int16(errorCode(errGroupAuthorization))
	topicDenied := errorCode(errTopicAuthorization)
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		keys := r.CoordinatorKeys
		if r.Version < 4 {
			keys = []string{r.CoordinatorKey}
		}
		for _, k := range keys {
			if !group(acl.OpDescribe, k) && (r.CoordinatorType == 0 || r.Version == 0) {
				resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
				resp.ErrorCode, resp.NodeID, resp.Port = denied, -1, -1
				for _, k := range keys {
					c := kmsg.NewFindCoordinatorResponseCoordinator()
					c.Key, c.ErrorCode, c.NodeID, c.Port = k, denied, -1, -1
					resp.Coordinators = append(resp.Coordinators, c)
				}
				return resp, nil
			}
		}
	case *kmsg.JoinGroupRequest:
		if !group(acl.OpRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.Generation = denied, -1
			return resp, nil
		}
	case *kmsg.SyncGroupRequest:
		if !group(acl.OpRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode = denied
			return resp, nil
		}
	case *kmsg.HeartbeatRequest:
		if !group(acl.OpRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = denied
			return resp, nil
		}
	case *kmsg.LeaveGroupRequest:
		if !group(acl.OpRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = denied
			return resp, nil
		}
	case *kmsg.OffsetCommitRequest:
		if !group(acl.OpRead, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
			for _, t := range r.Topics {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: denied})
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		kept, refusedTopics := splitReadable(a, rc, r.Topics, func(t kmsg.OffsetCommitRequestTopic) string { return t.Topic })
		if len(refusedTopics) == 0 {
			return nil, nil
		}
		r.Topics = kept
		return nil, func(out kmsg.Response) {
			resp := out.(*kmsg.OffsetCommitResponse)
			for _, t := range refusedTopics {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: topicDenied})
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
	case *kmsg.OffsetFetchRequest:
		if r.Version < 8 {
			if !group(acl.OpDescribe, r.Group) {
				resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
				resp.ErrorCode = denied
				return resp, nil
			}
		} else {
			for _, g := range r.Groups {
				if !group(acl.OpDescribe, g.Group) {
					resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
					for _, g := range r.Groups {
						rg := kmsg.NewOffsetFetchResponseGroup()
						rg.Group, rg.ErrorCode = g.Group, denied
						resp.Groups = append(resp.Groups, rg)
					}
					return resp, nil
				}
			}
		}
		// Offsets of topics the principal may not Describe are left out.
		return nil, func(out kmsg.Response) {
			resp := out.(*kmsg.OffsetFetchResponse)
			keep := resp.Topics[:0]
			for _, t := range resp.Topics {
				if a.allowedTopic(rc, acl.OpDescribe, t.Topic) {
					keep = append(keep, t)
				}
			}
			resp.Topics = keep
			for i := range resp.Groups {
				kg := resp.Groups[i].Topics[:0]
				for _, t := range resp.Groups[i].Topics {
					if a.allowedTopic(rc, acl.OpDescribe, t.Topic) {
						kg = append(kg, t)
					}
				}
				resp.Groups[i].Topics = kg
			}
		}
	case *kmsg.DescribeGroupsRequest:
		for _, g := range r.Groups {
			if !group(acl.OpDescribe, g) {
				return nil, func(out kmsg.Response) {
					resp := out.(*kmsg.DescribeGroupsResponse)
					for i := range resp.Groups {
						if !group(acl.OpDescribe, resp.Groups[i].Group) {
							g := kmsg.NewDescribeGroupsResponseGroup()
							g.Group, g.ErrorCode = resp.Groups[i].Group, denied
							resp.Groups[i] = g
						}
					}
				}
			}
		}
	case *kmsg.DeleteGroupsRequest:
		for _, g := range r.Groups {
			if !group(acl.OpDelete, g) {
				resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
				for _, g := range r.Groups {
					resp.Groups = append(resp.Groups, kmsg.DeleteGroupsResponseGroup{Group: g, ErrorCode: denied})
				}
				return resp, nil
			}
		}
	case *kmsg.OffsetDeleteRequest:
		if !group(acl.OpDelete, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
			resp.ErrorCode = denied
			return resp, nil
		}
	case *kmsg.TxnOffsetCommitRequest:
		return a.authorizeTxnOffsetCommit(rc, r)
	case *kmsg.ListGroupsRequest:
		if a.allowedCluster(rc, acl.OpDescribe) {
			return nil, nil
		}
		return nil, func(out kmsg.Response) {
			resp := out.(*kmsg.ListGroupsResponse)
			keep := resp.Groups[:0]
			for _, g := range resp.Groups {
				if group(acl.OpDescribe, g.Group) {
					keep = append(keep, g)
				}
			}
			resp.Groups = keep
		}
	}
	return nil, nil
}

// authorizeTxnOffsetCommit is KafkaApis.handleTxnOffsetCommitRequest's
// order: Write on the TransactionalId, then Read on the group (each refusal
// answers every partition), then Read on each topic (refused topics answer
// TOPIC_AUTHORIZATION_FAILED, the others are committed).
func (a *authorizer) authorizeTxnOffsetCommit(rc *reqCtx, r *kmsg.TxnOffsetCommitRequest) (refused kmsg.Response, after func(kmsg.Response)) {
	refuseAll := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if !a.allowed(rc, acl.OpWrite, acl.ResourceTransactionalID, r.TransactionalID) {
		return refuseAll(kerr.TransactionalIDAuthorizationFailed.Code), nil
	}
	if !a.allowed(rc, acl.OpRead, acl.ResourceGroup, r.Group) {
		return refuseAll(int16(errorCode(errGroupAuthorization))), nil
	}
	kept, refusedTopics := splitReadable(a, rc, r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic })
	if len(refusedTopics) == 0 {
		return nil, nil
	}
	r.Topics = kept
	topicDenied := errorCode(errTopicAuthorization)
	return nil, func(out kmsg.Response) {
		resp := out.(*kmsg.TxnOffsetCommitResponse)
		for _, t := range refusedTopics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: topicDenied})
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
}

// splitReadable splits a commit request's topics into those rc may Read
// (kept, a new slice) and those it may not (refused), in request order.
func splitReadable[T any](a *authorizer, rc *reqCtx, topics []T, name func(T) string) (kept, refused []T) {
	for _, t := range topics {
		if a.allowedTopic(rc, acl.OpRead, name(t)) {
			kept = append(kept, t)
		} else {
			refused = append(refused, t)
		}
	}
	return kept, refused
}
