package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/internal/s3test"
	"github.com/sluice/sluice/internal/testenv"
	"github.com/sluice/sluice/tiered"
)

// TestTieredClusterS3 is issue 31's "the object store stopped for a
// minute and restarted with nothing lost" on a 3-broker cluster with
// ZooKeeper, every broker tiering to one bucket of a versitygw (S3):
// a topic with a small local retention takes about 32 MiB at acks=all;
// a third of it goes in while the store is stopped (SIGSTOP) for
// SLUICE_TIERED_E2E_STORE_PAUSE (default 60s). While it is stopped,
// produce goes on, the records just produced are read back, and no
// broker's local log starts past the remote end + 1 (nothing not remote
// was deleted). Once it is back, tiering catches up to the leader's
// active segment, franz-go reads every record from offset 0 in order
// and byte-identical, __remote_log_metadata holds each segment once
// with no gap and the bucket one .log per finished segment and nothing
// else, and deleting the topic empties the bucket.
func TestTieredClusterS3(t *testing.T) {
	t.Parallel()
	testenv.NeedsProcess(t, "a 3-broker cluster with ZooKeeper and versitygw")
	pause := 60 * time.Second
	if v := os.Getenv("SLUICE_TIERED_E2E_STORE_PAUSE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SLUICE_TIERED_E2E_STORE_PAUSE=%q: want a positive duration such as 60s", v)
		}
		pause = d
	}
	srv := s3test.Start(t)
	store := tieredS3Store(t, srv)
	const (
		total    = 32 << 20
		localRet = 4 << 20
		segBytes = 1 << 20
		records  = total / 1024
	)
	c := startCluster(t, 3, tieredS3Sets(srv)...)
	const topic = "tiered-s3-cluster"
	c.createTopic(topic, 1, 3, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"local.retention.bytes": kadm.StringPtr(strconv.Itoa(localRet)),
		"segment.bytes":         kadm.StringPtr(strconv.Itoa(segBytes)),
	})
	tp := tiered.TopicIDPartition{TopicID: c.topicID(topic), Topic: topic, Partition: 0}

	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100), kgo.ProducerBatchMaxBytes(segBytes/2))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(from, to int) { produceTieredValues(t, c, cl, from, to, 1024) }
	start := time.Now()
	third := records / 3
	produce(0, third)
	pd, _ := c.partition(topic, 0)
	leader := pd.Leader
	c.waitLong(5*time.Minute, "a remote segment before the store stops", func() bool { return c.latestTiered(leader, topic) >= 0 })

	// The store stops; a third of the records go in meanwhile, in steps
	// spread over the pause, each read back and each followed by the
	// no-deletion-past-the-remote-end check on every broker.
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := true
	defer func() {
		if paused {
			srv.Resume()
		}
	}()
	stopped := time.Now()
	remoteAtPause := c.latestTiered(leader, topic)
	const steps = 8
	step := third / steps
	for k := 0; k < steps; k++ {
		from := third + k*step
		produce(from, from+step)
		c.consumeRange(topic, from, from+step)
		c.checkNothingUntieredDeleted(topic, leader)
		if next := stopped.Add(pause * time.Duration(k+1) / steps); time.Until(next) > 0 {
			time.Sleep(time.Until(next))
		}
	}
	duringPause := steps * step
	remoteInPause := c.latestTiered(leader, topic)
	usage := c.localLogBytes(topic)
	// The stop held tiering back (else the checks above prove nothing):
	// what went in meanwhile is still local on every broker.
	for id, n := range usage {
		if n < int64(duringPause)*1024 {
			t.Fatalf("broker %d holds %d local .log bytes after %d KiB were produced with the store stopped: tiering went on", id, n, duringPause)
		}
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	paused = false
	t.Logf("store stopped %v: %d records (%d MiB) produced and read back meanwhile; remote end %d at the stop, %d before the resume; local .log bytes per broker then %v (local.retention.bytes %d)",
		time.Since(stopped).Round(time.Millisecond), duringPause, duringPause>>10, remoteAtPause, remoteInPause, usage, localRet)

	// The rest goes in with the store back; tiering catches up to the
	// leader's active segment and local logs shrink to the retention.
	from := third + duringPause
	produce(from, records)
	produced := time.Since(start)
	resumed := time.Now()
	bound := int64(localRet + 2*segBytes)
	var latest int64
	c.waitLong(10*time.Minute, "every segment but the active one remote, local logs down to the local retention", func() bool {
		pd, ok := c.partition(topic, 0)
		if !ok || pd.Leader < 0 {
			return false
		}
		leader = pd.Leader
		bases := c.localBases(leader, topic)
		if len(bases) == 0 {
			return false
		}
		latest = c.latestTiered(leader, topic)
		if latest < bases[len(bases)-1]-1 {
			return false
		}
		usage = c.localLogBytes(topic)
		for _, n := range usage {
			if n > bound {
				return false
			}
		}
		return true
	})
	t.Logf("produced %d records (%d MiB) in %v; caught up %v after the last produce: remote end %d, local .log bytes per broker %v (bound %d)",
		records, total>>20, produced.Round(time.Millisecond), time.Since(resumed).Round(time.Millisecond), latest, usage, bound)

	t0 := time.Now()
	c.consumeTiered(topic, records)
	t.Logf("franz-go read %d records from offset 0 in %v", records, time.Since(t0).Round(time.Millisecond))

	// Metadata: every segment finished, once, offset 0 to latest with no
	// gap. Bucket: one .log per start offset, of a finished segment, and
	// no object of another segment.
	segs := c.remoteMetadata(tp)
	var fin []tiered.SegmentMetadata
	for sid, s := range segs {
		if s.State != tiered.CopySegmentFinished {
			t.Errorf("segment %s [%d, %d] left %s", sid, s.StartOffset, s.EndOffset, s.State)
			continue
		}
		fin = append(fin, s)
	}
	slices.SortFunc(fin, func(a, b tiered.SegmentMetadata) int { return int(a.StartOffset - b.StartOffset) })
	if len(fin) == 0 || fin[0].StartOffset != 0 {
		t.Fatalf("finished segments do not start at offset 0: %d of them", len(fin))
	}
	for i := 1; i < len(fin); i++ {
		p, s := fin[i-1], fin[i]
		if s.StartOffset != p.EndOffset+1 {
			t.Errorf("remote segments [%d, %d] then [%d, %d]: a gap or a segment copied twice", p.StartOffset, p.EndOffset, s.StartOffset, s.EndOffset)
		}
	}
	if end := fin[len(fin)-1].EndOffset; end != c.latestTiered(leader, topic) {
		t.Errorf("finished segments end at %d, ListOffsets -5 answers %d", end, latest)
	}
	logs, ids := remoteLogObjects(t, store, "e2e/")
	logIDs := map[string]bool{}
	for startOff, l := range logs {
		if len(l) != 1 {
			t.Errorf("segment at %s is in the bucket %d times: %v", startOff, len(l), l)
		}
		for _, id := range l {
			logIDs[id] = true
			off, err := strconv.ParseInt(startOff, 10, 64)
			if s, ok := segs[id]; !ok || s.State != tiered.CopySegmentFinished || err != nil || s.StartOffset != off {
				t.Errorf("object %s-%s.log has no finished segment at that offset in the metadata", startOff, id)
			}
		}
	}
	for id := range ids {
		if !logIDs[id] {
			t.Errorf("objects of segment %s without its .log (orphan)", id)
		}
	}
	for _, s := range fin {
		if !logIDs[s.SegmentID.String()] {
			t.Errorf("finished segment %s [%d, %d] has no .log object", s.SegmentID, s.StartOffset, s.EndOffset)
		}
	}
	t.Logf("%d finished remote segments, offsets 0..%d, one .log object each", len(fin), latest)

	// Deleting the topic empties the bucket.
	adm, acl := c.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	cancel()
	acl.Close()
	c.waitLong(5*time.Minute, "the bucket empty after the topic's deletion", func() bool {
		left, err := store.List("")
		return err == nil && len(left) == 0
	})
}

