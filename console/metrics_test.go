package console_test

import (
	"regexp"
	"strconv"
	"testing"
)

// The HTTP listener's socket metrics count its connections and logins
// (they were exported, always 0).
func TestHTTPListenerMetrics(t *testing.T) {
	b := securedBroker(t)
	a := newAPI(t, b)
	a.as("alice", "alice-secret").get("/api/whoami", 200, nil)
	a.as("alice", "wrong").do("GET", "/api/whoami", "", nil)
	body := string(a.as("admin", "admin-secret").get("/metrics", 200, nil))
	value := func(name string) float64 {
		t.Helper()
		m := regexp.MustCompile(`(?m)^kafka_server_socket_server_metrics_` + name + `\{listener="HTTP"\} (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s for HTTP in:\n%s", name, body)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := value("connection_creation_total"); v < 1 {
		t.Errorf("connection_creation_total %v, want >= 1", v)
	}
	if v := value("connection_count"); v < 1 { // the scrape's own
		t.Errorf("connection_count %v, want >= 1", v)
	}
	if v := value("successful_authentication_total"); v < 1 {
		t.Errorf("successful_authentication_total %v, want >= 1", v)
	}
	if v := value("failed_authentication_total"); v < 1 {
		t.Errorf("failed_authentication_total %v, want >= 1", v)
	}
}
