package console_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/testpki"
)

// securedBroker starts a broker on SASL_PLAINTEXT with PLAIN users admin
// (super user), alice and bob, SCRAM enabled, and ACLs on; more changes
// the config further.
func securedBroker(t *testing.T, more ...func(*config.Config)) *broker.Broker {
	t.Helper()
	return brokertest.Start(t, "memory", append([]func(*config.Config){func(c *config.Config) {
		c.Listeners = []string{"SASL_PLAINTEXT://127.0.0.1:0"}
		c.SASLEnabledMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
		c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
		c.SuperUsers = []string{"User:admin"}
		c.FailedAuthenticationDelay = 10 * time.Millisecond
		c.SecurityProperties = map[string]string{
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
		}
	}}, more...)...)
}

func adminClient(t *testing.T, b *broker.Broker) *kadm.Client {
	return kadm.NewClient(kclient(t, b.Addr(), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
}

func TestAuth(t *testing.T) {
	b := securedBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminClient(t, b)
	for _, name := range []string{"visible", "hidden"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", name, err, r.Err)
		}
	}
	acl := kadm.NewACLs().Allow("User:alice").Topics("visible").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
	up, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"},
		{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "dave-secret"},
	})
	if err != nil || up.Error() != nil {
		t.Fatalf("create SCRAM users: %v %v", err, up.Error())
	}

	// DescribeLogDirs (the sizes) needs Describe on the cluster.
	aliceKafka := kadm.NewClient(kclient(t, b.Addr(), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())))
	if _, err := aliceKafka.DescribeAllLogDirs(ctx, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("DescribeLogDirs as alice: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if dirs, err := adm.DescribeAllLogDirs(ctx, nil); err != nil || len(dirs) != 1 {
		t.Errorf("DescribeLogDirs as admin: %v %v", dirs, err)
	}

	a := newAPI(t, b)
	// Open paths, and what needs a user.
	a.get("/healthz", 200, nil)
	for _, path := range []string{"/api/topics", "/api/whoami", "/readyz", "/metrics", "/", "/api/nope"} {
		code, _ := a.do("GET", path, "", nil)
		if code != 401 {
			t.Errorf("GET %s without a user: %d, want 401", path, code)
		}
	}
	req, _ := http.NewRequest("GET", a.base+"/api/topics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Basic realm="sluice"`) {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	for _, c := range [][2]string{{"alice", "wrong"}, {"nobody", "x"}, {"carol", "alice-secret"}, {"", ""}, {"dave", "dave-secret "}} {
		code, _ := a.as(c[0], c[1]).do("GET", "/api/topics", "", nil)
		if code != 401 {
			t.Errorf("user %q password %q: %d, want 401", c[0], c[1], code)
		}
	}

	names := func(as *api) []string {
		var tl topicList
		as.get("/api/topics", 200, &tl)
		var out []string
		for _, tp := range tl.Topics {
			out = append(out, tp.Name)
		}
		return out
	}
	alice, bob := a.as("alice", "alice-secret"), a.as("bob", "bob-secret")
	if got := names(alice); len(got) != 1 || got[0] != "visible" {
		t.Errorf("alice sees %v, want [visible]", got)
	}
	if got := names(bob); len(got) != 0 {
		t.Errorf("bob sees %v, want none", got)
	}
	if got := names(a.as("admin", "admin-secret")); len(got) < 2 {
		t.Errorf("admin sees %v", got)
	}
	alice.get("/api/topics/visible", 200, nil)
	alice.get("/api/topics/hidden", 403, nil)
	alice.get("/api/topics/visible/records", 403, nil) // Describe is not Read
	alice.post("/api/topics/visible/records", map[string]string{"value": "v"}, 403, nil)
	alice.post("/api/topics", map[string]any{"name": "alices"}, 403, nil)
	var who struct {
		Principal       string `json:"principal"`
		AuthRequired    bool   `json:"authRequired"`
		MayCreateTopics bool   `json:"mayCreateTopics"`
	}
	alice.get("/api/whoami", 200, &who)
	if who.Principal != "User:alice" || !who.AuthRequired || who.MayCreateTopics {
		t.Errorf("alice whoami: %+v", who)
	}
	a.as("admin", "admin-secret").get("/api/whoami", 200, &who)
	if !who.MayCreateTopics {
		t.Errorf("admin whoami: %+v", who)
	}

	// SCRAM users of either mechanism log in; they see what ACLs allow.
	a.as("carol", "carol-secret").get("/api/whoami", 200, &who)
	if who.Principal != "User:carol" {
		t.Errorf("carol whoami: %+v", who)
	}
	a.as("dave", "dave-secret").get("/readyz", 200, nil)
	if got := names(a.as("carol", "carol-secret")); len(got) != 0 {
		t.Errorf("carol sees %v, want none", got)
	}

	// A changed or deleted credential takes effect at once, though
	// successful logins are remembered.
	up, err = adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-new"}})
	if err != nil || up.Error() != nil {
		t.Fatalf("change carol's password: %v %v", err, up.Error())
	}
	if code, _ := a.as("carol", "carol-secret").do("GET", "/api/whoami", "", nil); code != 401 {
		t.Errorf("carol's old password after a change: %d, want 401", code)
	}
	a.as("carol", "carol-new").get("/api/whoami", 200, nil)
	del, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || del.Error() != nil {
		t.Fatalf("delete carol: %v %v", err, del.Error())
	}
	if code, _ := a.as("carol", "carol-new").do("GET", "/api/whoami", "", nil); code != 401 {
		t.Errorf("carol after her credential was deleted: %d, want 401", code)
	}
}

func TestHTTPS(t *testing.T) {
	pki := testpki.New(t)
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.HTTPListeners = []string{"https://127.0.0.1:0"}
		c.SecurityProperties = map[string]string{
			"ssl.keystore.type":       "PEM",
			"ssl.keystore.location":   pki.Broker.Keystore,
			"ssl.truststore.type":     "PEM",
			"ssl.truststore.location": pki.Broker.CA,
		}
	})
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: pki.TLS}}
	resp, err := cl.Get("https://" + b.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("https /healthz: %d, TLS %v", resp.StatusCode, resp.TLS != nil)
	}
	// Plain HTTP to the TLS port does not get an answer from the API.
	if resp, err := http.Get("http://" + b.HTTPAddr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered 200 on the https listener")
		}
	}
}

// The broker's own client logs in with SCRAM when
// sasl.mechanism.inter.broker.protocol says so (a multi-step exchange
// through the kconn-to-franz-go adapter).
func TestConsoleClientSCRAM(t *testing.T) {
	b := securedBroker(t, func(c *config.Config) {
		c.SASLInterBrokerMechanism = "SCRAM-SHA-512"
		c.SecurityProperties["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"] =
			`org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="scram-secret";`
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminClient(t, b)
	// Without the SCRAM credential the console cannot log in.
	if code, body := newAPI(t, b).as("admin", "admin-secret").do("GET", "/api/topics", "", nil); code != 503 {
		t.Fatalf("/api/topics with no SCRAM credential for the console: %d %s", code, body)
	}
	up, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "admin", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "scram-secret"}})
	if err != nil || up.Error() != nil {
		t.Fatalf("create SCRAM user: %v %v", err, up.Error())
	}
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "s"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var tl topicList
	newAPI(t, b).as("admin", "admin-secret").get("/api/topics", 200, &tl)
	if len(tl.Topics) != 1 || tl.Topics[0].Name != "s" {
		t.Fatalf("topics: %+v", tl)
	}
}
