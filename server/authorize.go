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
//	ListOffsets              Describe on each topic
//	OffsetForLeaderEpoch     ClusterAction on the cluster or Describe on each
//	                         topic, whatever the replica id (KIP-320)
//	Metadata                 topics the principal may not Describe are left out
//	                         (asked for by name: TOPIC_AUTHORIZATION_FAILED);
//	                         auto-creation needs Create on the cluster or topic;
//	                         authorized operations asked for: a bit per
//	                         operation allowed (cluster: with Describe on it)
//	CreateTopics             Create on the cluster or the topic (configs
//	                         shown with DescribeConfigs on the topic)
//	DeleteTopics             Delete on the topic; DeleteRecords Delete on the topic
//	CreatePartitions         Alter on the topic
//	DescribeConfigs          DescribeConfigs on the topic or cluster (broker)
//	AlterConfigs, IncrementalAlterConfigs
//	                         AlterConfigs on the topic or cluster
//	ElectLeaders             Alter on the cluster
//	DescribeCluster          nothing (Describe on the cluster only for its
//	                         authorized operations)
//	InitProducerId           IdempotentWrite on the cluster, or Write on any
//	                         topic, existing or not (authorizeByResourceType,
//	                         KIP-679)
//	InitProducerId (transactional), AddPartitionsToTxn, EndTxn
//	                         Write on the TransactionalId (AddPartitionsToTxn:
//	                         and Write on each topic, never an internal one)
//	AddOffsetsToTxn          Write on the TransactionalId, Read on the group
//	FindCoordinator          Describe on the group, or on the TransactionalId
//	                         (key type 1); v4: each key answered on its own
//	DescribeTransactions     Describe on each TransactionalId (partitions of
//	                         topics the principal may not Describe left out)
//	ListTransactions         only the ids the principal may Describe
//	JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit
//	                         Read on the group (OffsetCommit: and Read on each topic)
//	OffsetFetch              Describe on the group (v8+: each group on its
//	                         own) and on each topic (TOPIC_AUTHORIZATION_FAILED
//	                         per partition; left out of an all-topics fetch)
//	DescribeGroups           Describe on each group; DeleteGroups Delete on
//	                         each (each group answered on its own)
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
// Without an authorizer everything is allowed, as in Kafka. Where Sluice
// refuses more than Kafka would, README's Security section ("Where Sluice
// is stricter than Kafka") lists it with the reason.

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

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

// authorizedOperationsUnset is an authorized-operations field not asked
// for (INT32_MIN, the schemas' default).
const authorizedOperationsUnset = -2147483648

