package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/testenv"
)

// TestTieredLogStartSurvivesLeaderChange (KIP-405) on a 3-broker cluster
// with a shared local-directory remote store: DeleteRecords moves the log
// start offset of a tiered topic below the leader's local log start, into
// the remote tier. Every replica keeps it in its
// log-start-offset-checkpoint (the followers from the leader's fetch
// answers); once the leader is SIGKILLed, the new leader answers the same
// ListOffsets earliest, refuses a fetch below it OFFSET_OUT_OF_RANGE, and
// its remote log manager deletes the remote segments wholly below it.
// Before, only the old leader's memory held that start: the new leader
// answered the old remote start and served the deleted records.
func TestTieredLogStartSurvivesLeaderChange(t *testing.T) {
	t.Parallel()
	testenv.NeedsProcess(t, "a 3-broker cluster with ZooKeeper")
	remoteDir := filepath.Join(t.TempDir(), "remote")
	c := startCluster(t, 3, tieredSets(remoteDir)...)
	const topic = "tierstart"
	c.createTopic(topic, 1, 3, smallTieredTopic())
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 1024; i += 64 {
		var recs []*kgo.Record
		for j := i; j < i+64; j++ {
			recs = append(recs, &kgo.Record{Value: tieredValue(j)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce: %v\n%s", err, c.logs())
		}
	}
	c.waitLong(2*time.Minute, "the leader's local log start past 300", func() bool {
		return listOffsetV8(t, cl, topic, -4) > 300
	})
	local := listOffsetV8(t, cl, topic, -4)
	start := local / 2

	pd, _ := c.partition(topic, 0)
	oldLeader := pd.Leader
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	rs, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: start}}})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.Lookup(topic, 0); r.Err != nil || r.LowWatermark != start {
		t.Fatalf("delete records before %d: low watermark %d, %v", start, r.LowWatermark, r.Err)
	}
	if got := listOffsetV8(t, cl, topic, -2); got != start {
		t.Fatalf("earliest on the leader %d, want the log start %d", got, start)
	}
	for id := range c.brokers {
		c.waitLong(time.Minute, fmt.Sprintf("broker %d to checkpoint the log start %d", id, start), func() bool {
			return checkpointedLogStart(c.brokers[id].dir, topic) == start
		})
	}

	c.brokers[oldLeader].kill()
	c.waitFor(60*time.Second, "a new leader", func(*kadm.Client) bool {
		pd, ok := c.partition(topic, 0)
		return ok && pd.Leader >= 0 && pd.Leader != oldLeader
	})
	pd, _ = c.partition(topic, 0)
	newLeader := pd.Leader
	cl2, err := c.newClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	c.waitLong(time.Minute, "the new leader to answer ListOffsets earliest", func() bool { return listOffsetV8(t, cl2, topic, -2) >= 0 })
	if got := listOffsetV8(t, cl2, topic, -2); got != start {
		t.Fatalf("earliest on the new leader %d, want the log start %d the old leader had", got, start)
	}
	if code := c.fetchCodeAt(newLeader, topic, start-1); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the log start from the new leader: code %d, want OFFSET_OUT_OF_RANGE", code)
	}
	if code := c.fetchCodeAt(newLeader, topic, start); code != 0 {
		t.Fatalf("fetch at the log start from the new leader: code %d", code)
	}
	c.waitLong(2*time.Minute, "the new leader to delete the remote segments wholly below the log start", func() bool {
		starts := remoteSegmentStarts(t, remoteDir)
		for i := 0; i+1 < len(starts); i++ {
			if starts[i+1] <= start {
				return false // starts[i] ends below start
			}
		}
		return len(starts) > 0
	})
	if got := listOffsetV8(t, cl2, topic, -2); got != start {
		t.Fatalf("earliest on the new leader after its remote retention %d, want %d", got, start)
	}
}

