package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

// newACLServer returns a server deciding with a real acl.Authorizer, the
// topics created (one partition each) before any ACL is loaded; requests
// made through mustCall come from User:ANONYMOUS.
func newACLServer(t *testing.T, topics ...string) (*Server, *acl.Authorizer) {
	t.Helper()
	a := acl.New(acl.Config{})
	a.Load(grant(acl.PatternLiteral, acl.ResourceCluster, acl.ClusterName, acl.PermissionAllow, acl.OpCreate))
	s := newTestServer(t, nil, Options{Authorizer: a})
	mustCreateTopics(t, s, topics...)
	a.Load(nil)
	return s, a
}

// grant is one binding per operation for User:ANONYMOUS from any host.
func grant(pt acl.PatternType, rt acl.ResourceType, name string, perm acl.Permission, ops ...acl.Operation) []acl.Binding {
	var out []acl.Binding
	for _, op := range ops {
		out = append(out, acl.Binding{
			Pattern: acl.ResourcePattern{Type: rt, Name: name, PatternType: pt},
			Entry:   acl.Entry{Principal: anonymous, Host: acl.WildcardHost, Operation: op, Permission: perm},
		})
	}
	return out
}

// TestAuthorizedOperations: asked for, Metadata, DescribeCluster and
// DescribeGroups report a bit per operation the principal may perform
// (Kafka's AuthHelper.authorizedOperations): with only Describe and Read
// granted, exactly those bits (the cluster supports no Read: Describe
// alone); a topic refused keeps INT32_MIN, as does everything not asked
// for.
func TestAuthorizedOperations(t *testing.T) {
	s, a := newACLServer(t, "t", "secret")
	var acls []acl.Binding
	acls = append(acls, grant(acl.PatternLiteral, acl.ResourceCluster, acl.ClusterName, acl.PermissionAllow, acl.OpDescribe, acl.OpRead)...)
	acls = append(acls, grant(acl.PatternLiteral, acl.ResourceTopic, "t", acl.PermissionAllow, acl.OpDescribe, acl.OpRead)...)
	acls = append(acls, grant(acl.PatternLiteral, acl.ResourceGroup, "g", acl.PermissionAllow, acl.OpDescribe, acl.OpRead)...)
	a.Load(acls)
	const (
		describeRead = 1<<3 | 1<<8
		describe     = 1 << 8
		unset        = -2147483648
	)
	commitOffset(t, s, "g", "t", 0, 1)

	t.Run("metadata", func(t *testing.T) {
		for _, ask := range []bool{true, false} {
			md := kmsg.NewPtrMetadataRequest()
			md.IncludeClusterAuthorizedOperations, md.IncludeTopicAuthorizedOperations = ask, ask
			md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}, {Topic: kmsg.StringPtr("secret")}}
			resp := mustCall(t, s, 10, md).(*kmsg.MetadataResponse)
			wantCluster, wantTopic := int32(unset), int32(unset)
			if ask {
				wantCluster, wantTopic = describe, describeRead
			}
			if resp.AuthorizedOperations != wantCluster {
				t.Errorf("asked %v: cluster operations %#x, want %#x", ask, resp.AuthorizedOperations, wantCluster)
			}
			for _, mt := range resp.Topics {
				want := wantTopic
				if *mt.Topic == "secret" {
					want = unset
				}
				if mt.AuthorizedOperations != want {
					t.Errorf("asked %v: %s operations %#x, want %#x", ask, *mt.Topic, mt.AuthorizedOperations, want)
				}
			}
		}
	})
	t.Run("metadata/all topics", func(t *testing.T) {
		md := kmsg.NewPtrMetadataRequest()
		md.IncludeTopicAuthorizedOperations = true
		resp := mustCall(t, s, 12, md).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "t" || resp.Topics[0].AuthorizedOperations != describeRead {
			t.Errorf("topics %v; want t only, operations %#x", resp.Topics, describeRead)
		}
	})
	t.Run("describe cluster", func(t *testing.T) {
		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations = true
		if got := mustCall(t, s, 1, dc).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations; got != describe {
			t.Errorf("cluster operations %#x, want %#x", got, describe)
		}
	})
	t.Run("describe groups", func(t *testing.T) {
		for _, ask := range []bool{true, false} {
			dg := kmsg.NewPtrDescribeGroupsRequest()
			dg.Groups, dg.IncludeAuthorizedOperations = []string{"g"}, ask
			g := mustCall(t, s, 5, dg).(*kmsg.DescribeGroupsResponse).Groups[0]
			want := int32(unset)
			if ask {
				want = describeRead
			}
			if g.ErrorCode != 0 || g.AuthorizedOperations != want {
				t.Errorf("asked %v: %s, operations %#x; want none, %#x", ask, code(g.ErrorCode), g.AuthorizedOperations, want)
			}
		}
	})
}

