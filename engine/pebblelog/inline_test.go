package pebblelog

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
)

// appendInline appends batches as format version 1 did: the batch bytes
// inline in their 0x06 values, committed synced. It builds the stores
// older builds left, to test that they stay readable beside data files.
func appendInline(t testing.TB, lg engine.Log, batches []byte, epoch int32) engine.AppendInfo {
	t.Helper()
	l := lg.(*Log)
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	info, err := engine.PrepareAppend(batches, l.end, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: epoch}, l.cfg.Get().MaxBatchBytes)
	if err != nil {
		t.Fatal(err)
	}
	pb := l.s.db.NewBatch()
	defer pb.Close()
	st := l.stage(pb, batches, -1, l.s.now().UnixMilli())
	if err := pb.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	l.install(st, batches, -1)
	return info
}

// setFormatVersion overwrites the store's version key (an old store).
func setFormatVersion(t testing.TB, s engine.Store, v byte) {
	t.Helper()
	if err := s.(*Store).db.Set([]byte{tagVersion}, []byte{0, 0, 0, v}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}
