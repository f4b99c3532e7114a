package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
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
	"github.com/sluice/sluice/tiered"
)

// tieredValue is record i's value: its number then bytes derived from it,
// printable and without a newline (kcat prints one value a line), about
// 1 KiB.
func tieredValue(i int) []byte {
	v := make([]byte, 0, 1024)
	v = fmt.Appendf(v, "%09d:", i)
	x := uint32(i)*2654435761 + 12345
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	for len(v) < 1024 {
		x = x*1664525 + 1013904223
		v = append(v, alphabet[(x>>16)%uint32(len(alphabet))])
	}
	return v
}

// TestTieredCluster is tiered storage on a 3-broker cluster with
// ZooKeeper and a local-directory remote store the brokers share: a
// topic with remote.storage.enable=true and a small local retention
// takes SLUICE_TIERED_E2E_BYTES (default 64 MiB; the figure is
// 2 GiB) at acks=all, its leader SIGKILLed half-way. Then:
//   - every live broker's disk holds about the local retention;
//   - franz-go and kcat read every record from offset 0, in order and
//     byte-identical (the old ones from the remote tier);
//   - __remote_log_metadata (replayed here with Kafka's record format)
//     and the remote dir agree: each segment copied once, no segment left
//     COPY_SEGMENT_STARTED, the finished segments cover offset 0 to the
//     end of what is remote with no gap and none copied twice, the new
//     leader copied segments after the old one died, and no object
//     without a finished segment;
//   - deleting the topic leaves no object behind.
func TestTieredCluster(t *testing.T) {
	t.Parallel()
	testenv.NeedsProcess(t, "a 3-broker cluster with ZooKeeper")
	kcat := need(t, "kcat")
	total := int64(64 << 20)
	if v := os.Getenv("SLUICE_TIERED_E2E_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 4<<20 {
			t.Fatalf("SLUICE_TIERED_E2E_BYTES=%q: want a byte count of at least 4 MiB", v)
		}
		total = n
	}
	localRet := max(total/32, 1<<20) // 64 MiB for 2 GiB, as the issue
	segBytes := localRet / 4
	records := int(total / 1024)
	remoteDir := filepath.Join(t.TempDir(), "remote")
	c := startCluster(t, 3,
		"remote.log.storage.system.enable=true",
		"rsm.config.dir="+remoteDir,
		"remote.log.manager.task.interval.ms=200",
	)
	const topic = "tiered"
	c.createTopic(topic, 1, 3, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"local.retention.bytes": kadm.StringPtr(strconv.FormatInt(localRet, 10)),
		"segment.bytes":         kadm.StringPtr(strconv.FormatInt(segBytes, 10)),
	})
	id := c.topicID(topic)
	tp := tiered.TopicIDPartition{TopicID: id, Topic: topic, Partition: 0}
	t.Logf("producing %d records (%d MiB), local.retention.bytes %d, segment.bytes %d", records, total>>20, localRet, segBytes)

	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100), kgo.ProducerBatchMaxBytes(int32(min(segBytes/2, 1<<20))))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(from, to int) { produceTieredValues(t, c, cl, from, to, 2048) }
	start := time.Now()
	produce(0, records/2)

	// Half-way, once something is remote, the leader dies.
	pd, _ := c.partition(topic, 0)
	oldLeader := pd.Leader
	c.waitLong(5*time.Minute, "a remote segment before the leader is killed", func() bool { return c.latestTiered(oldLeader, topic) >= 0 })
	c.brokers[oldLeader].kill()
	t.Logf("SIGKILLed leader %d after %d records; latest tiered offset then unknown to the test", oldLeader, records/2)
	c.waitFor(60*time.Second, "a new leader", func(*kadm.Client) bool {
		pd, ok := c.partition(topic, 0)
		return ok && pd.Leader >= 0 && pd.Leader != oldLeader
	})
	produce(records/2, records)
	produced := time.Since(start)
	pd, _ = c.partition(topic, 0)
	newLeader := pd.Leader

	// Tiering catches up: every live broker keeps about the local
	// retention (one segment of slack each side of the cut).
	bound := localRet + 2*segBytes
	var usage map[int32]int64
	settle := time.Now()
	c.waitLong(10*time.Minute, "local logs down to the local retention", func() bool {
		usage = c.localLogBytes(topic)
		for _, n := range usage {
			if n > bound {
				return false
			}
		}
		return len(usage) == 2
	})
	t.Logf("produced %d MiB in %v; local .log bytes per live broker %v (local.retention.bytes %d, bound %d) %v after the last produce",
		total>>20, produced.Round(time.Millisecond), usage, localRet, bound, time.Since(settle).Round(time.Millisecond))
	remoteBytes := dirBytes(t, remoteDir)
	t.Logf("remote dir holds %d MiB", remoteBytes>>20)

	// Every record from offset 0, franz-go then kcat.
	t0 := time.Now()
	c.consumeTiered(topic, records)
	t.Logf("franz-go read %d records from offset 0 in %v", records, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	kcatStreamTiered(t, kcat, strings.Join(c.seeds(), ","), topic, records)
	t.Logf("kcat read %d records from offset 0 in %v", records, time.Since(t0).Round(time.Millisecond))

	// The metadata and the remote dir agree, with no copy twice.
	segs := c.remoteMetadata(tp)
	checkRemoteSegments(t, segs, oldLeader, newLeader, c.latestTiered(newLeader, topic))
	objs := remoteObjects(t, remoteDir)
	for sid := range objs {
		if s, ok := segs[sid]; !ok || s.State != tiered.CopySegmentFinished {
			t.Errorf("remote object of segment %s has no finished segment in the metadata (orphan)", sid)
		}
	}
	for sid, s := range segs {
		if !objs[sid] {
			t.Errorf("finished segment %s [%d, %d] has no .log object", sid, s.StartOffset, s.EndOffset)
		}
	}

	// sluice topic describe shows the split: the local log starts past
	// the remote one, both sizes, nothing left to tier but the active
	// segment.
	desc := c.sluiceCLI("topic", "describe", topic)
	row := tieredRow(t, desc)
	localStart, _ := strconv.ParseInt(row["LOCAL-START"], 10, 64)
	if row["REMOTE-START"] != "0" || localStart <= 0 || row["TIERED-END"] != strconv.FormatInt(c.latestTiered(newLeader, topic), 10) ||
		row["LOG-END"] != strconv.Itoa(records) || row["REMOTE-SIZE"] == "-" || row["LOCAL-SIZE"] == "-" {
		t.Errorf("sluice topic describe: partition 0 %v\n%s", row, desc)
	}
	t.Logf("sluice topic describe:\n%s", desc)

	// The old leader comes back below the leader's local log start and
	// catches up from there, keeping about the local retention too.
	c.brokers[oldLeader].restart()
	c.waitISR(topic, []int32{1, 2, 3}, 5*time.Minute)
	c.waitLong(5*time.Minute, "the old leader's local log down to the local retention", func() bool {
		return c.localLogBytes(topic)[oldLeader] <= bound
	})

	// Deleting the topic deletes every object.
	adm, acl := c.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	cancel()
	acl.Close()
	c.waitLong(5*time.Minute, "no remote object after the topic's deletion", func() bool { return len(remoteObjects(t, remoteDir)) == 0 && dirBytes(t, remoteDir) == 0 })
}

