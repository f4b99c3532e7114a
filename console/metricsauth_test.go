package console_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

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
