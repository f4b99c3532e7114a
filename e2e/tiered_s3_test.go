package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/s3test"
	"github.com/sluice/sluice/tiered"
)

// Tiered storage on a real S3-compatible store: Versity's S3 gateway over
// a temp dir (internal/s3test), the broker the built binary.

const tieredS3Bucket = "sluice-tiered"

// tieredS3Sets are the broker keys of tiered storage on srv: the task runs
// every 200 ms, a store call gives up after 2 s.
func tieredS3Sets(srv *s3test.Server, extra ...string) []string {
	return append([]string{
		"remote.log.storage.system.enable=true",
		"remote.log.storage.backend=s3",
		"remote.log.manager.task.interval.ms=200",
		"rsm.config.storage.s3.bucket.name=" + tieredS3Bucket,
		"rsm.config.storage.s3.endpoint.url=" + srv.Endpoint(),
		"rsm.config.storage.s3.path.style.access.enabled=true",
		"rsm.config.storage.aws.access.key.id=" + s3test.Access,
		"rsm.config.storage.aws.secret.access.key=" + s3test.Secret,
		"rsm.config.storage.s3.api.call.timeout=2000",
		"rsm.config.storage.s3.multipart.upload.part.size=5242880",
		"rsm.config.key.prefix=e2e/",
	}, extra...)
}

