package schemareg_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// The REST API's requests and errors appear on the broker's /metrics by
// route, method and status class, and by Confluent error code.
func TestRegistryMetrics(t *testing.T) {
	b := brokertest.Start(t, "memory", withRegistry, func(c *config.Config) {
		c.HTTPListeners = []string{"http://127.0.0.1:0"}
	})
	addr := b.SchemaRegistry().Addr()
	for range 2 {
		if st, _, raw := httpDo(t, addr, "POST", "/subjects/m-value/versions", map[string]any{"schema": `"int"`}); st != 200 {
			t.Fatalf("register: %d %s", st, raw)
		}
	}
	for range 3 {
		if st, _, _ := httpDo(t, addr, "GET", "/subjects/nosuch/versions", nil); st != 404 {
			t.Fatalf("unknown subject: %d", st)
		}
	}
	if st, _, _ := httpDo(t, addr, "POST", "/subjects/m-value/versions", map[string]any{"schema": `{"type":`}); st != 422 {
		t.Fatalf("invalid schema: %d", st)
	}
	if st, _, _ := httpDo(t, addr, "GET", "/no/such/path", nil); st != 404 {
		t.Fatalf("unknown path: %d", st)
	}
	resp, err := http.Get("http://" + b.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(raw)
	for _, want := range []string{
		`kafka_schema_registry_requests_total{endpoint="/subjects/{s}/versions",method="POST",status="2xx"} 2`,
		`kafka_schema_registry_requests_total{endpoint="/subjects/{s}/versions",method="POST",status="4xx"} 1`,
		`kafka_schema_registry_requests_total{endpoint="/subjects/{s}/versions",method="GET",status="4xx"} 3`,
		`kafka_schema_registry_request_errors_total{endpoint="/subjects/{s}/versions",error_code="40401",method="GET"} 3`,
		`kafka_schema_registry_request_errors_total{endpoint="/subjects/{s}/versions",error_code="42201",method="POST"} 1`,
		`kafka_schema_registry_requests_total{endpoint="other",method="GET",status="4xx"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "schema_registry") {
				t.Log(l)
			}
		}
	}
}