// waitLong is retry with a bound of its own, for waits on tiering work
// that grows with the bytes produced. Every wait is bounded; none asserts
// on how long it took.
func (c *testCluster) waitLong(within time.Duration, what string, try func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !try() {
		if time.Now().After(deadline) {
			c.t.Fatalf("not so after %v: %s\n%s", within, what, c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tieredRow parses the partition 0 row of the tiering table in sluice
// topic describe's output, by column name.
func tieredRow(t *testing.T, out string) map[string]string {
	t.Helper()
	var header []string
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "PARTITION" && slices.Contains(f, "LOCAL-START") {
			header = f
			continue
		}
		if header != nil && len(f) == len(header) && f[0] == "0" {
			row := map[string]string{}
			for i, h := range header {
				row[h] = f[i]
			}
			return row
		}
	}
	t.Fatalf("no tiering table in sluice topic describe:\n%s", out)
	return nil
}

// kcatStreamTiered reads topic-0 from the beginning to its end with kcat and
// checks each value against tieredValue as it streams (the output of a
// 2 GiB run is not held in memory). kcat runs at most 30 minutes.
func kcatStreamTiered(t *testing.T, kcat, brokers, topic string, records int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-C", "-b", brokers, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n, bad := 0, ""
	for sc.Scan() {
		if bad == "" && !bytes.Equal(sc.Bytes(), tieredValue(n)) {
			bad = fmt.Sprintf("kcat record %d: %.20q, want %.20q", n, sc.Bytes(), tieredValue(n))
		}
		n++
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, stderr.String())
	}
	if bad != "" {
		t.Fatal(bad)
	}
	if n != records {
		t.Fatalf("kcat read %d records, want %d", n, records)
	}
}

// latestTiered asks topic-0's leader (kgo routes ListOffsets there; id
// is the broker the test expects to lead, for messages) for ListOffsets
// -5 (latest tiered, v9): -1 while nothing is remote. It retries for up
// to 30s through leadership changes.
func (c *testCluster) latestTiered(id int32, topic string) int64 {
	c.t.Helper()
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -5, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		switch {
		case err != nil:
			last = err
		case len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1:
			last = fmt.Errorf("answer for %d topics", len(resp.Topics))
		case resp.Topics[0].Partitions[0].ErrorCode != 0:
			last = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		default:
			return resp.Topics[0].Partitions[0].Offset
		}
	}
	c.t.Fatalf("ListOffsets -5 of %s-0 (leader expected: %d): %v", topic, id, last)
	return -1
}

// localLogBytes is the size of topic-0's .log files on each live broker.
func (c *testCluster) localLogBytes(topic string) map[int32]int64 {
	out := map[int32]int64{}
	for id, b := range c.brokers {
		if b.cmd == nil {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(b.dir, topic+"-0", "*.log"))
		var n int64
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil {
				n += fi.Size()
			}
		}
		out[id] = n
	}
	return out
}