// authorizedOperations is Kafka's AuthHelper.authorizedOperations: a
// bitfield with bit o set for each operation o that rc's principal may
// perform on the resource, among those its type supports
// (acl.SupportedOperations); every one of them without an authorizer.
func (a *authorizer) authorizedOperations(rc *reqCtx, rt acl.ResourceType, name string) int32 {
	var bits int32
	for _, op := range acl.SupportedOperations(rt) {
		if a.allowed(rc, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// clusterAuthorizedOperations is what Metadata (v8-v10) and
// DescribeCluster answer for include_cluster_authorized_operations, as
// Kafka does: the cluster's authorized operations with Describe on it,
// else 0.
func (a *authorizer) clusterAuthorizedOperations(rc *reqCtx) int32 {
	if !a.allowedCluster(rc, acl.OpDescribe) {
		return 0
	}
	return a.authorizedOperations(rc, acl.ResourceCluster, acl.ClusterName)
}

// groupAuthorizedOps fills the authorized operations of a DescribeGroups
// answer as Kafka's handleDescribeGroupsRequest does: asked for (v3+),
// each group described without error gets the principal's operations on
// it; every other group, and every group when not asked for, INT32_MIN.
func (a *authorizer) groupAuthorizedOps(rc *reqCtx, r *kmsg.DescribeGroupsRequest, resp *kmsg.DescribeGroupsResponse) {
	for i := range resp.Groups {
		g := &resp.Groups[i]
		g.AuthorizedOperations = authorizedOperationsUnset
		if r.Version >= 3 && r.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = a.authorizedOperations(rc, acl.ResourceGroup, g.Group)
		}
	}
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
	case resourceGroup:
		if !a.allowed(rc, op, acl.ResourceGroup, name) {
			return errGroupAuthorization
		}
	}
	return nil
}

// resourceTypeAuthorizer is an Authorizer that can also tell whether a
// principal may do an operation on some resource of a type, existing or
// not (acl.Authorizer; Kafka's Authorizer.authorizeByResourceType).
type resourceTypeAuthorizer interface {
	AuthorizeByResourceType(principal string, host netip.Addr, op acl.Operation, rt acl.ResourceType) bool
}

// mayWriteSomeTopic reports whether rc's principal may Write on at least
// one topic (what lets an idempotent producer start, KIP-679), as Kafka's
// authorizeByResourceType(TOPIC, WRITE) decides: a PREFIXED grant, or one
// for a topic that does not exist yet, counts. An Authorizer without that
// question is asked about each existing topic instead.
func (a *authorizer) mayWriteSomeTopic(rc *reqCtx) bool {
	if a.authz == nil {
		return true
	}
	if rta, ok := a.authz.(resourceTypeAuthorizer); ok {
		principal, host := anonymous, netip.Addr{}
		if rc != nil && rc.conn != nil {
			principal, host = rc.conn.auth.principal, rc.conn.ip
		}
		return rta.AuthorizeByResourceType(principal, host, acl.OpWrite, acl.ResourceTopic)
	}
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
		// Transactional ids are checked in 10_find_coordinator.go.
		if r.Version > 0 && r.CoordinatorType != 0 {
			break
		}
		return a.authorizeFindGroupCoordinator(rc, r)
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
		return a.authorizeOffsetFetch(rc, r)
	case *kmsg.DescribeGroupsRequest:
		// KafkaApis.handleDescribeGroupsRequest: the refused groups
		// first, then the coordinator's answer for the others.
		var refusedGroups []kmsg.DescribeGroupsResponseGroup
		kept := r.Groups[:0:0]
		for _, g := range r.Groups {
			if group(acl.OpDescribe, g) {
				kept = append(kept, g)
				continue
			}
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, denied
			refusedGroups = append(refusedGroups, dg)
		}
		if len(refusedGroups) == 0 {
			return nil, nil
		}
		r.Groups = kept
		return nil, func(out kmsg.Response) {
			resp := out.(*kmsg.DescribeGroupsResponse)
			resp.Groups = append(refusedGroups, resp.Groups...)
		}
	case *kmsg.DeleteGroupsRequest:
		// KafkaApis.handleDeleteGroupsRequest: each group once, the
		// coordinator's results for those the principal may Delete, then
		// GROUP_AUTHORIZATION_FAILED for each of the others.
		var kept, refusedGroups []string
		seen := make(map[string]bool, len(r.Groups))
		for _, g := range r.Groups {
			if seen[g] {
				continue
			}
			seen[g] = true
			if group(acl.OpDelete, g) {
				kept = append(kept, g)
			} else {
				refusedGroups = append(refusedGroups, g)
			}
		}
		addRefused := func(resp *kmsg.DeleteGroupsResponse) {
			for _, g := range refusedGroups {
				resp.Groups = append(resp.Groups, kmsg.DeleteGroupsResponseGroup{Group: g, ErrorCode: denied})
			}
		}
		if len(kept) == 0 {
			resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
			addRefused(resp)
			return resp, nil
		}
		r.Groups = kept
		return nil, func(out kmsg.Response) { addRefused(out.(*kmsg.DeleteGroupsResponse)) }
	case *kmsg.OffsetDeleteRequest:
		// KafkaApis.handleOffsetDeleteRequest: Delete on the group, then
		// Read on each topic; a refused topic answers
		// TOPIC_AUTHORIZATION_FAILED for each of its partitions, unless
		// the coordinator answers with a group-level error.
		if !group(acl.OpDelete, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
			resp.ErrorCode = denied
			return resp, nil
		}
		kept, refusedTopics := splitReadable(a, rc, r.Topics, func(t kmsg.OffsetDeleteRequestTopic) string { return t.Topic })
		if len(refusedTopics) == 0 {
			return nil, nil
		}
		r.Topics = kept
		return nil, func(out kmsg.Response) {
			resp := out.(*kmsg.OffsetDeleteResponse)
			if resp.ErrorCode != 0 {
				return
			}
			for _, t := range refusedTopics {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: topicDenied})
				}
				resp.Topics = append(resp.Topics, rt)
			}
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

