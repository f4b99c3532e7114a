package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

func withSchemaRegistry(c *config.Config) { c.SchemaRegistryListeners = []string{"http://127.0.0.1:0"} }

// registerSchema registers schema under subject through b's registry as
// user (basic auth; "" for none) and returns its id.
func registerSchema(t *testing.T, b *broker.Broker, user, pass, subject, schema string, refs ...map[string]any) int {
	t.Helper()
	body := map[string]any{"schema": schema}
	if len(refs) > 0 {
		body["references"] = refs
	}
	enc, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", "http://"+b.SchemaRegistry().Addr()+"/subjects/"+subject+"/versions", bytes.NewReader(enc))
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ID int `json:"id"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil {
		t.Fatalf("register %s: %s", subject, resp.Status)
	}
	return out.ID
}

type schemaList struct {
	Enabled  bool `json:"enabled"`
	Subjects []struct {
		Subject  string `json:"subject"`
		Versions []int  `json:"versions"`
		LatestID int    `json:"latestId"`
		Type     string `json:"type"`
	} `json:"subjects"`
}

type schemaDetail struct {
	Subject  string `json:"subject"`
	Versions []struct {
		Version    int    `json:"version"`
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Schema     string `json:"schema"`
		References []struct {
			Name, Subject string
			Version       int
		} `json:"references"`
	} `json:"versions"`
}

// /api/schemas lists subjects with their versions, latest id and type;
// /api/schemas/{subject} gives each version's schema and references; a
// broker without a registry says so.
func TestSchemasAPI(t *testing.T) {
	b := brokertest.Start(t, "memory", withSchemaRegistry)
	const v1 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`
	const v2 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"n","type":"int","default":0}]}`
	id1 := registerSchema(t, b, "", "", "orders-value", v1)
	id2 := registerSchema(t, b, "", "", "orders-value", v2)
	registerSchema(t, b, "", "", "line", `{"type":"record","name":"Line","fields":[{"name":"o","type":"Order"}]}`,
		map[string]any{"name": "Order", "subject": "orders-value", "version": 1})
	a := newAPI(t, b)
	var l schemaList
	a.get("/api/schemas", 200, &l)
	if !l.Enabled || len(l.Subjects) != 2 || l.Subjects[0].Subject != "line" || l.Subjects[1].Subject != "orders-value" {
		t.Fatalf("subjects: %+v", l)
	}
	if o := l.Subjects[1]; len(o.Versions) != 2 || o.LatestID != id2 || o.Type != "AVRO" {
		t.Errorf("orders-value: %+v, want versions [1 2], latest id %d", o, id2)
	}
	var d schemaDetail
	a.get("/api/schemas/orders-value", 200, &d)
	if len(d.Versions) != 2 || d.Versions[0].ID != id1 || d.Versions[0].Schema != v1 || d.Versions[1].Schema != v2 {
		t.Errorf("orders-value versions: %+v", d)
	}
	a.get("/api/schemas/line", 200, &d)
	if len(d.Versions) != 1 || len(d.Versions[0].References) != 1 || d.Versions[0].References[0].Subject != "orders-value" {
		t.Errorf("line: %+v", d)
	}
	a.get("/api/schemas/nosuch", 404, nil)

	off := brokertest.Start(t, "memory")
	var none schemaList
	newAPI(t, off).get("/api/schemas", 200, &none)
	if none.Enabled || len(none.Subjects) != 0 {
		t.Errorf("without a registry: %+v", none)
	}
}

// The console shows a principal only the subjects the registry lets it
// read: <topic>-value by Describe on the topic.
func TestSchemasAPIFollowsACLs(t *testing.T) {
	b := securedBroker(t, withSchemaRegistry)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminClient(t, b)
	acl := kadm.NewACLs().Allow("User:alice").Topics("visible").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
	registerSchema(t, b, "admin", "admin-secret", "visible-value", `"string"`)
	registerSchema(t, b, "admin", "admin-secret", "hidden-value", `"int"`)
	alice := newAPI(t, b).as("alice", "alice-secret")
	var l schemaList
	alice.get("/api/schemas", 200, &l)
	if len(l.Subjects) != 1 || l.Subjects[0].Subject != "visible-value" {
		t.Errorf("alice's subjects: %+v, want visible-value only", l.Subjects)
	}
	alice.get("/api/schemas/visible-value", 200, nil)
	alice.get("/api/schemas/hidden-value", 403, nil)
	var all schemaList
	newAPI(t, b).as("admin", "admin-secret").get("/api/schemas", 200, &all)
	if len(all.Subjects) != 2 {
		t.Errorf("admin's subjects: %+v, want both", all.Subjects)
	}
}