// consumeTiered reads topic-0 from offset 0 with franz-go and checks
// every record against tieredValue.
func (c *testCluster) consumeTiered(topic string, records int) {
	c.t.Helper()
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	// Bounded by progress: two minutes without a record fails.
	next, stalled := 0, time.Now()
	for next < records && time.Since(stalled) < 2*time.Minute {
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
			if r.Offset != int64(next) || string(r.Value) != string(tieredValue(next)) {
				c.t.Fatalf("record at offset %d: %.20q, want offset %d %.20q", r.Offset, r.Value, next, tieredValue(next))
			}
			next++
		})
	}
	if next != records {
		c.t.Fatalf("franz-go read %d of %d records\n%s", next, records, c.logs())
	}
}

// remoteMetadata replays __remote_log_metadata with Kafka's record format
// and returns tp's segments in their latest state; it fails the test on a
// segment added twice or an undecodable record.
func (c *testCluster) remoteMetadata(tp tiered.TopicIDPartition) map[string]tiered.SegmentMetadata {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ends kadm.ListedOffsets
	c.retry("the end offsets of "+tiered.RemoteLogMetadataTopic, func() bool {
		adm, acl := c.admin()
		defer acl.Close()
		var err error
		ends, err = adm.ListEndOffsets(ctx, tiered.RemoteLogMetadataTopic)
		if err != nil {
			c.t.Logf("list end offsets of %s: %v", tiered.RemoteLogMetadataTopic, err)
		}
		return err == nil
	})
	offsets := map[int32]kgo.Offset{}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			offsets[o.Partition] = kgo.NewOffset().At(0)
			left[o.Partition] = o.Offset
		}
	})
	if len(offsets) == 0 {
		c.t.Fatalf("%s is empty", tiered.RemoteLogMetadataTopic)
	}
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tiered.RemoteLogMetadataTopic: offsets}))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	segs := map[string]tiered.SegmentMetadata{}
	for len(left) > 0 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
			rec, err := tiered.DecodeMetadataRecord(r.Value)
			if err != nil {
				c.t.Fatalf("%s-%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
			}
			s := rec.Segment
			switch rec.Kind {
			case tiered.MetadataSegmentKey:
				if s.Partition != tp {
					return
				}
				if _, dup := segs[s.SegmentID.String()]; dup {
					c.t.Fatalf("segment %s added twice", s.SegmentID)
				}
				segs[s.SegmentID.String()] = s
			case tiered.MetadataUpdateKey:
				cur, ok := segs[s.SegmentID.String()]
				if s.Partition != tp || !ok {
					return
				}
				cur.State = s.State
				if s.State == tiered.CopySegmentFinished {
					cur.BrokerID = s.BrokerID
				}
				segs[s.SegmentID.String()] = cur
			}
		})
	}
	if len(left) > 0 {
		c.t.Fatalf("did not read %s to its end: %v left", tiered.RemoteLogMetadataTopic, left)
	}
	for sid, s := range segs {
		if s.State == tiered.DeleteSegmentFinished {
			delete(segs, sid)
		}
	}
	return segs
}

