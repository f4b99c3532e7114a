package server

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// closeRecorder is a single node's control plane that records its close.
type closeRecorder struct {
	localPlane
	closed bool
}

func (c *closeRecorder) close() { c.closed = true }

// TestNewUnwindsOnError: when a component fails to start (here the metrics
// collector, whose registry already holds another server's), New closes
// what started before it, in reverse order: the control plane and the
// partitions it had opened.
func TestNewUnwindsOnError(t *testing.T) {
	m := metrics.New()
	newTestServer(t, nil, Options{Metrics: m})

	dir := t.TempDir()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	store, err := engine.Open("memory", engine.Options{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := meta.PutTopic(metastore.Topic{Name: "t", ID: newTopicID(), Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{0}}}); err != nil {
		t.Fatal(err)
	}
	var half *Server
	var rec *closeRecorder
	_, err = New(Options{
		Config: config.Default(), Logger: slog.New(slog.DiscardHandler), Meta: meta, Store: store, Metrics: m,
		controlPlane: func(s *Server) controlPlane {
			half, rec = s, &closeRecorder{localPlane: localPlane{s}}
			return rec
		},
	})
	if err == nil {
		t.Fatal("a second server registered its metrics in the same registry")
	}
	if !rec.closed {
		t.Error("the control plane was not closed")
	}
	p := half.rm.Partition("t", 0)
	if p == nil {
		t.Fatal("t-0 was never opened")
	}
	batch := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, []record.BuildRecord{{Value: []byte("v")}})
	if _, err := p.Append(context.Background(), batch, 1); !errors.Is(err, replication.ErrClosed) {
		t.Fatalf("append to t-0 after the failed New: %v, want the partition closed", err)
	}
}