// TestAuthorizedOperationsWithoutAuthorizer: without an authorizer every
// supported operation is reported, as Kafka does.
func TestAuthorizedOperationsWithoutAuthorizer(t *testing.T) {
	s := newTestServer(t, nil, Options{})
	mustCreateTopics(t, s, "t")
	bits := func(rt acl.ResourceType) int32 {
		var b int32
		for _, op := range acl.SupportedOperations(rt) {
			b |= 1 << op
		}
		return b
	}
	md := kmsg.NewPtrMetadataRequest()
	md.IncludeClusterAuthorizedOperations, md.IncludeTopicAuthorizedOperations = true, true
	resp := mustCall(t, s, 10, md).(*kmsg.MetadataResponse)
	if resp.AuthorizedOperations != bits(acl.ResourceCluster) || resp.Topics[0].AuthorizedOperations != bits(acl.ResourceTopic) {
		t.Errorf("cluster %#x, topic %#x; want %#x, %#x", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations,
			bits(acl.ResourceCluster), bits(acl.ResourceTopic))
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g"}, true
	// Kafka 3.9's group operations: Read, Delete, Describe.
	if got := mustCall(t, s, 5, dg).(*kmsg.DescribeGroupsResponse).Groups[0].AuthorizedOperations; got != 1<<3|1<<6|1<<8 || got != bits(acl.ResourceGroup) {
		t.Errorf("group operations %#x, want %#x", got, 1<<3|1<<6|1<<8)
	}
}

// TestInitProducerIDByResourceType: an idempotent producer starts with
// Write on any topic, as Kafka's authorizeByResourceType(TOPIC, WRITE)
// decides: a PREFIXED grant, or a grant for a topic not created yet,
// counts; a grant dominated by a PREFIXED Deny does not. A transactional
// id, even empty, needs Write on it first.
func TestInitProducerIDByResourceType(t *testing.T) {
	s, a := newACLServer(t, "existing")
	for _, tc := range []struct {
		name string
		acls []acl.Binding
		txn  *string
		want int16
	}{
		{"no grant", nil, nil, kerr.ClusterAuthorizationFailed.Code},
		{"prefixed write", grant(acl.PatternPrefixed, acl.ResourceTopic, "orders-", acl.PermissionAllow, acl.OpWrite), nil, 0},
		{"write on a topic not created yet", grant(acl.PatternLiteral, acl.ResourceTopic, "not-yet", acl.PermissionAllow, acl.OpWrite), nil, 0},
		{"idempotent write", grant(acl.PatternLiteral, acl.ResourceCluster, acl.ClusterName, acl.PermissionAllow, acl.OpIdempotentWrite), nil, 0},
		{"read only", grant(acl.PatternLiteral, acl.ResourceTopic, "existing", acl.PermissionAllow, acl.OpRead), nil, kerr.ClusterAuthorizationFailed.Code},
		{"dominated by prefixed deny", append(
			grant(acl.PatternPrefixed, acl.ResourceTopic, "orders-eu", acl.PermissionAllow, acl.OpWrite),
			grant(acl.PatternPrefixed, acl.ResourceTopic, "orders", acl.PermissionDeny, acl.OpWrite)...), nil, kerr.ClusterAuthorizationFailed.Code},
		{"empty transactional id", grant(acl.PatternPrefixed, acl.ResourceTopic, "orders-", acl.PermissionAllow, acl.OpWrite),
			kmsg.StringPtr(""), kerr.TransactionalIDAuthorizationFailed.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.Load(tc.acls)
			ip := kmsg.NewPtrInitProducerIDRequest()
			ip.TransactionalID = tc.txn
			resp := mustCall(t, s, 4, ip).(*kmsg.InitProducerIDResponse)
			if resp.ErrorCode != tc.want || (tc.want == 0) != (resp.ProducerID >= 0) {
				t.Errorf("got %s, producer id %d; want %s", code(resp.ErrorCode), resp.ProducerID, code(tc.want))
			}
		})
	}
}

