package console_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/console"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Before the broker attaches, the API answers 503 and /readyz says what is
// not ready; a panicking handler is answered 500 and the server goes on.
func TestBeforeAttachAndPanics(t *testing.T) {
	var ready atomic.Bool
	srv, err := console.Start(console.Options{
		Listeners: []string{"http://127.0.0.1:0"},
		Logger:    slog.New(slog.DiscardHandler),
		Ready: func() []console.Check {
			if ready.Load() {
				panic("boom")
			}
			return []console.Check{{Name: "logRecovery", OK: false, Detail: "log recovery: loading 3 partition logs"}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := "http://" + srv.Addrs()[0]
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	if code, body := get(t, base+"/api/topics"); code != 503 {
		t.Fatalf("/api/topics before attach: %d %s", code, body)
	}
	code, body := get(t, base+"/readyz")
	var rd struct {
		Ready    bool                       `json:"ready"`
		Checks   map[string]json.RawMessage `json:"checks"`
		NotReady []string                   `json:"notReady"`
	}
	if err := json.Unmarshal([]byte(body), &rd); err != nil || code != 503 || rd.Ready || len(rd.NotReady) != 1 || rd.Checks["logRecovery"] == nil {
		t.Fatalf("/readyz: %d %s %v", code, body, err)
	}
	ready.Store(true)
	if code, _ := get(t, base+"/readyz"); code != 500 {
		t.Fatalf("/readyz with a panicking check: %d, want 500", code)
	}
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz after a panic: %d", code)
	}
	if code, _ := get(t, base+"/metrics"); code != 404 {
		t.Fatalf("/metrics without a registry: %d, want 404", code)
	}
}

// A taken HTTP port fails Start with an error naming http.listeners and
// saying "address already in use" (the e2e harness retries on it).
func TestHTTPBindFailure(t *testing.T) {
	first := brokertest.Start(t, "memory")
	cfg := brokertest.Config(t.TempDir(), "memory", func(c *config.Config) {
		c.HTTPListeners = []string{"http://" + first.HTTPAddr()}
	})
	b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t)})
	if err == nil {
		b.Close()
		t.Fatal("second broker on the same HTTP port started")
	}
	if !strings.Contains(err.Error(), "http.listeners") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error %q does not name http.listeners and the cause", err)
	}
}

// Without http.listeners there is no HTTP server and no metrics.
func TestNoHTTPListeners(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) { c.HTTPListeners = nil })
	if b.HTTPAddr() != "" || b.Metrics() != nil {
		t.Fatalf("HTTPAddr %q, metrics %v", b.HTTPAddr(), b.Metrics())
	}
}