// consumeRange reads topic-0 from offset from to to (exclusive) with
// franz-go and checks every record against tieredValue. Bounded by
// progress: two minutes without a record fails.
func (c *testCluster) consumeRange(topic string, from, to int) {
	c.t.Helper()
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(int64(from))}}))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	next, stalled := from, time.Now()
	for next < to && time.Since(stalled) < 2*time.Minute {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if fs.NumRecords() > 0 {
			stalled = time.Now()
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				c.t.Logf("fetch: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if next >= to {
				return
			}
			if r.Offset != int64(next) || string(r.Value) != string(tieredValue(next)) {
				c.t.Fatalf("record at offset %d: %.20q, want offset %d %.20q", r.Offset, r.Value, next, tieredValue(next))
			}
			next++
		})
	}
	if next != to {
		c.t.Fatalf("franz-go read %d of records %d..%d\n%s", next-from, from, to, c.logs())
	}
}

// localBases is the base offsets of topic-0's local segments on broker
// id, ascending (from the .log file names).
func (c *testCluster) localBases(id int32, topic string) []int64 {
	matches, _ := filepath.Glob(filepath.Join(c.brokers[id].dir, topic+"-0", "*.log"))
	var out []int64
	for _, m := range matches {
		if n, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(m), ".log"), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// checkNothingUntieredDeleted fails when a live broker's local log of
// topic-0 starts past the remote end + 1: a segment deleted locally before
// it was remote. The local logs are listed before the remote end is asked
// for, which only grows.
func (c *testCluster) checkNothingUntieredDeleted(topic string, leader int32) {
	c.t.Helper()
	firsts := map[int32]int64{}
	for id, b := range c.brokers {
		if b.cmd == nil {
			continue
		}
		if bases := c.localBases(id, topic); len(bases) > 0 {
			firsts[id] = bases[0]
		}
	}
	remoteEnd := c.latestTiered(leader, topic)
	for id, first := range firsts {
		if first > remoteEnd+1 {
			c.t.Fatalf("broker %d's local log starts at %d, past the remote end %d + 1: a segment not remote was deleted", id, first, remoteEnd)
		}
	}
}
