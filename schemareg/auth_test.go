package schemareg_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// securedRegistry starts a broker with a SASL listener (PLAIN users admin,
// alice; SCRAM users added by the test), an ACL authorizer with admin as
// super user, and its registry; it returns the broker and an admin client.
func securedRegistry(t testing.TB, more ...func(*config.Config)) (*broker.Broker, *kadm.Client) {
	t.Helper()
	b := brokertest.Start(t, "memory", append([]func(*config.Config){withRegistry, func(c *config.Config) {
		c.Listeners = []string{"SASL_PLAINTEXT://127.0.0.1:0"}
		c.SASLEnabledMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
		c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
		c.SuperUsers = []string{"User:admin"}
		c.FailedAuthenticationDelay = time.Millisecond
		c.SecurityProperties = map[string]string{
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		}
	}}, more...)...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return b, kadm.NewClient(cl)
}

// call is one REST request as a user ("" sends no Authorization).
func call(t *testing.T, addr, user, pass, method, path string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		enc, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	} else {
		m = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, resp.Header, m
}

// Basic auth against the broker's PLAIN and SCRAM users: no or wrong
// credentials get 401 with Confluent's body and WWW-Authenticate, on
// every path; franz-go's sr client logs in with sr.BasicAuth.
func TestRegistryAuthentication(t *testing.T) {
	b, adm := securedRegistry(t)
	c := ctx(t)
	up, err := adm.AlterUserSCRAMs(c, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"},
		{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "dave-secret"},
	})
	if err != nil || up.Error() != nil {
		t.Fatalf("create SCRAM users: %v %v", err, up.Error())
	}
	addr := b.SchemaRegistry().Addr()
	for _, tc := range []struct{ name, user, pass, method, path string }{
		{"no credentials", "", "", "GET", "/subjects"},
		{"no credentials, unknown path", "", "", "GET", "/nosuch"},
		{"no credentials, register", "", "", "POST", "/subjects/x-value/versions"},
		{"wrong PLAIN password", "alice", "wrong", "GET", "/subjects"},
		{"wrong SCRAM password", "carol", "wrong", "GET", "/subjects"},
		{"unknown user", "mallory", "x", "GET", "/schemas/types"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == "POST" {
				body = map[string]any{"schema": `"int"`}
			}
			st, h, m := call(t, addr, tc.user, tc.pass, tc.method, tc.path, body)
			if st != 401 || m["error_code"] != float64(401) || m["message"] != "Unauthorized" {
				t.Errorf("%d %v, want 401 with error_code 401", st, m)
			}
			if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic realm=") {
				t.Errorf("WWW-Authenticate %q", h.Get("WWW-Authenticate"))
			}
		})
	}
	// A malformed Authorization header is no login either.
	req, _ := http.NewRequest("GET", "http://"+addr+"/subjects", nil)
	req.Header.Set("Authorization", "Basic !!!not base64")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("malformed basic auth: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, u := range []struct{ user, pass string }{{"alice", "alice-secret"}, {"carol", "carol-secret"}, {"dave", "dave-secret"}} {
		if st, _, m := call(t, addr, u.user, u.pass, "GET", "/schemas/types", nil); st != 200 {
			t.Errorf("%s (logged in) GET /schemas/types: %d %v", u.user, st, m)
		}
	}
	cl, err := sr.NewClient(sr.URLs("http://"+addr), sr.BasicAuth("admin", "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(c, "orders-value", sr.Schema{Schema: avroV1})
	if err != nil {
		t.Fatalf("register as admin through sr: %v", err)
	}
	got, err := cl.SchemaByID(c, ss.ID)
	if err != nil || got.Schema != avroV1 {
		t.Fatalf("schema by id as admin: %+v %v", got, err)
	}
	anon, err := sr.NewClient(sr.URLs("http://" + addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Subjects(c); srCode(err) != 401 {
		t.Fatalf("sr client without credentials: %v, want error_code 401", err)
	}
}

// Authorization follows the ACLs: <topic>-value by the topic's Describe
// (read) and Write (write); other subjects by the cluster's Describe and
// Alter; config and mode writes need the cluster's Alter; lists and ids
// show only what the principal may read; refusals are 403/40301.
func TestRegistryAuthorization(t *testing.T) {
	b, adm := securedRegistry(t)
	c := ctx(t)
	up, err := adm.AlterUserSCRAMs(c, nil, []kadm.UpsertSCRAM{
		{User: "reader", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "r"},
		{User: "writer", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "w"},
		{User: "operator", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "o"},
	})
	if err != nil || up.Error() != nil {
		t.Fatalf("create SCRAM users: %v %v", err, up.Error())
	}
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:reader").Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe),
		kadm.NewACLs().Allow("User:writer").Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite),
		kadm.NewACLs().Allow("User:operator").Clusters().ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAlter),
	}
	for _, a := range acls {
		if res, err := adm.CreateACLs(c, a); err != nil || res[0].Err != nil {
			t.Fatalf("create ACL: %v %+v", err, res)
		}
	}
	addr := b.SchemaRegistry().Addr()
	as := func(user, pass string) func(method, path string, body any) (int, map[string]any) {
		return func(method, path string, body any) (int, map[string]any) {
			t.Helper()
			st, _, m := call(t, addr, user, pass, method, path, body)
			return st, m
		}
	}
	admin, reader, writer, operator, alice := as("admin", "admin-secret"), as("reader", "r"), as("writer", "w"), as("operator", "o"), as("alice", "alice-secret")
	register := func(_, schema string) map[string]any { return map[string]any{"schema": schema} }
	var ordersID, thingID float64
	if st, m := admin("POST", "/subjects/orders-value/versions", register("orders-value", avroV1)); st != 200 {
		t.Fatalf("admin registers orders-value: %d %v", st, m)
	} else {
		ordersID = m["id"].(float64)
	}
	if st, m := admin("POST", "/subjects/com.example.Thing/versions", register("com.example.Thing", `{"type":"fixed","name":"Thing","size":2}`)); st != 200 {
		t.Fatalf("admin registers com.example.Thing: %d %v", st, m)
	} else {
		thingID = m["id"].(float64)
	}
	if st, m := admin("POST", "/subjects/payments-value/versions", register("payments-value", `"string"`)); st != 200 {
		t.Fatalf("admin registers payments-value: %d %v", st, m)
	}
	idPath := func(id float64) string { return "/schemas/ids/" + jsonNum(id) }

	// Allowed or refused, rule by rule.
	for _, tc := range []struct {
		name   string
		who    func(string, string, any) (int, map[string]any)
		method string
		path   string
		body   any
		status int
	}{
		{"reader gets orders-value", reader, "GET", "/subjects/orders-value/versions/latest", nil, 200},
		{"reader lists orders-value's versions", reader, "GET", "/subjects/orders-value/versions", nil, 200},
		{"reader looks up in orders-value", reader, "POST", "/subjects/orders-value", register("", avroV1), 200},
		{"reader checks compatibility in orders-value", reader, "POST", "/compatibility/subjects/orders-value/versions/latest", register("", avroV2), 200},
		{"reader gets orders-value's id", reader, "GET", idPath(ordersID), nil, 200},
		{"reader cannot get another topic's subject", reader, "GET", "/subjects/payments-value/versions/latest", nil, 403},
		{"reader cannot get a non-topic subject", reader, "GET", "/subjects/com.example.Thing/versions", nil, 403},
		{"reader cannot get a non-topic subject's id", reader, "GET", idPath(thingID) + "/schema", nil, 403},
		{"reader cannot register in orders-value", reader, "POST", "/subjects/orders-value/versions", register("", avroV2), 403},
		{"reader cannot delete orders-value", reader, "DELETE", "/subjects/orders-value", nil, 403},
		{"reader cannot set orders-value's config", reader, "PUT", "/config/orders-value", map[string]any{"compatibility": "NONE"}, 403},
		{"reader cannot set the mode", reader, "PUT", "/mode", map[string]any{"mode": "READONLY"}, 403},
		{"reader reads the global config", reader, "GET", "/config", nil, 200},
		{"writer registers in orders-value", writer, "POST", "/subjects/orders-value/versions", register("", avroV2), 200},
		{"writer reads orders-value (Write implies Describe)", writer, "GET", "/subjects/orders-value/versions/2", nil, 200},
		{"writer cannot register in orders-key's neighbour payments-value", writer, "POST", "/subjects/payments-value/versions", register("", `"int"`), 403},
		{"writer cannot register a non-topic subject", writer, "POST", "/subjects/com.example.Other/versions", register("", `"int"`), 403},
		{"writer cannot set orders-value's config", writer, "PUT", "/config/orders-value", map[string]any{"compatibility": "NONE"}, 403},
		{"writer cannot delete the global config", writer, "DELETE", "/config", nil, 403},
		{"operator sets the global config", operator, "PUT", "/config", map[string]any{"compatibility": "FULL"}, 200},
		{"operator sets orders-value's config", operator, "PUT", "/config/orders-value", map[string]any{"compatibility": "NONE"}, 200},
		{"operator registers a non-topic subject", operator, "POST", "/subjects/com.example.Other/versions", register("", `"int"`), 200},
		{"operator reads a non-topic subject (Alter implies Describe)", operator, "GET", "/subjects/com.example.Thing/versions/1", nil, 200},
		{"operator cannot register in a topic's subject", operator, "POST", "/subjects/orders-value/versions", register("", avroV3), 403},
		{"alice (no ACL) cannot read orders-value", alice, "GET", "/subjects/orders-value/versions", nil, 403},
		{"alice (no ACL) gets the schema types", alice, "GET", "/schemas/types", nil, 200},
		{"writer deletes orders-value's version 2", writer, "DELETE", "/subjects/orders-value/versions/2", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, m := tc.who(tc.method, tc.path, tc.body)
			if st != tc.status {
				t.Fatalf("%s %s: %d %v, want %d", tc.method, tc.path, st, m, tc.status)
			}
			if st == 403 {
				if m["error_code"] != float64(40301) {
					t.Fatalf("403 with %v, want error_code 40301", m)
				}
				if msg, _ := m["message"].(string); !strings.HasPrefix(msg, "User is denied operation") {
					t.Fatalf("403 message %q", msg)
				}
			}
		})
	}

	// Lists show only readable subjects.
	subjects := func(who func(string, string, any) (int, map[string]any), path string) []string {
		t.Helper()
		st, _, raw := httpDoAs(t, addr, who, path)
		if st != 200 {
			t.Fatalf("GET %s: %d %s", path, st, raw)
		}
		return raw2strings(t, raw)
	}
	if got := subjects(reader, "/subjects"); !slices.Equal(got, []string{"orders-value"}) {
		t.Errorf("reader's /subjects %v, want [orders-value]", got)
	}
	if got := subjects(alice, "/subjects"); len(got) != 0 {
		t.Errorf("alice's /subjects %v, want none", got)
	}
	if got := subjects(admin, "/subjects"); len(got) != 4 {
		t.Errorf("admin's /subjects %v, want all four", got)
	}
	if got := subjects(reader, "/schemas"); len(got) != 1 || !strings.Contains(got[0], "orders-value") {
		t.Errorf("reader's /schemas %v, want orders-value's one version", got)
	}
	if got := subjects(reader, idPath(ordersID)+"/subjects"); !slices.Equal(got, []string{"orders-value"}) {
		t.Errorf("reader's subjects of id %v: %v", ordersID, got)
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

// httpDoAs GETs path as who, returning the raw body.
func httpDoAs(t *testing.T, addr string, who func(string, string, any) (int, map[string]any), path string) (int, map[string]any, string) {
	t.Helper()
	st, m := who("GET", path, nil)
	raw, _ := m["raw"].(string)
	return st, m, raw
}

// raw2strings decodes a JSON array; elements that are not strings are
// re-encoded as JSON.
func raw2strings(t *testing.T, raw string) []string {
	t.Helper()
	var xs []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &xs); err != nil {
		t.Fatalf("not a JSON array: %s", raw)
	}
	out := []string{}
	for _, x := range xs {
		var s string
		if json.Unmarshal(x, &s) != nil {
			s = string(x)
		}
		out = append(out, s)
	}
	return out
}

