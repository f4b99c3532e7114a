// Package brokertest starts in-process brokers for tests.
package brokertest

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
)

// Backends lists the registered storage backends, for tests that run over
// every one.
func Backends() []string { return engine.Names() }

// Config returns a test configuration: listener 127.0.0.1:0, the HTTP side
// on http://127.0.0.1:0 (Broker.HTTPAddr), no schema registry, log dir dir,
// the given backend, retention checks off, then overrides applied in order.
func Config(dir, backend string, overrides ...func(*config.Config)) config.Config {
	cfg := config.Default()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.HTTPListeners = []string{"http://127.0.0.1:0"}
	cfg.SchemaRegistryListeners = nil // tests that want it set http://127.0.0.1:0
	cfg.LogDirs = []string{dir}
	cfg.StorageBackend = backend
	cfg.LogRetentionCheck = 0
	cfg.ConnectionsMaxIdle = time.Minute
	for _, o := range overrides {
		o(&cfg)
	}
	return cfg
}

// Logger returns a logger that writes to the test log at Warn and above, or
// at Debug when SLUICE_TEST_DEBUG is set.
func Logger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("SLUICE_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// Start starts a broker with backend on 127.0.0.1:0 in t.TempDir() and
// closes it at Cleanup.
func Start(t testing.TB, backend string, overrides ...func(*config.Config)) *broker.Broker {
	t.Helper()
	return StartIn(t, t.TempDir(), backend, overrides...)
}

// StartIn is Start with a given log dir, for restart tests. The returned
// broker is closed at Cleanup (closing it earlier is fine).
func StartIn(t testing.TB, dir, backend string, overrides ...func(*config.Config)) *broker.Broker {
	t.Helper()
	b, err := broker.Start(Config(dir, backend, overrides...), broker.Options{Logger: Logger(t)})
	if err != nil {
		t.Fatalf("start broker (%s): %v", backend, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return b
}
