package tiered

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice/sluice/metastore"
)

// lateRSM is the local-directory backend where a request of a copy cut
// short lands after the copy's cleanup: deleting a segment's objects
// leaves one written again behind it, as a store does that completes a
// PUT it received before the broker died, after the restarted broker
// removed the copy's objects.
type lateRSM struct{ *LocalDir }

func (r lateRSM) DeleteLogSegmentData(md SegmentMetadata) error {
	if err := r.LocalDir.DeleteLogSegmentData(md); err != nil {
		return err
	}
	path := r.object(md, suffixes[IndexOffset])
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte("landed late"), 0o644)
}

// TestLeftoverCopySwept: a segment a crash left COPY_SEGMENT_STARTED is
// cleaned up at the next run, and the partition's objects are swept once
// that run succeeds, so an object of the dead copy that lands after the
// cleanup is not left in the store, named by no metadata, forever (the
// shape of TestTieredS3KillMidUpload: a store stopped while the broker
// was killed finishes the requests it holds once it runs again). The
// objects of a finished segment stay.
func TestLeftoverCopySwept(t *testing.T) {
	cfg, rm := testRM(t)
	rm.Lock()
	top, err := rm.CreateTopicLocked(metastore.Topic{Name: "t", ID: [16]byte{7}, Partitions: 1, ReplicationFactor: 1,
		Configs: map[string]string{"remote.storage.enable": "true"}})
	rm.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	ld, err := NewLocalDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	meta := newMetadataStore(&memKV{m: map[string][]byte{}})
	m := &Manager{cfg: cfg, meta: meta, rm: rm, rsm: lateRSM{ld}, log: slog.New(slog.DiscardHandler), now: time.Now,
		copyRate: newRate(0), metrics: newRemoteMetrics(), retry: newBackoff(time.Hour), stopped: make(chan struct{})}
	m.reader.init(m, &cfg)
	tp := TopicIDPartition{TopicID: top.ID, Topic: top.Name, Partition: 0}
	kept, dead := testSegment(0, 9), testSegment(10, 19)
	kept.Partition, dead.Partition = tp, tp
	for _, s := range []SegmentMetadata{kept, dead} {
		if err := meta.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := meta.Update(tp, kept.SegmentID, CopySegmentFinished, 1); err != nil {
		t.Fatal(err)
	}
	keptObj := ld.object(kept, "log")
	if err := os.MkdirAll(filepath.Dir(keptObj), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keptObj, []byte("finished"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.RunOnce()
	if segs, err := meta.Segments(tp); err != nil || len(segs) != 1 || segs[0].SegmentID != kept.SegmentID {
		t.Fatalf("segments after the run: %+v %v; want the finished one only", segs, err)
	}
	entries, err := os.ReadDir(ld.partitionDir(tp))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != filepath.Base(keptObj) {
		t.Fatalf("objects after the run: %v; want only %s (the dead copy's late object swept)", names, filepath.Base(keptObj))
	}
}
