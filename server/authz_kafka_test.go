package server

import (
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/config"
)

// denySome allows everything but the (operation, resource type, name)
// triples in deny; tests fill deny after creating their topics.
type denySome struct {
	mu   sync.Mutex
	deny map[denyKey]bool
}

type denyKey struct {
	op   acl.Operation
	rt   acl.ResourceType
	name string
}

func (d *denySome) Authorize(_ string, _ netip.Addr, op acl.Operation, rt acl.ResourceType, name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.deny[denyKey{op, rt, name}]
}

func (d *denySome) set(keys ...denyKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deny = map[denyKey]bool{}
	for _, k := range keys {
		d.deny[k] = true
	}
}

// newDenyServer returns a server with the denySome authorizer and the
// topics created (one partition each) before anything is denied.
func newDenyServer(t *testing.T, cfg *config.Config, topics ...string) (*Server, *denySome) {
	t.Helper()
	az := &denySome{}
	s := newTestServer(t, cfg, Options{Authorizer: az})
	mustCreateTopics(t, s, topics...)
	return s, az
}

// mustCreateTopics creates topics of one partition each through a raw
// CreateTopics v7, failing the test on any error code.
func mustCreateTopics(t *testing.T, s *Server, topics ...string) {
	t.Helper()
	for _, name := range topics {
		ct := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		ct.Topics = append(ct.Topics, rt)
		if c := mustCall(t, s, 7, ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; c != 0 {
			t.Fatalf("create %s: %s", name, code(c))
		}
	}
}

// topicIDOf is name's topic id as Metadata v12 reports it.
func topicIDOf(t *testing.T, s *Server, name string) [16]byte {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(name)}}
	id := mustCall(t, s, 12, md).(*kmsg.MetadataResponse).Topics[0].TopicID
	if id == ([16]byte{}) {
		t.Fatalf("%s has no topic id", name)
	}
	return id
}

// TestMetadataByIDHidesName: Metadata v12 for the id of a topic the
// principal may not Describe answers TOPIC_AUTHORIZATION_FAILED with the id
// and a null name, as Kafka's handleTopicMetadataRequest does (topic ids
// are not secret, names are).
func TestMetadataByIDHidesName(t *testing.T) {
	s, az := newDenyServer(t, nil, "secret")
	id := topicIDOf(t, s, "secret")
	az.set(denyKey{acl.OpDescribe, acl.ResourceTopic, "secret"})
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{TopicID: id}}
	got := mustCall(t, s, 12, md).(*kmsg.MetadataResponse).Topics
	if len(got) != 1 {
		t.Fatalf("%d topics, want 1", len(got))
	}
	mt := got[0]
	if mt.ErrorCode != kerr.TopicAuthorizationFailed.Code || mt.Topic != nil || mt.TopicID != id || len(mt.Partitions) != 0 {
		t.Errorf("got %s, name %v, id %x, %d partitions; want TOPIC_AUTHORIZATION_FAILED, no name, id %x, none",
			code(mt.ErrorCode), mt.Topic, mt.TopicID, len(mt.Partitions), id)
	}
}

// TestDeleteTopicsByIDHidesName: DeleteTopics v6 by the id of a topic the
// principal may not Describe refuses it with a null name, as Kafka's
// handleDeleteTopicsRequest does; one it may Describe but not Delete is
// refused with its name.
func TestDeleteTopicsByIDHidesName(t *testing.T) {
	s, az := newDenyServer(t, nil, "secret", "visible")
	ids := map[string][16]byte{"secret": topicIDOf(t, s, "secret"), "visible": topicIDOf(t, s, "visible")}
	az.set(
		denyKey{acl.OpDescribe, acl.ResourceTopic, "secret"},
		denyKey{acl.OpDelete, acl.ResourceTopic, "secret"},
		denyKey{acl.OpDelete, acl.ResourceTopic, "visible"},
	)
	for _, tc := range []struct {
		topic    string
		wantName bool
	}{
		{"secret", false},
		{"visible", true},
	} {
		t.Run(tc.topic, func(t *testing.T) {
			dt := kmsg.NewPtrDeleteTopicsRequest()
			dt.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: ids[tc.topic]}}
			st := mustCall(t, s, 6, dt).(*kmsg.DeleteTopicsResponse).Topics[0]
			if st.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.Errorf("error %s, want TOPIC_AUTHORIZATION_FAILED", code(st.ErrorCode))
			}
			if st.TopicID != ids[tc.topic] {
				t.Errorf("id %x, want %x", st.TopicID, ids[tc.topic])
			}
			switch {
			case tc.wantName && (st.Topic == nil || *st.Topic != tc.topic):
				t.Errorf("name %v, want %q", st.Topic, tc.topic)
			case !tc.wantName && st.Topic != nil:
				t.Errorf("name %q, want null", *st.Topic)
			}
		})
	}
}

