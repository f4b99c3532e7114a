package schemareg

import (
	"strings"
	"testing"

	"github.com/sluice/sluice/acl"
)

// Which resource guards a subject: the topic of <topic>-key and
// <topic>-value when <topic> is a legal topic name, else the cluster.
func TestSubjectResource(t *testing.T) {
	long := strings.Repeat("t", 249)
	for _, tc := range []struct {
		subject string
		rt      acl.ResourceType
		name    string
	}{
		{"orders-value", acl.ResourceTopic, "orders"},
		{"orders-key", acl.ResourceTopic, "orders"},
		{"my.topic_1-value", acl.ResourceTopic, "my.topic_1"},
		{"a-key-value", acl.ResourceTopic, "a-key"},
		{"a-value-key", acl.ResourceTopic, "a-value"},
		{long + "-value", acl.ResourceTopic, long},
		{long + "t-value", acl.ResourceCluster, acl.ClusterName}, // 250 characters
		{"-value", acl.ResourceCluster, acl.ClusterName},
		{".-value", acl.ResourceCluster, acl.ClusterName},
		{"..-key", acl.ResourceCluster, acl.ClusterName},
		{"a/b-value", acl.ResourceCluster, acl.ClusterName},
		{"ordérs-value", acl.ResourceCluster, acl.ClusterName},
		{"com.example.Order", acl.ResourceCluster, acl.ClusterName},
		{"orders-com.example.Order", acl.ResourceCluster, acl.ClusterName}, // TopicRecordNameStrategy
		{"orders-values", acl.ResourceCluster, acl.ClusterName},
		{"", acl.ResourceCluster, acl.ClusterName},
	} {
		rt, name := subjectResource(tc.subject)
		if rt != tc.rt || name != tc.name {
			t.Errorf("subjectResource(%q) = %v %q, want %v %q", tc.subject, rt, name, tc.rt, tc.name)
		}
	}
}