// authorizeFindGroupCoordinator is KafkaApis.getCoordinator's check for
// groups: Describe on each group. Before v4 a refused key refuses the
// request (no node, as Kafka's getErrorResponse); from v4 each key is
// answered on its own, the refused ones GROUP_AUTHORIZATION_FAILED with no
// node, in request order.
func (a *authorizer) authorizeFindGroupCoordinator(rc *reqCtx, r *kmsg.FindCoordinatorRequest) (refused kmsg.Response, after func(kmsg.Response)) {
	denied := int16(errorCode(errGroupAuthorization))
	allowed := func(k string) bool { return a.allowed(rc, acl.OpDescribe, acl.ResourceGroup, k) }
	if r.Version < 4 {
		if allowed(r.CoordinatorKey) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode, resp.NodeID, resp.Port = denied, -1, -1
		return resp, nil
	}
	keys := r.CoordinatorKeys
	var kept []string
	ok := make([]bool, len(keys)) // ok[i]: keys[i] may be described
	for i, k := range keys {
		if ok[i] = allowed(k); ok[i] {
			kept = append(kept, k)
		}
	}
	if len(kept) == len(keys) {
		return nil, nil
	}
	refusal := func(k string) kmsg.FindCoordinatorResponseCoordinator {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.ErrorCode, c.NodeID, c.Port = k, denied, -1, -1
		return c
	}
	if len(kept) == 0 {
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for _, k := range keys {
			resp.Coordinators = append(resp.Coordinators, refusal(k))
		}
		return resp, nil
	}
	r.CoordinatorKeys = kept
	return nil, func(out kmsg.Response) {
		resp := out.(*kmsg.FindCoordinatorResponse)
		found := make(map[string]kmsg.FindCoordinatorResponseCoordinator, len(resp.Coordinators))
		for _, c := range resp.Coordinators {
			found[c.Key] = c
		}
		all := make([]kmsg.FindCoordinatorResponseCoordinator, 0, len(keys))
		for i, k := range keys {
			if c, answered := found[k]; answered && ok[i] {
				all = append(all, c)
			} else {
				all = append(all, refusal(k))
			}
		}
		resp.Coordinators = all
	}
}

