package console_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestMetricsLogin: /metrics needs the same login as the rest of the HTTP
// side when that side needs one (the series name topics and groups), unless
// http.metrics.authentication.enable=false; /healthz stays open for probes.
func TestMetricsLogin(t *testing.T) {
	optOut := func(c *config.Config) { c.HTTPMetricsAuthentication = false }
	cases := []struct {
		name  string
		start func(t *testing.T) *broker.Broker
		user  string
		pass  string
		want  int
	}{
		{"secured/no credentials", func(t *testing.T) *broker.Broker { return securedBroker(t) }, "", "", 401},
		{"secured/wrong password", func(t *testing.T) *broker.Broker { return securedBroker(t) }, "alice", "wrong", 401},
		{"secured/unknown user", func(t *testing.T) *broker.Broker { return securedBroker(t) }, "nobody", "x", 401},
		{"secured/right credentials", func(t *testing.T) *broker.Broker { return securedBroker(t) }, "alice", "alice-secret", 200},
		{"secured, opted out/no credentials", func(t *testing.T) *broker.Broker { return securedBroker(t, optOut) }, "", "", 200},
		{"security off/no credentials", func(t *testing.T) *broker.Broker { return brokertest.Start(t, "memory") }, "", "", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPI(t, tc.start(t))
			req, err := http.NewRequest("GET", a.base+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.user != "" {
				req.SetBasicAuth(tc.user, tc.pass)
			}
			resp, err := a.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body strings.Builder
			_, err = io.Copy(&body, resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("GET /metrics: %d %.200s, want %d", resp.StatusCode, body.String(), tc.want)
			}
			switch tc.want {
			case 401:
				if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Basic realm="sluice"`) {
					t.Errorf("WWW-Authenticate = %q", got)
				}
				if strings.Contains(body.String(), "kafka_") {
					t.Errorf("a 401 carries metrics: %.200s", body.String())
				}
			case 200:
				if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
					!strings.Contains(body.String(), "# TYPE kafka_server_brokertopicmetrics_messagesin_total counter") {
					t.Errorf("not Prometheus text: %s %.200s", resp.Header.Get("Content-Type"), body.String())
				}
			}
			// The probes stay open whatever /metrics needs.
			a.get("/healthz", 200, nil)
		})
	}
}

// TestMetricsHideWhatACLsHide: a logged-in principal's /metrics carries
// the series of only the topics and groups it may Describe, as the API
// shows them; a super user's carries all.
func TestMetricsHideWhatACLsHide(t *testing.T) {
	b := securedBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminClient(t, b)
	for _, name := range []string{"visible", "secret-topic"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", name, err, r.Err)
		}
	}
	acls := kadm.NewACLs().Allow("User:alice").ResourcePatternType(kadm.ACLPatternLiteral).
		Topics("visible").Groups("open-group").Operations(kadm.OpDescribe)
	if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("create ACLs: %v %+v", err, res)
	}
	for _, group := range []string{"open-group", "secret-group"} {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "visible", Partition: 0, At: 0})
		if r, err := adm.CommitOffsets(ctx, group, os); err != nil || r.Error() != nil {
			t.Fatalf("commit for %s: %v %v", group, err, r.Error())
		}
	}

	a := newAPI(t, b)
	admin := string(a.as("admin", "admin-secret").get("/metrics", 200, nil))
	alice := string(a.as("alice", "alice-secret").get("/metrics", 200, nil))
	for _, tc := range []struct {
		series       string
		admin, alice bool
	}{
		{`kafka_log_log_size{partition="0",topic="visible"}`, true, true},
		{`kafka_log_log_size{partition="0",topic="secret-topic"}`, true, false},
		{`kafka_consumergroup_members{consumergroup="open-group"}`, true, true},
		{`kafka_consumergroup_members{consumergroup="secret-group"}`, true, false},
		{`kafka_server_brokertopicmetrics_messagesin_total{topic=""}`, true, true},
		{`kafka_server_replicamanager_partitioncount `, true, true},
	} {
		if got := strings.Contains(admin, tc.series); got != tc.admin {
			t.Errorf("admin's /metrics has %s: %v, want %v", tc.series, got, tc.admin)
		}
		if got := strings.Contains(alice, tc.series); got != tc.alice {
			t.Errorf("alice's /metrics has %s: %v, want %v", tc.series, got, tc.alice)
		}
	}
	for _, name := range []string{"secret-topic", "secret-group"} {
		if strings.Contains(alice, `"`+name+`"`) {
			t.Errorf("alice's /metrics names %s", name)
		}
	}
}