// tieredS3Store returns a client of the test's bucket, creating it.
func tieredS3Store(t *testing.T, srv *s3test.Server) *tiered.S3 {
	t.Helper()
	c, err := tiered.S3ConfigOf(map[string]string{
		tiered.S3KeyBucket: tieredS3Bucket, tiered.S3KeyEndpoint: srv.Endpoint(), tiered.S3KeyPathStyle: "true",
		tiered.S3KeyAccessKeyID: s3test.Access, tiered.S3KeySecretAccessKey: s3test.Secret,
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tiered.NewS3(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(); err != nil {
		t.Fatal(err)
	}
	return s
}

// tieredS3Value is record i: it names i and is padded to size bytes.
func tieredS3Value(i, size int) []byte {
	v := fmt.Sprintf("s3-%09d/", i)
	return []byte(v + strings.Repeat("z", size-len(v)))
}

func produceValues(t *testing.T, addr, topic string, from, to, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < to; i++ {
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: tieredS3Value(i, size)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// consumeValues reads topic-0 from offset 0 with franz-go until n records
// and checks each, in order, byte for byte.
func consumeValues(t *testing.T, addr, topic string, n, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	next := 0
	for next < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", next, n)
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !kerr.IsRetriable(err) {
				t.Fatalf("fetch: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(next) || !bytes.Equal(r.Value, tieredS3Value(next, size)) {
				t.Fatalf("record at offset %d (want %d): %.20q", r.Offset, next, r.Value)
			}
			next++
		})
	}
}

// listOffset answers ListOffsets v9 for topic-0 at ts (-2 earliest, -4
// earliest local, -5 latest tiered).
func listOffset(t *testing.T, cl *kgo.Client, topic string, ts int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 9
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets %d: %v", ts, kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// fetchAt fetches topic-0 at offset once and returns the error code and
// record bytes.
func fetchAt(t *testing.T, cl *kgo.Client, topic string, offset int64) (int16, int) {
	t.Helper()
	tds, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, tds[topic].Err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, tds[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, len(p.RecordBatches)
}

// waitTiered polls cond every 100 ms, at most 1200 times (a loaded machine),
// and fails with what when it never holds.
func waitTiered(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1200; i++ {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// waitBroker is waitTiered with the broker's log on failure.
func waitBroker(t *testing.T, b *brokerProc, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1200; i++ {
		if cond() {
			t.Logf("%s: after %d polls", what, i)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("never: %s\nbroker log:\n%s", what, b.logText())
}

func metricValue(t *testing.T, b *brokerProc, name string) float64 {
	t.Helper()
	fams, err := scrapeMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := gaugeOrCounter(fams, name) // the topic="" series: all topics
	return v
}

// remoteLogObjects returns, per start offset, the segment ids of the .log
// objects in the bucket under prefix, and the segment ids of every
// object.
func remoteLogObjects(t *testing.T, s *tiered.S3, prefix string) (logs map[string][]string, ids map[string]bool) {
	t.Helper()
	keys, err := s.List(prefix)
	if err != nil {
		t.Fatal(err)
	}
	logs, ids = map[string][]string{}, map[string]bool{}
	for _, k := range keys {
		name := k[strings.LastIndexByte(k, '/')+1:]
		start, rest, ok := strings.Cut(name, "-")
		if !ok {
			t.Fatalf("object %s is not named <start>-<id>.<suffix>", k)
		}
		id, suffix, _ := strings.Cut(rest, ".")
		ids[id] = true
		if suffix == "log" {
			logs[start] = append(logs[start], id)
		}
	}
	return logs, ids
}

// TestTieredS3: a topic with a small local retention tiers its segments
// to the S3 store and is consumed from offset 0 by franz-go and kcat,
// byte-identical and in order. With the store stopped (SIGSTOP), copies
// fail and are retried with backoff, local retention deletes nothing that
// is not remote, produce and fetch of local data go on, and a fetch of
// remote data answers KAFKA_STORAGE_ERROR (retriable) until the store is
// back, when tiering resumes and everything is read again. Deleting the
// topic leaves no object in the bucket. The secret key never reaches the
// broker's log.
func TestTieredS3(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	store := tieredS3Store(t, srv)
	// No cache: every remote fetch reads the store.
	b := startBroker(t, t.TempDir(), tieredS3Sets(srv, "remote.log.index.file.cache.total.size.bytes=1", "remote.fetch.max.wait.ms=300")...)
	const topic, size, n = "tiered-s3", 512, 4000
	adm := kadm.NewClient(mustKgo(t, b.addr))
	res, err := adm.CreateTopic(context.Background(), 1, 1, map[string]*string{
		"segment.bytes": kadm.StringPtr("131072"), "local.retention.bytes": kadm.StringPtr("262144"), "remote.storage.enable": kadm.StringPtr("true"),
	}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	produceValues(t, b.addr, topic, 0, n, size)
	cl := mustKgo(t, b.addr)
	waitBroker(t, b, "segments tiered and deleted locally", func() bool {
		return listOffset(t, cl, topic, -4) > 0 && listOffset(t, cl, topic, -5) >= listOffset(t, cl, topic, -4)-1
	})
	if earliest := listOffset(t, cl, topic, -2); earliest != 0 {
		t.Fatalf("earliest offset %d, want 0 (remote)", earliest)
	}
	logs, _ := remoteLogObjects(t, store, "e2e/")
	if len(logs) < 2 {
		t.Fatalf("%d remote segments in the bucket", len(logs))
	}
	consumeValues(t, b.addr, topic, n, size)

	if kcat := lookKcat(t); kcat != "" {
		out, stderr, err := run(t, 2*time.Minute, "", kcat, "-C", "-b", b.addr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %s\n")
		if err != nil {
			t.Fatalf("kcat: %v\n%s", err, stderr)
		}
		ls := lines(out)
		if len(ls) != n {
			t.Fatalf("kcat read %d records, want %d", len(ls), n)
		}
		for i, l := range ls {
			if l != strconv.Itoa(i)+" "+string(tieredS3Value(i, size)) {
				t.Fatalf("kcat line %d: %.40q", i, l)
			}
		}
	}
	if copied := metricValue(t, b, "kafka_server_brokertopicmetrics_remotecopybytes_total"); copied <= 0 {
		t.Fatalf("remotecopybytes %v", copied)
	}
	if fetched := metricValue(t, b, "kafka_server_brokertopicmetrics_remotefetchbytes_total"); fetched <= 0 {
		t.Fatalf("remotefetchbytes %v", fetched)
	}

	// The store stops.
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := true
	defer func() {
		if paused {
			srv.Resume()
		}
	}()
	errorsBefore := metricValue(t, b, "kafka_server_brokertopicmetrics_remotecopyerrors_total")
	const m = 2000
	produceValues(t, b.addr, topic, n, n+m, size)
	waitBroker(t, b, "copies failing", func() bool {
		return metricValue(t, b, "kafka_server_brokertopicmetrics_remotecopyerrors_total") > errorsBefore &&
			metricValue(t, b, "kafka_server_brokertopicmetrics_remotecopylagsegments") > 0
	})
	// Local data is served; nothing past the remote end was deleted.
	if code, k := fetchAt(t, cl, topic, int64(n+m-1)); code != 0 || k == 0 {
		t.Fatalf("local fetch with the store down: code %d, %d bytes", code, k)
	}
	remoteEnd := listOffset(t, cl, topic, -5)
	if local := listOffset(t, cl, topic, -4); local > remoteEnd+1 {
		t.Fatalf("local log start %d past the remote end %d: a segment not remote was deleted", local, remoteEnd)
	}
	// A remote fetch answers no records while the read waits for the
	// store, then KAFKA_STORAGE_ERROR, retriable.
	var code int16
	waitBroker(t, b, "a remote fetch failing", func() bool {
		code, _ = fetchAt(t, cl, topic, 0)
		return code != 0
	})
	if code != kerr.KafkaStorageError.Code || !kerr.IsRetriable(kerr.ErrorForCode(code)) {
		t.Fatalf("remote fetch with the store down: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}

	// The store is back: copying resumes, everything is read.
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	paused = false
	waitBroker(t, b, "tiering caught up", func() bool {
		return metricValue(t, b, "kafka_server_brokertopicmetrics_remotecopylagsegments") == 0 && listOffset(t, cl, topic, -5) > remoteEnd
	})
	waitBroker(t, b, "a remote fetch succeeding", func() bool {
		code, k := fetchAt(t, cl, topic, 0)
		return code == 0 && k > 0
	})
	consumeValues(t, b.addr, topic, n+m, size)
	logs, _ = remoteLogObjects(t, store, "e2e/")
	for start, ids := range logs {
		if len(ids) != 1 {
			t.Fatalf("segment at %s is remote %d times", start, len(ids))
		}
	}

	// Deleting the topic deletes its objects.
	if _, err := adm.DeleteTopics(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	waitBroker(t, b, "the bucket emptied", func() bool {
		left, err := store.List("")
		return err == nil && len(left) == 0
	})
	if strings.Contains(b.logText(), s3test.Secret) {
		t.Fatal("the secret access key is in the broker's log")
	}
}

// TestTieredS3KillMidUpload: the broker is SIGKILLed while a multipart
// upload of a segment is in progress (the store is stopped once the
// upload has begun, so that it cannot finish). After a restart nothing is
// copied twice or lost: every remote start offset has one .log object,
// every object belongs to a segment with a .log object, no multipart
// upload is left in progress, and the topic reads back whole.
func TestTieredS3KillMidUpload(t *testing.T) {
	srv := s3test.Start(t)
	store := tieredS3Store(t, srv)
	dir := t.TempDir()
	b := startBroker(t, dir, tieredS3Sets(srv)...)
	const topic, size = "tiered-kill", 1024
	adm := kadm.NewClient(mustKgo(t, b.addr))
	// Segments of 12 MiB: three parts of 5 MiB, the last short.
	res, err := adm.CreateTopic(context.Background(), 1, 1, map[string]*string{
		"segment.bytes": kadm.StringPtr(strconv.Itoa(12 << 20)), "local.retention.bytes": kadm.StringPtr(strconv.Itoa(12 << 20)), "remote.storage.enable": kadm.StringPtr("true"),
	}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	const n = 3 * 12 << 10 // three segments of 1 KiB records
	produceValues(t, b.addr, topic, 0, n, size)
	inProgress := false
	for i := 0; i < 20000 && !inProgress; i++ {
		ups, err := store.Uploads("e2e/")
		if err != nil {
			t.Fatal(err)
		}
		inProgress = len(ups) > 0
		if !inProgress {
			time.Sleep(2 * time.Millisecond)
		}
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	b.cmd.Process.Signal(syscall.SIGKILL)
	<-b.done
	b.cmd = nil
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	t.Logf("multipart upload in progress at the kill: %t", inProgress)
	ups, err := store.Uploads("e2e/")
	if err != nil {
		t.Fatal(err)
	}
	if inProgress && len(ups) == 0 {
		t.Log("the upload completed between the check and the stop")
	}

	b.restart()
	cl := mustKgo(t, b.addr)
	waitBroker(t, b, "two segments tiered after the restart", func() bool {
		return listOffset(t, cl, topic, -5) >= 2*12<<10-1000
	})
	// The restarted broker goes on copying the segments after the
	// second: a copy in progress has its indexes in the store and its
	// .log not yet. So the store is polled until it settles: no
	// multipart upload, every start offset remote once, every object with
	// its segment's .log. An orphan of the killed copy never settles.
	var problem string
	var starts []string
	settled := func() bool {
		if ups, err := store.Uploads("e2e/"); err != nil || len(ups) > 0 {
			problem = fmt.Sprintf("multipart uploads in progress: %v %v", ups, err)
			return false
		}
		logs, ids := remoteLogObjects(t, store, "e2e/")
		logIDs := map[string]bool{}
		starts = starts[:0]
		for start, ls := range logs {
			if len(ls) != 1 {
				problem = fmt.Sprintf("segment at %s is remote %d times: %v", start, len(ls), ls)
				return false
			}
			logIDs[ls[0]] = true
			starts = append(starts, start)
		}
		for id := range ids {
			if !logIDs[id] {
				problem = fmt.Sprintf("objects of segment %s without its .log", id)
				return false
			}
		}
		return true
	}
	for i := 0; !settled(); i++ {
		if i == 1200 {
			t.Fatalf("the store never settled after the restart: %s (an orphan or a duplicate of the killed copy)\n%s", problem, b.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	sort.Strings(starts)
	t.Logf("remote segments at %v", starts)
	consumeValues(t, b.addr, topic, n, size)
}

func mustKgo(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// lookKcat is kcat's path, "" when it is not installed outside CI (the
// franz-go checks still run).
func lookKcat(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat is not installed (make test installs it)")
		}
		t.Log("kcat is not installed: the kcat read is skipped")
		return ""
	}
	return p
}
