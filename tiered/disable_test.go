package tiered

import (
	"log/slog"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
)

// countingMeta counts the calls a metadataManager gets.
type countingMeta struct {
	metadataManager
	segments, partitions atomic.Int32
}

func (c *countingMeta) Segments(tp TopicIDPartition) ([]SegmentMetadata, error) {
	c.segments.Add(1)
	return c.metadataManager.Segments(tp)
}

func (c *countingMeta) Partitions() ([]TopicIDPartition, error) {
	c.partitions.Add(1)
	return c.metadataManager.Partitions()
}

// TestDeleteOnDisableRunsOnce: the remote segments of a topic with
// remote storage off and remote.log.delete.on.disable=true are deleted by
// the first task run, and the runs after it do not delete its partitions
// again. Before, every run deleted every partition again, and each of
// those deletions with nothing left listed every partition of the remote
// log metadata: work quadratic in the partitions, every run.
func TestDeleteOnDisableRunsOnce(t *testing.T) {
	cfg, rm := testRM(t)
	const parts = 4
	rm.Lock()
	top, err := rm.CreateTopicLocked(metastore.Topic{Name: "off", ID: [16]byte{9}, Partitions: parts, ReplicationFactor: 1,
		Configs: map[string]string{"remote.log.delete.on.disable": "true"}})
	rm.Unlock()
	if err != nil {
		t.Fatal(err)
	}

	meta := &countingMeta{metadataManager: newMetadataStore(&memKV{m: map[string][]byte{}})}
	// Partition 1 has a remote segment left from when it was tiered.
	seg := testSegment(0, 9)
	seg.Partition = TopicIDPartition{TopicID: top.ID, Topic: top.Name, Partition: 1}
	if err := meta.Add(seg); err != nil {
		t.Fatal(err)
	}
	if err := meta.Update(seg.Partition, seg.SegmentID, CopySegmentFinished, 1); err != nil {
		t.Fatal(err)
	}
	rsm := &hookRSM{}
	m := &Manager{cfg: cfg, meta: meta, rm: rm, rsm: rsm, log: slog.New(slog.DiscardHandler), now: time.Now, copyRate: newRate(0),
		metrics: newRemoteMetrics(), retry: newBackoff(time.Hour), stopped: make(chan struct{})}
	m.reader.init(m, &cfg)
	const runs = 5
	for range runs {
		m.RunOnce()
	}
	if rsm.deleted != 1 {
		t.Fatalf("%d remote segment deletions, want 1", rsm.deleted)
	}
	if left, _ := meta.Segments(seg.Partition); len(left) != 0 {
		t.Fatalf("remote segments left after the runs: %+v", left)
	}
	// One deletion per partition, in the first run; the sweep of deleted
	// topics lists the partitions once per run.
	if n := meta.segments.Load(); n != parts+1 {
		t.Errorf("%d Segments calls in %d runs, want %d (one per partition, and ours)", n, runs, parts+1)
	}
	if n := meta.partitions.Load(); n > parts+runs {
		t.Errorf("%d Partitions calls in %d runs of %d partitions, want at most %d", n, runs, parts, parts+runs)
	}
}

// testRM returns a replica manager of a segment store in a temporary dir,
// on a broker with remote storage on, and its config.
func testRM(t *testing.T) (config.Config, *replica.Manager) {
	t.Helper()
	dir := t.TempDir()
	ms, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	st, err := engine.Open("segment", engine.Options{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := config.Default()
	cfg.LogCleanerEnable = false
	cfg.RemoteLogStorageSystemEnable = true
	rm := replica.New(replica.Options{Config: cfg, Meta: ms, Store: st, NodeID: 1, Logger: slog.New(slog.DiscardHandler),
		TopicConfig: func(string, map[string]string) replica.TopicConfig {
			tc := replica.TopicConfig{MinISR: 1, MaxMessage: 1 << 20}
			tc.Log.RetentionMs, tc.Log.RetentionBytes, tc.Log.SegmentBytes = -1, -1, 1<<20
			tc.Rules.MaxDecompressed = record.DecompressBound(tc.MaxMessage)
			tc.Rules.TimestampBeforeMax, tc.Rules.TimestampAfterMax = math.MaxInt64, math.MaxInt64
			return tc
		}})
	t.Cleanup(func() { rm.Close() })
	return cfg, rm
}