// authorizeOffsetFetch is KafkaApis.handleOffsetFetchRequest: Describe on
// each group (from v8 a refused group is answered GROUP_AUTHORIZATION_FAILED
// on its own, the others are fetched), and Describe on each topic: a
// requested topic the principal may not Describe answers
// TOPIC_AUTHORIZATION_FAILED (offset -1) for each partition asked for,
// while a fetch of all the group's offsets (null topics) leaves such topics
// out. A group answered with a group-level error gets nothing added.
func (a *authorizer) authorizeOffsetFetch(rc *reqCtx, r *kmsg.OffsetFetchRequest) (refused kmsg.Response, after func(kmsg.Response)) {
	denied := int16(errorCode(errGroupAuthorization))
	group := func(g string) bool { return a.allowed(rc, acl.OpDescribe, acl.ResourceGroup, g) }
	describable := func(t string) bool { return a.allowedTopic(rc, acl.OpDescribe, t) }
	// split returns the topics rc may Describe (never nil: an empty list
	// asks for nothing, where nil asks for everything) and the others.
	split := func(topics []kmsg.OffsetFetchRequestTopic) (kept, refused []kmsg.OffsetFetchRequestTopic) {
		kept = []kmsg.OffsetFetchRequestTopic{}
		for _, t := range topics {
			if describable(t.Topic) {
				kept = append(kept, t)
			} else {
				refused = append(refused, t)
			}
		}
		return kept, refused
	}
	if r.Version < 8 {
		if !group(r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = denied
			return resp, nil
		}
		all := r.Topics == nil
		var refusedTopics []kmsg.OffsetFetchRequestTopic
		if !all {
			r.Topics, refusedTopics = split(r.Topics)
		}
		return nil, func(out kmsg.Response) {
			resp := out.(*kmsg.OffsetFetchResponse)
			if resp.ErrorCode != 0 {
				return
			}
			if all {
				resp.Topics = slices.DeleteFunc(resp.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return !describable(t.Topic) })
				return
			}
			for _, t := range refusedTopics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, errorCode(errTopicAuthorization)
					rp.Metadata = &noMetadata
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
	}
	groups := r.Groups
	refusedTopics := make([][]kmsg.OffsetFetchRequestGroupTopic, len(groups))
	var kept []kmsg.OffsetFetchRequestGroup
	ok := make([]bool, len(groups)) // ok[i]: groups[i] may be described
	for i, g := range groups {
		if ok[i] = group(g.Group); !ok[i] {
			continue
		}
		if g.Topics != nil {
			var keptTopics []kmsg.OffsetFetchRequestGroupTopic
			keptTopics, refusedTopics[i] = splitGroupTopics(g.Topics, describable)
			g.Topics = keptTopics
		}
		kept = append(kept, g)
	}
	if len(kept) == 0 {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		for _, g := range groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, denied
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	r.Groups = kept
	return nil, func(out kmsg.Response) {
		resp := out.(*kmsg.OffsetFetchResponse)
		found := make(map[string]kmsg.OffsetFetchResponseGroup, len(resp.Groups))
		for _, g := range resp.Groups {
			found[g.Group] = g
		}
		all := make([]kmsg.OffsetFetchResponseGroup, 0, len(groups))
		for i, g := range groups {
			rg, answered := found[g.Group]
			if !answered || !ok[i] {
				rg = kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, denied
				all = append(all, rg)
				continue
			}
			if rg.ErrorCode == 0 && g.Topics == nil {
				rg.Topics = slices.DeleteFunc(rg.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return !describable(t.Topic) })
			}
			if rg.ErrorCode == 0 {
				for _, t := range refusedTopics[i] {
					rt := kmsg.NewOffsetFetchResponseGroupTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						rp.Partition, rp.Offset, rp.ErrorCode = p, -1, errorCode(errTopicAuthorization)
						rp.Metadata = &noMetadata
						rt.Partitions = append(rt.Partitions, rp)
					}
					rg.Topics = append(rg.Topics, rt)
				}
			}
			all = append(all, rg)
		}
		resp.Groups = all
	}
}

// noMetadata is the metadata of an offset refused to the principal: ""
// (Kafka's OffsetFetchResponse.NO_METADATA), as Kafka's default writes it.
var noMetadata = ""

// splitGroupTopics splits an OffsetFetch v8+ group's topics into those
// that keep (never nil) and the others.
func splitGroupTopics(topics []kmsg.OffsetFetchRequestGroupTopic, keep func(string) bool) (kept, refused []kmsg.OffsetFetchRequestGroupTopic) {
	kept = []kmsg.OffsetFetchRequestGroupTopic{}
	for _, t := range topics {
		if keep(t.Topic) {
			kept = append(kept, t)
		} else {
			refused = append(refused, t)
		}
	}
	return kept, refused
}