// TestCreateTopicsAuthorizesFirst: CreateTopics refuses a topic the
// principal may not Create with TOPIC_AUTHORIZATION_FAILED whether or not
// it exists or collides with one, as Kafka's handleCreateTopicsRequest
// checks Create before the topic is validated; one it may create still
// learns that it exists.
func TestCreateTopicsAuthorizesFirst(t *testing.T) {
	s, az := newDenyServer(t, nil, "secret", "pay_ments", "mine")
	az.set(
		denyKey{acl.OpCreate, acl.ResourceCluster, "kafka-cluster"},
		denyKey{acl.OpCreate, acl.ResourceTopic, "secret"},
		denyKey{acl.OpCreate, acl.ResourceTopic, "pay.ments"},
		denyKey{acl.OpCreate, acl.ResourceTopic, "new"},
	)
	for _, tc := range []struct {
		topic string
		want  int16
	}{
		{"secret", kerr.TopicAuthorizationFailed.Code},
		{"pay.ments", kerr.TopicAuthorizationFailed.Code},
		{"new", kerr.TopicAuthorizationFailed.Code},
		{"mine", kerr.TopicAlreadyExists.Code},
	} {
		t.Run(tc.topic, func(t *testing.T) {
			ct := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tc.topic, 1, 1
			ct.Topics = append(ct.Topics, rt)
			st := mustCall(t, s, 7, ct).(*kmsg.CreateTopicsResponse).Topics[0]
			if st.ErrorCode != tc.want {
				t.Errorf("error %s, want %s", code(st.ErrorCode), code(tc.want))
			}
			if tc.want == kerr.TopicAuthorizationFailed.Code && st.ErrorMessage != nil &&
				(strings.Contains(*st.ErrorMessage, "exist") || strings.Contains(*st.ErrorMessage, "collides")) {
				t.Errorf("message %q tells of an existing topic", *st.ErrorMessage)
			}
		})
	}
}

// TestDescribeClusterNeedsNoDescribe: DescribeCluster answers brokers and
// cluster id without Describe on the cluster, as Kafka's
// handleDescribeCluster (AuthHelper.computeDescribeClusterResponse) does;
// asked for the cluster's authorized operations, it reports none.
func TestDescribeClusterNeedsNoDescribe(t *testing.T) {
	s, az := newDenyServer(t, nil)
	az.set(denyKey{acl.OpDescribe, acl.ResourceCluster, "kafka-cluster"})
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	resp := mustCall(t, s, 1, dc).(*kmsg.DescribeClusterResponse)
	if resp.ErrorCode != 0 || resp.ClusterID != s.clusterID || len(resp.Brokers) != 1 {
		t.Errorf("got %s, cluster id %q, %d brokers; want no error, %q, 1 broker",
			code(resp.ErrorCode), resp.ClusterID, len(resp.Brokers), s.clusterID)
	}
	if resp.ClusterAuthorizedOperations != 0 {
		t.Errorf("cluster authorized operations %d, want 0", resp.ClusterAuthorizedOperations)
	}
}

// TestMetadataAutoCreateNeedsCreate: Metadata that would auto-create a
// topic the principal may not Create answers TOPIC_AUTHORIZATION_FAILED
// (whatever the name) and creates nothing, as Kafka's
// handleTopicMetadataRequest does; without auto-creation the topic is
// UNKNOWN_TOPIC_OR_PARTITION as before.
func TestMetadataAutoCreateNeedsCreate(t *testing.T) {
	cfg := config.Default()
	cfg.AutoCreateTopics = true
	s, az := newDenyServer(t, &cfg)
	az.set(
		denyKey{acl.OpCreate, acl.ResourceCluster, "kafka-cluster"},
		denyKey{acl.OpCreate, acl.ResourceTopic, "nope"},
		denyKey{acl.OpCreate, acl.ResourceTopic, "bad name"},
	)
	for _, tc := range []struct {
		name  string
		topic string
		auto  bool
		want  int16
	}{
		{"auto", "nope", true, kerr.TopicAuthorizationFailed.Code},
		{"auto/invalid name", "bad name", true, kerr.TopicAuthorizationFailed.Code},
		{"no auto", "nope", false, kerr.UnknownTopicOrPartition.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := kmsg.NewPtrMetadataRequest()
			md.AllowAutoTopicCreation = tc.auto
			md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(tc.topic)}}
			mt := mustCall(t, s, 12, md).(*kmsg.MetadataResponse).Topics[0]
			if mt.ErrorCode != tc.want || mt.Topic == nil || *mt.Topic != tc.topic || mt.TopicID != ([16]byte{}) {
				t.Errorf("got %s, name %v, id %x; want %s, %q, no id", code(mt.ErrorCode), mt.Topic, mt.TopicID, code(tc.want), tc.topic)
			}
			if _, ok := s.md.topicID(tc.topic); ok {
				t.Errorf("%q was created", tc.topic)
			}
		})
	}
}