// checkRemoteSegments checks the finished segments: none left started,
// offset 0 to latest covered with no gap and none copied twice, and both
// leaders among the copiers.
func checkRemoteSegments(t *testing.T, segs map[string]tiered.SegmentMetadata, oldLeader, newLeader int32, latest int64) {
	t.Helper()
	var fin []tiered.SegmentMetadata
	copiers := map[int32]int{}
	for sid, s := range segs {
		switch s.State {
		case tiered.CopySegmentFinished:
			fin = append(fin, s)
			copiers[s.BrokerID]++
		default:
			t.Errorf("segment %s [%d, %d] left %s", sid, s.StartOffset, s.EndOffset, s.State)
		}
	}
	slices.SortFunc(fin, func(a, b tiered.SegmentMetadata) int { return int(a.StartOffset - b.StartOffset) })
	if len(fin) == 0 || fin[0].StartOffset != 0 {
		t.Fatalf("finished segments do not start at offset 0: %d of them", len(fin))
	}
	for i := 1; i < len(fin); i++ {
		p, s := fin[i-1], fin[i]
		if s.StartOffset <= p.StartOffset || s.EndOffset <= p.EndOffset {
			t.Errorf("segment [%d, %d] copied again as [%d, %d]", p.StartOffset, p.EndOffset, s.StartOffset, s.EndOffset)
		}
		if s.StartOffset > p.EndOffset+1 {
			t.Errorf("gap in the remote tier between %d and %d", p.EndOffset, s.StartOffset)
		}
	}
	if end := fin[len(fin)-1].EndOffset; end != latest {
		t.Errorf("finished segments end at %d, ListOffsets -5 answers %d", end, latest)
	}
	// The leader may move again after the failover (the controller
	// moved too): some segment by another broker is what counts.
	if copiers[oldLeader] == 0 || len(copiers) < 2 {
		t.Errorf("segments copied by broker: %v; want some by the old leader %d and some by a new one (%d when the test looked)", copiers, oldLeader, newLeader)
	}
	t.Logf("%d finished remote segments, offsets 0..%d, copied by broker %v", len(fin), latest, copiers)
}

// remoteObjects lists the segment ids with a .log object under the
// remote dir; a .tmp object fails the test.
func remoteObjects(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, ".tmp") {
			t.Errorf("temporary object left: %s", path)
		}
		if base, ok := strings.CutSuffix(name, ".log"); ok {
			if _, sid, ok := strings.Cut(base, "-"); ok {
				out[sid] = true
			}
		}
		return nil
	})
	return out
}

// dirBytes is the size of every file under root.
func dirBytes(t *testing.T, root string) int64 {
	var n int64
	filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// produceTieredValues produces the records from..to-1 of tieredValue
// through cl at its acks, chunk records per ProduceSync; a failure ends
// the test with the cluster's logs.
func produceTieredValues(t *testing.T, c *testCluster, cl *kgo.Client, from, to, chunk int) {
	t.Helper()
	for i := from; i < to; i += chunk {
		var recs []*kgo.Record
		for j := i; j < min(i+chunk, to); j++ {
			recs = append(recs, &kgo.Record{Value: tieredValue(j)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce records %d..: %v\n%s", i, err, c.logs())
		}
	}
}