// checkpointedLogStart reads topic-0's entry of log-start-offset-checkpoint
// in the log dir dir; -1 when there is none.
func checkpointedLogStart(dir, topic string) int64 {
	f, err := os.Open(filepath.Join(dir, "log-start-offset-checkpoint"))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 3 && fs[0] == topic && fs[1] == "0" {
			n, err := strconv.ParseInt(fs[2], 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// remoteSegmentStarts lists the start offsets of the remote .log objects
// under root (named <start offset>-<segment id>.log), ascending.
func remoteSegmentStarts(t *testing.T, root string) []int64 {
	t.Helper()
	var out []int64
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if base, ok := strings.CutSuffix(d.Name(), ".log"); ok {
			if s, _, ok := strings.Cut(base, "-"); ok {
				if n, err := strconv.ParseInt(s, 10, 64); err == nil {
					out = append(out, n)
				}
			}
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// fetchCodeAt fetches topic-0 at offset from broker id as a consumer and
// returns the partition's error code (fetchCodeVia).
func (c *testCluster) fetchCodeAt(id int32, topic string, offset int64) int16 {
	c.t.Helper()
	return fetchCodeVia(c.t, func(req kmsg.Request) kmsg.Response { return c.requestTo(id, req) }, topic, c.topicID(topic), offset)
}

// fetchCodeVia fetches topic-0 (id topicID) at offset as a consumer
// through send and returns the partition's error code, retrying a remote
// read still in progress (no records, no error) a bounded number of
// times.
func fetchCodeVia(t *testing.T, send func(kmsg.Request) kmsg.Response, topic string, topicID [16]byte, offset int64) int16 {
	t.Helper()
	for i := 0; ; i++ {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := send(req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch answer for %d topics", len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) > 0 || i == 100 {
			return p.ErrorCode
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTieredLogStartSurvivesSIGKILL (KIP-405) on a single node: the log
// start offset DeleteRecords moved below the local log start of a tiered
// topic is durable when DeleteRecords answers: after a SIGKILL and a
// restart ListOffsets earliest answers it, a fetch below it is
// OFFSET_OUT_OF_RANGE, and the remote segments wholly below it are
// deleted.
func TestTieredLogStartSurvivesSIGKILL(t *testing.T) {
	testenv.NeedsProcess(t, "a sluice broker")
	remoteDir := filepath.Join(t.TempDir(), "remote")
	b := startBroker(t, t.TempDir(), tieredSets(remoteDir)...)
	const topic = "tierkill"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cl.Close() }()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	res, err := adm.CreateTopic(ctx, 1, 1, smallTieredTopic(), topic)
	cancel()
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	for i := 0; i < 1024; i += 64 {
		var recs []*kgo.Record
		for j := i; j < i+64; j++ {
			recs = append(recs, &kgo.Record{Value: tieredValue(j)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce: %v\n%s", err, b.logText())
		}
	}
	waitUntil(t, 2*time.Minute, "the local log start past 300", func() bool { return listOffsetV8(t, cl, topic, -4) > 300 })
	start := listOffsetV8(t, cl, topic, -4) / 2
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	rs, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: start}}})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.Lookup(topic, 0); r.Err != nil || r.LowWatermark != start {
		t.Fatalf("delete records before %d: low watermark %d, %v", start, r.LowWatermark, r.Err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	td, err := adm.ListTopics(ctx, topic)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	id := td[topic].ID
	cl.Close()

	b.kill()
	b.restart()
	cl, err = kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, time.Minute, "the restarted broker to answer ListOffsets earliest", func() bool { return listOffsetV8(t, cl, topic, -2) >= 0 })
	if got := listOffsetV8(t, cl, topic, -2); got != start {
		t.Fatalf("earliest after SIGKILL and restart %d, want the log start %d", got, start)
	}
	send := func(req kmsg.Request) kmsg.Response {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := cl.Request(ctx, req)
		if err != nil {
			t.Fatalf("%T: %v", req, err)
		}
		return resp
	}
	if code := fetchCodeVia(t, send, topic, id, start-1); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the log start after the restart: code %d, want OFFSET_OUT_OF_RANGE", code)
	}
	if code := fetchCodeVia(t, send, topic, id, start); code != 0 {
		t.Fatalf("fetch at the log start after the restart: code %d", code)
	}
	waitUntil(t, 2*time.Minute, "the remote segments wholly below the log start deleted", func() bool {
		starts := remoteSegmentStarts(t, remoteDir)
		for i := 0; i+1 < len(starts); i++ {
			if starts[i+1] <= start {
				return false
			}
		}
		return len(starts) > 0
	})
}

// waitUntil retries try every 200 ms for at most within (bounded; it
// asserts nothing about how long it took).
func waitUntil(t *testing.T, within time.Duration, what string, try func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !try() {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v: %s", within, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
