package e2e

// The offsets coordinator's load time before and after the log cleaner
// compacted __consumer_offsets: a new coordinator replays its partition
// from the log start, so before compaction it reads every commit ever
// made, after it about one record per live key.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetsLoadAfterCompaction: one group commits 1,000,000 offsets
// (commitRounds requests of commitParts partitions each) to a
// one-partition, RF 3 __consumer_offsets with 1 MiB segments and the
// cleaner off. The coordinator is SIGKILLed and the new one's load is
// read from its log. The brokers are then restarted one by one with the
// cleaner on, each cleans its replica, the coordinator is SIGKILLed again
// and the next load is read. Both new coordinators serve every committed
// offset; the load after compaction replays under a tenth of the records
// of the one before. The load times are logged, not asserted.
func TestOffsetsLoadAfterCompaction(t *testing.T) {
	t.Parallel()
	const (
		grp          = "load-group"
		topic        = "load-topic" // offsets need no topic: commits are not checked against metadata
		commitParts  = 1000
		commitRounds = 1000
		total        = commitParts * commitRounds
	)
	c := startCluster(t, 3,
		"offsets.topic.num.partitions=1", "offsets.topic.replication.factor=3",
		"offsets.topic.segment.bytes=1048576", "log.cleaner.enable=false")

	// Round r commits offset r*commitParts+p to partition p: the final
	// offsets are distinct, and a stale round would show.
	commitRound := func(ctx context.Context, cl *kgo.Client, r int) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = grp, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rt.Partitions = make([]kmsg.OffsetCommitRequestTopicPartition, commitParts)
		for p := range rt.Partitions {
			rp := &rt.Partitions[p]
			rp.Default()
			rp.Partition, rp.Offset = int32(p), int64(r*commitParts+p)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("round %d, partition %d: %w", r, p.Partition, err)
				}
			}
		}
		return nil
	}
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	// The first round alone (it creates __consumer_offsets), the middle
	// ones from a few goroutines (the coordinator serializes a group's
	// commits anyway; this keeps requests in flight), the last one alone,
	// so it is the latest of every key.
	if err := commitRound(ctx, cl, 0); err != nil {
		t.Fatalf("%v\n%s", err, c.logs())
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = 1
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				r := next
				next++
				stop := firstErr != nil
				mu.Unlock()
				if stop || r >= commitRounds-1 {
					return
				}
				if err := commitRound(ctx, cl, r); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("commit: %v\n%s", firstErr, c.logs())
	}
	if err := commitRound(ctx, cl, commitRounds-1); err != nil {
		t.Fatalf("%v\n%s", err, c.logs())
	}
	cl.Close()
	t.Logf("committed %d offsets (%d requests of %d partitions) in %v", total, commitRounds, commitParts, time.Since(start).Round(time.Millisecond))

	want := make(map[int32]int64, commitParts)
	for p := range commitParts {
		want[int32(p)] = int64((commitRounds-1)*commitParts + p)
	}
	before := c.killCoordinatorAndLoad(grp, topic, want)
	t.Logf("load before compaction: broker %d replayed %d records (%d bytes) in %v, all offsets served %v after the kill: %s",
		before.broker, before.records, before.bytes, before.took, before.served.Round(time.Millisecond), before.line)
	if before.records < total {
		t.Fatalf("the load before compaction replayed %d records, want at least the %d commits", before.records, total)
	}

	// Restart every broker with the cleaner on: the killed coordinator
	// first, then the others one at a time, so the partition always has a
	// leader.
	// A low ratio: a replica whose first round was bounded by a stale
	// high watermark (a SIGKILLed broker's checkpoint) is dirty again past
	// it, and a second round cleans the rest.
	cleanerSets := []string{"log.cleaner.enable=true", "log.cleaner.backoff.ms=200", "log.cleaner.min.cleanable.ratio=0.1"}
	restartOrder := []int32{before.killed}
	for id := int32(1); id <= 3; id++ {
		if id != before.killed {
			restartOrder = append(restartOrder, id)
		}
	}
	for _, id := range restartOrder {
		b := c.brokers[id]
		if err := b.stop(); err != nil {
			t.Fatalf("stop broker %d: %v", id, err)
		}
		for _, s := range cleanerSets {
			b.args = append(b.args, "--set", s)
		}
		b.restart()
		c.waitBrokers(3, 60*time.Second)
		c.waitFor(60*time.Second, fmt.Sprintf("__consumer_offsets-0 with a full ISR after broker %d's restart", id), func(*kadm.Client) bool {
			pd, ok := c.partition("__consumer_offsets", 0)
			return ok && pd.Leader >= 0 && len(pd.ISR) == 3
		})
	}
	// Every replica is cleaned by its own broker: wait until each one
	// cleaned up to near the end (all but the active segment, about 15k
	// records of 1 MiB, and what follows the high watermark it saw).
	cleanedStart := time.Now()
	for id := int32(1); id <= 3; id++ {
		b := c.brokers[id]
		deadline := time.Now().Add(60 * time.Second)
		for {
			to := cleanedTo(b.logText())
			if to >= int64(total)-50_000 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker %d cleaned __consumer_offsets-0 only to %d of %d within 60s\n%s", id, to, total, b.logText())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("all three replicas of __consumer_offsets-0 cleaned %v after the last restart", time.Since(cleanedStart).Round(time.Millisecond))

	after := c.killCoordinatorAndLoad(grp, topic, want)
	t.Logf("load after compaction: broker %d replayed %d records (%d bytes) in %v, all offsets served %v after the kill: %s",
		after.broker, after.records, after.bytes, after.took, after.served.Round(time.Millisecond), after.line)
	t.Logf("offsets load before compaction: %d records in %v; after: %d records in %v", before.records, before.took, after.records, after.took)
	if after.records*10 >= before.records {
		t.Errorf("the load after compaction replayed %d records, want under a tenth of the %d before", after.records, before.records)
	}
	if after.records < commitParts {
		t.Errorf("the load after compaction replayed %d records, fewer than the %d live keys", after.records, commitParts)
	}
}

// coordinatorLoad is one new coordinator's "coordlog: loaded partition"
// line for __consumer_offsets, after the previous one was killed.
type coordinatorLoad struct {
	killed, broker int32
	took           time.Duration // the load line's
	served         time.Duration // from the kill to every offset served
	records, bytes int64
	line           string
}

// killCoordinatorAndLoad SIGKILLs grp's coordinator, waits until a new
// coordinator serves exactly want as grp's committed offsets of topic,
// and returns the load line that coordinator logged after the kill.
func (c *testCluster) killCoordinatorAndLoad(grp, topic string, want map[int32]int64) coordinatorLoad {
	t := c.t
	t.Helper()
	adm, acl := c.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	coords := adm.FindGroupCoordinators(ctx, grp)
	cancel()
	acl.Close()
	if coords[grp].Err != nil {
		t.Fatalf("find coordinator of %s: %v", grp, coords[grp].Err)
	}
	killed := coords[grp].NodeID
	// Only what the survivors log after the kill counts.
	marks := map[int32]int{}
	for id, b := range c.brokers {
		marks[id] = len(b.logText())
	}
	t.Logf("SIGKILL broker %d, the coordinator of %s", killed, grp)
	killedAt := time.Now()
	c.brokers[killed].kill()
	c.waitFor(90*time.Second, fmt.Sprintf("all %d committed offsets of %s served by a new coordinator", len(want), grp), func(adm *kadm.Client) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := adm.FetchOffsets(ctx, grp)
		if err != nil || got.Error() != nil || len(got[topic]) != len(want) {
			return false
		}
		for p, o := range want {
			if r, ok := got.Lookup(topic, p); !ok || r.At != o {
				return false
			}
		}
		return true
	})
	served := time.Since(killedAt)
	for id, b := range c.brokers {
		if id == killed || b.cmd == nil {
			continue
		}
		line := loadLine(b.logText()[marks[id]:])
		if line == "" {
			continue
		}
		l := coordinatorLoad{killed: killed, broker: id, served: served, line: line}
		var err error
		l.took, err = time.ParseDuration(logField(line, "took"))
		if err == nil {
			l.records, err = strconv.ParseInt(logField(line, "records"), 10, 64)
		}
		if err == nil {
			l.bytes, err = strconv.ParseInt(logField(line, "bytes"), 10, 64)
		}
		if err != nil {
			t.Fatalf("broker %d's load line %q: %v", id, line, err)
		}
		return l
	}
	t.Fatalf("no survivor of broker %d logged a load of __consumer_offsets\n%s", killed, c.logs())
	return coordinatorLoad{}
}

// loadLine returns the first "coordlog: loaded partition" line of
// __consumer_offsets in logs, "" when there is none.
func loadLine(logs string) string {
	for _, l := range lines(logs) {
		if strings.Contains(l, "coordlog: loaded partition") && strings.Contains(l, "topic=__consumer_offsets") {
			return l
		}
	}
	return ""
}

// cleanedTo returns the highest offset a "cleaner: cleaned log" line of
// __consumer_offsets in logs cleaned to, -1 when there is none.
func cleanedTo(logs string) int64 {
	to := int64(-1)
	for _, l := range lines(logs) {
		if strings.Contains(l, "cleaner: cleaned log") && strings.Contains(l, "topic=__consumer_offsets") {
			if n, err := strconv.ParseInt(logField(l, "to"), 10, 64); err == nil && n > to {
				to = n
			}
		}
	}
	return to
}

// logField returns the value of key in a slog text line, "" when absent.
func logField(line, key string) string {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(key) + `=("(?:[^"\\]|\\.)*"|\S*)`).FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	if s, err := strconv.Unquote(m[1]); err == nil {
		return s
	}
	return m[1]
}
