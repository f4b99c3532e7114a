package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Topic configs need DescribeConfigs on the topic, as Kafka's
// DescribeConfigs does; Describe alone shows the partitions and says the
// configs are hidden. Creating a topic answers no more than describing
// it would.
func TestTopicConfigsNeedDescribeConfigs(t *testing.T) {
	b := securedBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminClient(t, b)
	for _, name := range []string{"described", "configured"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("12345")}, name); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", name, err, r.Err)
		}
	}
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("described").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe),
		kadm.NewACLs().Allow("User:alice").Topics("configured").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe, kadm.OpDescribeConfigs),
		kadm.NewACLs().Allow("User:alice").Topics("alices").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpCreate),
		kadm.NewACLs().Allow("User:alice").Topics("alices2").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpCreate, kadm.OpDescribe),
	}
	for _, a := range acls {
		if res, err := adm.CreateACLs(ctx, a); err != nil || res[0].Err != nil {
			t.Fatalf("create ACL: %v %+v", err, res)
		}
	}
	type topic struct {
		Name       string `json:"name"`
		Partitions []any  `json:"partitions"`
		Configs    []struct {
			Name  string  `json:"name"`
			Value *string `json:"value"`
		} `json:"configs"`
		ConfigsHidden bool `json:"configsHidden"`
	}
	retention := func(tp topic) string {
		for _, c := range tp.Configs {
			if c.Name == "retention.ms" && c.Value != nil {
				return *c.Value
			}
		}
		return ""
	}
	alice := newAPI(t, b).as("alice", "alice-secret")
	var tp topic
	alice.get("/api/topics/described", 200, &tp)
	if len(tp.Configs) != 0 || !tp.ConfigsHidden || len(tp.Partitions) != 1 {
		t.Errorf("Describe only: %+v, want partitions and configs hidden", tp)
	}
	tp = topic{}
	alice.get("/api/topics/configured", 200, &tp)
	if retention(tp) != "12345" || tp.ConfigsHidden {
		t.Errorf("Describe and DescribeConfigs: %+v, want retention.ms=12345", tp)
	}

	tp = topic{}
	alice.post("/api/topics", map[string]any{"name": "alices", "configs": map[string]string{"retention.ms": "777"}}, 201, &tp)
	if tp.Name != "alices" || tp.Partitions != nil || tp.Configs != nil {
		t.Errorf("created without Describe: %+v, want the name only", tp)
	}
	tp = topic{}
	alice.post("/api/topics", map[string]any{"name": "alices2", "configs": map[string]string{"retention.ms": "777"}}, 201, &tp)
	if len(tp.Partitions) == 0 || !tp.ConfigsHidden || retention(tp) != "" {
		t.Errorf("created with Describe, without DescribeConfigs: %+v", tp)
	}
}
