package server

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// countHandler counts the records logged through it.
type countHandler struct{ n atomic.Int64 }

func (h *countHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h *countHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h *countHandler) WithGroup(string) slog.Handler             { return h }

// TestAuthTimeoutLogAggregates: a flood of connections closed by
// connections.authentication.timeout.ms logs one line, not one each, and
// the next line, once authTimeoutLogEvery has passed, carries the count of
// those not logged.
func TestAuthTimeoutLogAggregates(t *testing.T) {
	var h countHandler
	log := slog.New(&h)
	var l authTimeoutLog
	for range 1000 {
		l.closed(log, "127.0.0.1:1", time.Second)
	}
	if got := h.n.Load(); got != 1 {
		t.Fatalf("%d lines for 1000 timed-out connections, want 1", got)
	}
	if n := l.every.Pending(); n != 999 {
		t.Fatalf("%d connections waiting for the next line, want 999", n)
	}
	l.closedAt(time.Now().Add(authTimeoutLogEvery), log, "127.0.0.1:1", time.Second) // as if a minute passed
	if got, n := h.n.Load(), l.every.Pending(); got != 2 || n != 0 {
		t.Fatalf("after a minute: %d lines and %d waiting, want 2 and 0", got, n)
	}
}
