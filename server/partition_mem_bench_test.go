package server

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/pebblelog"
	"github.com/sluice/sluice/metastore"
)

// BenchmarkPartitionHeap creates topics of 100 partitions through
// createTopicLocked on a single node and reports the live Go heap per
// partition (HeapAlloc after a GC, minus the empty server's), and the
// goroutines it added per partition (none expected), on the memory and
// pebble backends (segment's per-log state is measured by segment's
// TestScalePartitions; creating 20,000 segment logs here takes a minute).
// With PARTITION_HEAP_PROFILE=FILE it writes the heap profile
// (inuse_space) taken at the end, to read with
// `go tool pprof -sample_index=inuse_space -top FILE`.
//
//	go test -run '^$' -bench 'PartitionHeap/backend=pebble' -benchtime 1x ./server/
func BenchmarkPartitionHeap(b *testing.B) {
	for _, backend := range []string{"memory", "pebble"} {
		b.Run("backend="+backend+"/partitions=20000", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchPartitionHeap(b, backend, 20_000)
			}
		})
	}
}

func benchPartitionHeap(b *testing.B, backend string, n int) {
	dir := b.TempDir()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer meta.Close()
	store, err := engine.Open(backend, engine.Options{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	s, err := New(Options{Config: config.Default(), Logger: slog.New(slog.DiscardHandler), Meta: meta, Store: store,
		ClusterID: "bench", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	before, g0 := liveHeap(), runtime.NumGoroutine()
	s.rm.Lock()
	for i := 0; i*100 < n; i++ {
		spec := topicSpec{name: fmt.Sprintf("scale-%06d", i), partitions: 100, rf: 1}
		if _, err := s.createTopicLocked(spec); err != nil {
			s.rm.Unlock()
			b.Fatal(err)
		}
	}
	s.rm.Unlock()
	after := liveHeap()
	b.ReportMetric(float64(after-before)/float64(n), "heapB/partition")
	b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(n), "goroutines/partition")
	if f := os.Getenv("PARTITION_HEAP_PROFILE"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.Lookup("heap").WriteTo(out, 0); err != nil {
			b.Fatal(err)
		}
		out.Close()
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