// In a secured cluster a write sent to a broker that is not the writer is
// forwarded with the client's credentials: the writer logs the client in
// and authorizes it again, so a user with Write on the topic registers
// through every broker, and one without is refused by each.
func TestRegistryAuthCluster(t *testing.T) {
	zk := zktest.Start(t) // NeedsProcess
	var bs []*broker.Broker
	for id := int32(1); id <= 3; id++ {
		bs = append(bs, brokertest.Start(t, "memory", withRegistry, func(c *config.Config) {
			c.BrokerID = id
			c.ZooKeeperConnect = zk.Addr() + "/sluice"
			c.ControlledShutdownEnable = false
			c.DefaultReplicationFactor = 3
			c.Listeners = []string{"SASL_PLAINTEXT://127.0.0.1:0"}
			c.SASLEnabledMechanisms = []string{"PLAIN"}
			c.SASLInterBrokerMechanism = "PLAIN"
			c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
			c.SuperUsers = []string{"User:admin"}
			c.SecurityProperties = map[string]string{
				"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
					`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
			}
		}))
	}
	admOpts := []kgo.Opt{kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())}
	brokertest.WaitForBrokers(t, 3, admOpts, bs...)
	c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append(admOpts, kgo.SeedBrokers(bs[0].Addr()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	acl := kadm.NewACLs().Allow("User:alice").Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite)
	if res, err := adm.CreateACLs(c, acl); err != nil || res[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
	schemas := []string{avroV1, avroV2, `{"type":"record","name":"myrecord","fields":[{"type":"string","name":"f1"},{"type":"string","name":"f2","default":"foo"},{"type":"int","name":"f3","default":0}]}`}
	for i, b := range bs {
		addr := b.SchemaRegistry().Addr()
		// The ACL reaches every broker through ZooKeeper: wait for this
		// one to allow alice's read (bounded).
		for try := 0; ; try++ {
			st, _, _ := call(t, addr, "alice", "alice-secret", "GET", "/config/orders-value?defaultToGlobal=true", nil)
			if st == 200 {
				break
			}
			if try == 100 {
				t.Fatalf("broker %d never allowed alice: %d", i+1, st)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if st, _, m := call(t, addr, "alice", "alice-secret", "POST", "/subjects/orders-value/versions", map[string]any{"schema": schemas[i]}); st != 200 {
			t.Fatalf("alice registers through broker %d: %d %v", i+1, st, m)
		}
		if st, _, m := call(t, addr, "bob", "bob-secret", "POST", "/subjects/orders-value/versions", map[string]any{"schema": `"int"`}); st != 403 || m["error_code"] != float64(40301) {
			t.Fatalf("bob registers through broker %d: %d %v, want 403/40301", i+1, st, m)
		}
	}
	st, _, m := call(t, bs[2].SchemaRegistry().Addr(), "alice", "alice-secret", "GET", "/subjects/orders-value/versions", nil)
	if st != 200 || m["raw"] != "[1,2,3]" {
		t.Fatalf("versions: %d %v, want [1,2,3]", st, m)
	}
}