// TestCreateTopicsConfigErrorCode: CreateTopics v5+ answers
// topic_config_error_code TOPIC_AUTHORIZATION_FAILED for a topic the
// principal may not DescribeConfigs and hides a created topic's configs,
// partitions, replication factor and id, as Kafka's
// handleCreateTopicsRequest (ZooKeeper mode); the code is cleared when the
// creation itself fails, kept for a topic refused Create.
func TestCreateTopicsConfigErrorCode(t *testing.T) {
	s, az := newDenyServer(t, nil, "exists")
	az.set(
		denyKey{acl.OpDescribeConfigs, acl.ResourceTopic, "hidden"},
		denyKey{acl.OpDescribeConfigs, acl.ResourceTopic, "exists"},
		denyKey{acl.OpDescribeConfigs, acl.ResourceTopic, "refused"},
		denyKey{acl.OpCreate, acl.ResourceCluster, acl.ClusterName},
		denyKey{acl.OpCreate, acl.ResourceTopic, "refused"},
	)
	ct := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"hidden", "shown", "exists", "refused"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		ct.Topics = append(ct.Topics, rt)
	}
	got := map[string]kmsg.CreateTopicsResponseTopic{}
	for _, st := range mustCall(t, s, 7, ct).(*kmsg.CreateTopicsResponse).Topics {
		got[st.Topic] = st
	}
	taf := kerr.TopicAuthorizationFailed.Code
	for _, tc := range []struct {
		topic      string
		err, cfg   int16
		wantConfig bool
	}{
		{"hidden", 0, taf, false},
		{"shown", 0, 0, true},
		{"exists", kerr.TopicAlreadyExists.Code, 0, false},
		{"refused", taf, taf, false},
	} {
		st := got[tc.topic]
		if st.ErrorCode != tc.err || st.ConfigErrorCode != tc.cfg {
			t.Errorf("%s: error %s, config error %s; want %s, %s", tc.topic, code(st.ErrorCode), code(st.ConfigErrorCode), code(tc.err), code(tc.cfg))
		}
		shown := len(st.Configs) > 0 && st.NumPartitions == 1 && st.ReplicationFactor == 1 && st.TopicID != ([16]byte{})
		hidden := len(st.Configs) == 0 && st.NumPartitions == -1 && st.ReplicationFactor == -1 && st.TopicID == ([16]byte{})
		if tc.wantConfig && !shown || !tc.wantConfig && !hidden {
			t.Errorf("%s: %d configs, %d partitions, rf %d, id %x; want them shown: %v", tc.topic, len(st.Configs), st.NumPartitions, st.ReplicationFactor, st.TopicID, tc.wantConfig)
		}
	}
	if _, ok := s.md.topicID("hidden"); !ok {
		t.Error("hidden was not created")
	}
}

// TestOffsetForLeaderEpochClusterActionOrDescribe: OffsetForLeaderEpoch is
// allowed with ClusterAction on the cluster or Describe on the topic,
// whatever the replica id, as Kafka's handleOffsetForLeaderEpochRequest
// (KIP-320); with neither, TOPIC_AUTHORIZATION_FAILED.
func TestOffsetForLeaderEpochClusterActionOrDescribe(t *testing.T) {
	s, az := newDenyServer(t, nil, "t")
	noClusterAction := denyKey{acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName}
	noDescribe := denyKey{acl.OpDescribe, acl.ResourceTopic, "t"}
	for _, tc := range []struct {
		name    string
		replica int32
		deny    []denyKey
		want    int16
	}{
		{"follower/describe only", 1, []denyKey{noClusterAction}, 0},
		{"consumer/cluster action only", -1, []denyKey{noDescribe}, 0},
		{"consumer/neither", -1, []denyKey{noClusterAction, noDescribe}, kerr.TopicAuthorizationFailed.Code},
		{"follower/neither", 1, []denyKey{noClusterAction, noDescribe}, kerr.TopicAuthorizationFailed.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			az.set(tc.deny...)
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = tc.replica
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			p := mustCall(t, s, 4, req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
			if p.ErrorCode != tc.want {
				t.Errorf("got %s, want %s", code(p.ErrorCode), code(tc.want))
			}
		})
	}
}

// TestCreatePartitionsDuplicateBeforeAlter: CreatePartitions answers a
// topic named twice INVALID_REQUEST whether or not the principal may Alter
// it, and one it may not Alter TOPIC_AUTHORIZATION_FAILED, as Kafka's
// handleCreatePartitionsRequest.
func TestCreatePartitionsDuplicateBeforeAlter(t *testing.T) {
	s, az := newDenyServer(t, nil, "twice", "once")
	az.set(
		denyKey{acl.OpAlter, acl.ResourceTopic, "twice"},
		denyKey{acl.OpAlter, acl.ResourceTopic, "once"},
	)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	for _, name := range []string{"twice", "once", "twice"} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, 2
		cp.Topics = append(cp.Topics, rt)
	}
	for _, st := range mustCall(t, s, 3, cp).(*kmsg.CreatePartitionsResponse).Topics {
		want := kerr.TopicAuthorizationFailed.Code
		if st.Topic == "twice" {
			want = kerr.InvalidRequest.Code
		}
		if st.ErrorCode != want {
			t.Errorf("%s: %s, want %s", st.Topic, code(st.ErrorCode), code(want))
		}
	}
}
