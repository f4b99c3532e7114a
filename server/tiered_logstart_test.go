package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTieredDeleteRecordsSurvivesRestart: the log start offset that
// DeleteRecords moves below the local log start of a tiered topic (into
// the remote tier) is kept with the log (log-start-offset-checkpoint), so
// after the broker restarts ListOffsets -2 still answers it, a fetch below
// it is OFFSET_OUT_OF_RANGE rather than a read of deleted records from the
// remote tier, ListOffsets by timestamp finds no deleted record, and the
// task deletes the remote segments wholly below it. Before, the start
// lived only in the remote log manager's memory: a restart brought the
// deleted records back and they were never deleted remotely. Cases: a
// start inside the remote tier, and one exactly at the local log start.
func TestTieredDeleteRecordsSurvivesRestart(t *testing.T) {
	for _, at := range []string{"remote", "local-start"} {
		t.Run("at="+at, func(t *testing.T) {
			dir := t.TempDir()
			const topic, n = "restarting", 300
			b, cl := tieredWithRemote(t, dir, topic, n)
			ctx := context.Background()
			remoteEnd, _ := listOffset(t, cl, topic, -5)
			local, _ := listOffset(t, cl, topic, -4)
			if remoteEnd < 40 || local <= 40 {
				t.Fatalf("remote end %d, local start %d: want much remote", remoteEnd, local)
			}
			start := local
			if at == "remote" {
				start = local / 2
			}
			rs, err := kadm.NewClient(cl).DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: start}}})
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := rs.Lookup(topic, 0); r.Err != nil || r.LowWatermark != start {
				t.Fatalf("delete records before %d: low watermark %d, %v", start, r.LowWatermark, r.Err)
			}
			cl.Close()
			b.close()

			b = startTiered(t, dir)
			cl = mustClient(t, b.addr)
			check := func(when string) {
				t.Helper()
				if off, code := listOffset(t, cl, topic, -2); off != start || code != 0 {
					t.Fatalf("%s: earliest %d (code %d), want the log start %d", when, off, code, start)
				}
				if off, code := listOffset(t, cl, topic, -4); off != local || code != 0 {
					t.Fatalf("%s: earliest local %d (code %d), want %d", when, off, code, local)
				}
				if code, _ := b.fetchCode(t, cl, topic, start-1); code != kerr.OffsetOutOfRange.Code {
					t.Fatalf("%s: fetch below the log start: code %d, want OFFSET_OUT_OF_RANGE", when, code)
				}
				if code, nb := b.fetchCode(t, cl, topic, start); code != 0 || nb == 0 {
					t.Fatalf("%s: fetch at the log start: code %d, %d bytes", when, code, nb)
				}
				// Record 0's timestamp: the first record left is the log start.
				if off, code := listOffset(t, cl, topic, tieredTimeBase); off != start || code != 0 {
					t.Fatalf("%s: offset for record 0's timestamp %d (code %d), want the log start %d", when, off, code, start)
				}
				// DeleteRecords below the log start changes nothing.
				rs, err := kadm.NewClient(cl).DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: start - 1}}})
				if err != nil {
					t.Fatal(err)
				}
				if r, _ := rs.Lookup(topic, 0); r.Err != nil || r.LowWatermark != start {
					t.Fatalf("%s: delete records below the log start: low watermark %d, %v; want %d", when, r.LowWatermark, r.Err, start)
				}
			}
			check("after the restart")
			b.s.tiered.RunOnce()
			starts, _ := b.remoteLogStarts(t)
			for s := range starts {
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					t.Fatalf("remote object name %q: %v", s, err)
				}
				if next := nextRemoteStart(starts, v); next >= 0 && next <= start {
					t.Fatalf("remote segment %d..%d lies wholly below the log start %d after the task", v, next-1, start)
				}
			}
			if len(starts) == 0 {
				t.Fatal("no remote segment left")
			}
			check("after the task")
		})
	}
}

// nextRemoteStart is the smallest start in starts above v (the end + 1 of
// the segment starting at v), -1 when v is the last.
func nextRemoteStart(starts map[string]int, v int64) int64 {
	next := int64(-1)
	for s := range starts {
		w, err := strconv.ParseInt(s, 10, 64)
		if err == nil && w > v && (next < 0 || w < next) {
			next = w
		}
	}
	return next
}

// TestTieredLostLogStartCheckpoint: a tiered topic's broker restarted
// with its log-start-offset-checkpoint damaged (the log start offset below
// the local log start lost) answers the remote tier's first offset as the
// log start, serves every record from offset 0, and its task deletes no
// remote segment: a lost checkpoint never turns remote records into
// deleted ones. The start it settles on survives the next restart.
func TestTieredLostLogStartCheckpoint(t *testing.T) {
	dir := t.TempDir()
	const topic, n = "lostckpt", 200
	b, cl := tieredWithRemote(t, dir, topic, n)
	if local, _ := listOffset(t, cl, topic, -4); local <= 0 {
		t.Fatalf("local start %d: want records only remote", local)
	}
	before, _ := b.remoteLogStarts(t)
	cl.Close()
	b.close()
	if err := os.WriteFile(filepath.Join(dir, "logs", "log-start-offset-checkpoint"), []byte("0\n7\ntorn"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, when := range []string{"after the damaged checkpoint", "after another restart"} {
		b = startTiered(t, dir)
		cl = mustClient(t, b.addr)
		if off, code := listOffset(t, cl, topic, -2); off != 0 || code != 0 {
			t.Fatalf("%s: earliest %d (code %d), want the remote start 0", when, off, code)
		}
		b.s.tiered.RunOnce()
		if after, _ := b.remoteLogStarts(t); len(after) != len(before) {
			t.Fatalf("%s: %d remote segments after the task, %d before", when, len(after), len(before))
		}
		consumeAll(t, b.addr, topic, n)
		cl.Close()
		b.close()
	}
}
