package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/tiered"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tieredBroker is an in-process single node with tiered storage on, its
// remote tier in dir/remote; the remote log manager's task runs only when
// the test calls run (its interval is an hour).
type tieredBroker struct {
	s     *Server
	addr  string
	dir   string
	close func()
}

func startTiered(t *testing.T, dir string) *tieredBroker {
	t.Helper()
	return startTieredRSM(t, dir, nil)
}

func startTieredRSM(t *testing.T, dir string, rsm tiered.RemoteStorageManager) *tieredBroker {
	t.Helper()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "logs")
	store, err := engine.Open("segment", engine.Options{Dir: logs})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.LogDirs = []string{logs}
	cfg.RemoteLogStorageSystemEnable = true
	cfg.RemoteLogManagerTaskInterval = time.Hour
	cfg.RemoteStorageProperties = map[string]string{"rsm.config.dir": filepath.Join(dir, "remote")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Logger: slog.New(slog.DiscardHandler), Meta: meta, Store: store, RemoteStorage: rsm,
		ClusterID: "tiered", AdvertisedHost: "127.0.0.1", AdvertisedPort: int32(ln.Addr().(*net.TCPAddr).Port)})
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeListener(ln, "PLAINTEXT")
	b := &tieredBroker{s: s, addr: ln.Addr().String(), dir: dir}
	closed := false
	b.close = func() {
		if !closed {
			closed = true
			s.Close()
			store.Close()
			meta.Close()
		}
	}
	t.Cleanup(b.close)
	return b
}

// remoteFiles lists the regular files under the remote tier.
func (b *tieredBroker) remoteFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(filepath.Join(b.dir, "remote"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// localLogBytes is the size of the .log files of topic-0.
func (b *tieredBroker) localLogBytes(t *testing.T, topic string) (n int64, files int) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(b.dir, "logs", topic+"-0"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			n += fi.Size()
			files++
		}
	}
	return n, files
}

// tieredTimeBase is the timestamp of record 0 (an hour ago, well inside
// the default retention); record i's is 10 ms later per record.
var tieredTimeBase = time.Now().Add(-time.Hour).UnixMilli()

func tieredValue(i int) []byte {
	return []byte(fmt.Sprintf("record-%06d-%s", i, strings.Repeat(string(rune('a'+i%26)), 80)))
}

// produceTiered produces n records to topic, each its own batch.
func produceTiered(t *testing.T, addr, topic string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < from+n; i++ {
		r := kgo.SliceRecord(tieredValue(i))
		r.Timestamp = time.UnixMilli(tieredTimeBase + int64(i)*10)
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
}

// consumeAll reads n records of topic from offset 0 and checks each is
// the one produced, in order.
func consumeAll(t *testing.T, addr, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxPartitionBytes(2048))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	next := 0
	for next < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", next, n)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(next) || !bytes.Equal(r.Value, tieredValue(next)) {
				t.Fatalf("record at offset %d (%q), want offset %d", r.Offset, r.Value, next)
			}
			next++
		})
	}
}

func listOffset(t *testing.T, cl *kgo.Client, topic string, ts int64) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 9
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// TestTieredConsumeFromRemote produces enough to roll many small
// segments of a tiered topic with a tiny local retention: once the task
// ran, the local dir holds about the local retention, the rest is remote,
// ListOffsets answers the remote and local starts and the tiered end, and
// a consumer from offset 0 reads every record in order, byte-identical,
// before and after a restart. Deleting the topic leaves no remote object.
func TestTieredConsumeFromRemote(t *testing.T) {
	dir := t.TempDir()
	b := startTiered(t, dir)
	const topic, n = "tiered", 300
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ka := kadm.NewClient(adm)
	seg, local := "2048", "4096"
	res, err := ka.CreateTopic(context.Background(), 1, 1, map[string]*string{
		"segment.bytes": &seg, "local.retention.bytes": &local, "remote.storage.enable": ptr("true"),
	}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	produceTiered(t, b.addr, topic, 0, n)
	before, files := b.localLogBytes(t, topic)
	if files < 10 {
		t.Fatalf("%d segments, want many", files)
	}
	b.s.tiered.RunOnce()

	after, left := b.localLogBytes(t, topic)
	if after > 4096+2048 || left >= files {
		t.Fatalf("local .log bytes %d in %d files after local retention (before: %d in %d), want about 4096", after, left, before, files)
	}
	if len(b.remoteFiles(t)) == 0 {
		t.Fatal("nothing remote")
	}
	if off, code := listOffset(t, adm, topic, -2); off != 0 || code != 0 {
		t.Fatalf("earliest: %d (code %d), want 0", off, code)
	}
	localStart, code := listOffset(t, adm, topic, -4)
	if localStart <= 0 || code != 0 {
		t.Fatalf("earliest local: %d (code %d), want above 0", localStart, code)
	}
	if tiered, code := listOffset(t, adm, topic, -5); tiered < localStart-1 || tiered >= n || code != 0 {
		t.Fatalf("latest tiered: %d (code %d), local start %d", tiered, code, localStart)
	}
	// A timestamp of a remote record finds it; one past every record none.
	if off, code := listOffset(t, adm, topic, tieredTimeBase+5*10-3); off != 5 || code != 0 {
		t.Fatalf("offset for a remote record's timestamp: %d (code %d), want 5", off, code)
	}
	if off, code := listOffset(t, adm, topic, tieredTimeBase+(localStart+2)*10); off != localStart+2 || code != 0 {
		t.Fatalf("offset for a local record's timestamp: %d (code %d), want %d", off, code, localStart+2)
	}
	consumeAll(t, b.addr, topic, n)

	b.close()
	b = startTiered(t, dir)
	consumeAll(t, b.addr, topic, n)
	if start, _ := listOffset(t, mustClient(t, b.addr), topic, -4); start != localStart {
		t.Fatalf("earliest local after restart: %d, want %d", start, localStart)
	}

	adm2 := mustClient(t, b.addr)
	if _, err := kadm.NewClient(adm2).DeleteTopic(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	if left := b.remoteFiles(t); len(left) != 0 {
		t.Fatalf("remote objects left after the topic's deletion: %v", left)
	}
}

func mustClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestTieredConfigsRefused: remote storage on a compacted topic is
// INVALID_CONFIG, as Kafka refuses it.
func TestTieredConfigsRefused(t *testing.T) {
	b := startTiered(t, t.TempDir())
	ka := kadm.NewClient(mustClient(t, b.addr))
	res, err := ka.CreateTopic(context.Background(), 1, 1, map[string]*string{
		"cleanup.policy": ptr("compact"), "remote.storage.enable": ptr("true"),
	}, "compacted")
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke.Code != kerr.InvalidConfig.Code || !strings.Contains(res.ErrMessage, "compacted") {
		t.Fatalf("compacted tiered topic: %v (%q), want INVALID_CONFIG", err, res.ErrMessage)
	}
	// A topic of another backend (storage.backend) is not tiered.
	res, err = ka.CreateTopic(context.Background(), 1, 1, map[string]*string{
		"storage.backend": ptr("pebble"), "remote.storage.enable": ptr("true"),
	}, "pebbletiered")
	if !errors.As(err, &ke) || ke.Code != kerr.InvalidConfig.Code || !strings.Contains(res.ErrMessage, "segment backend") {
		t.Fatalf("pebble tiered topic: %v (%q), want INVALID_CONFIG", err, res.ErrMessage)
	}
}

func ptr(s string) *string { return &s }

// crashingRSM is the local-directory backend that "crashes" in its
// crashAt-th copy (from 1): it writes that segment's objects and a torn
// temporary one, then ends the task's goroutine, as a SIGKILL mid-upload
// would, leaving the segment COPY_SEGMENT_STARTED.
type crashingRSM struct {
	*tiered.LocalDir
	dir     string
	copies  int
	crashAt int
}

func (c *crashingRSM) CopyLogSegmentData(md tiered.SegmentMetadata, data tiered.LogSegmentData) error {
	c.copies++
	if err := c.LocalDir.CopyLogSegmentData(md, data); err != nil {
		return err
	}
	if c.copies == c.crashAt {
		torn := filepath.Join(c.dir, md.Partition.Topic+"-"+md.Partition.TopicID.String(), "0",
			fmt.Sprintf("%020d-%s.log.tmp", md.StartOffset, md.SegmentID))
		os.WriteFile(torn, []byte("torn"), 0o644)
		runtime.Goexit()
	}
	return nil
}

// remoteLogStarts counts the remote .log objects per start offset, and
// the temporary files.
func (b *tieredBroker) remoteLogStarts(t *testing.T) (starts map[string]int, tmp int) {
	starts = map[string]int{}
	for _, f := range b.remoteFiles(t) {
		name := filepath.Base(f)
		switch {
		case strings.HasSuffix(name, ".tmp"):
			tmp++
		case strings.HasSuffix(name, ".log"):
			starts[name[:20]]++
		}
	}
	return starts, tmp
}

// TestTieredCrashMidUpload: a segment left COPY_SEGMENT_STARTED by a
// crash mid-upload (its objects written, a torn temporary one beside
// them) is never read; after a restart the task deletes its objects and
// copies the segment again, once: every remote start offset has one .log
// object and no temporary file is left.
func TestTieredCrashMidUpload(t *testing.T) {
	dir := t.TempDir()
	remote := filepath.Join(dir, "remote")
	ld, err := tiered.NewLocalDir(remote)
	if err != nil {
		t.Fatal(err)
	}
	crash := &crashingRSM{LocalDir: ld, dir: remote, crashAt: 3}
	b := startTieredRSM(t, dir, crash)
	const topic, n = "crash", 120
	createSmallTiered(t, kadm.NewClient(mustClient(t, b.addr)), topic)
	produceTiered(t, b.addr, topic, 0, n)
	done := make(chan struct{})
	go func() { defer close(done); b.s.tiered.RunOnce() }()
	<-done
	if crash.copies != crash.crashAt {
		t.Fatalf("%d copies, want the crash at %d", crash.copies, crash.crashAt)
	}
	if _, tmp := b.remoteLogStarts(t); tmp != 1 {
		t.Fatalf("%d temporary files after the crash, want the torn one", tmp)
	}
	// Only the finished copies count: the third segment is not remote.
	if end, code := listOffset(t, mustClient(t, b.addr), topic, -5); code != 0 || end < 0 {
		t.Fatalf("latest tiered after the crash: %d (code %d)", end, code)
	}
	b.close()

	b = startTiered(t, dir)
	b.s.tiered.RunOnce()
	starts, tmp := b.remoteLogStarts(t)
	if tmp != 0 {
		t.Fatalf("%d temporary files left", tmp)
	}
	if len(starts) < crash.crashAt {
		t.Fatalf("%d remote segments, want at least %d", len(starts), crash.crashAt)
	}
	for start, k := range starts {
		if k != 1 {
			t.Fatalf("segment %s is remote %d times", start, k)
		}
	}
	consumeAll(t, b.addr, topic, n)
}

// fetchCode fetches topic-0 at offset with a raw Fetch and returns the
// partition's error code and record bytes.
func (b *tieredBroker) fetchCode(t *testing.T, cl *kgo.Client, topic string, offset int64) (int16, int) {
	t.Helper()
	// A remote read that takes longer than remote.fetch.max.wait.ms
	// answers no records while it goes on: fetch again, bounded.
	for i := 0; ; i++ {
		code, n := b.fetchCodeOnce(t, cl, topic, offset)
		if code != 0 || n > 0 || i == 200 {
			return code, n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *tieredBroker) fetchCodeOnce(t *testing.T, cl *kgo.Client, topic string, offset int64) (int16, int) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rt.TopicID = b.s.rm.Topic(topic).ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, len(p.RecordBatches)
}

// TestTieredHostileRemote: a missing remote object, then a damaged remote
// metadata record, answer a fetch of remote offsets KAFKA_STORAGE_ERROR
// (retriable) and never panic; local offsets are still served, and local
// retention deletes nothing while the metadata is unreadable.
func TestTieredHostileRemote(t *testing.T) {
	dir := t.TempDir()
	b := startTiered(t, dir)
	const topic, n = "hostile", 120
	createSmallTiered(t, kadm.NewClient(mustClient(t, b.addr)), topic)
	produceTiered(t, b.addr, topic, 0, n)
	b.s.tiered.RunOnce()
	cl := mustClient(t, b.addr)
	local, _ := listOffset(t, cl, topic, -4)
	if local <= 0 {
		t.Fatalf("local log start %d: nothing tiered", local)
	}
	// A remote read of the last remote segment: the first one's chunks
	// and index are not cached by it.
	if code, size := b.fetchCode(t, cl, topic, local-1); code != 0 || size == 0 {
		t.Fatalf("remote fetch: code %d, %d bytes", code, size)
	}

	// A missing .log object.
	var first string
	for _, f := range b.remoteFiles(t) {
		if strings.HasSuffix(f, ".log") && strings.HasPrefix(filepath.Base(f), "00000000000000000000-") {
			first = f
		}
	}
	if first == "" {
		t.Fatal("no remote segment at offset 0")
	}
	moved := first + ".aside"
	if err := os.Rename(first, moved); err != nil {
		t.Fatal(err)
	}
	if code, _ := b.fetchCode(t, cl, topic, 0); code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch of a missing remote object: code %d, want KAFKA_STORAGE_ERROR", code)
	}
	if err := os.Rename(moved, first); err != nil {
		t.Fatal(err)
	}
	if code, size := b.fetchCode(t, cl, topic, 0); code != 0 || size == 0 {
		t.Fatalf("remote fetch once the object is back: code %d, %d bytes", code, size)
	}

	// A damaged metadata record (one byte flipped in the stored value).
	id := b.s.rm.Topic(topic).ID
	b.close()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("tiered/%s/0", tiered.UUID(id))
	v, err := meta.GetCheckpoint(key)
	if err != nil || len(v) < 100 {
		t.Fatalf("metadata %s: %d bytes, %v", key, len(v), err)
	}
	v[len(v)-20] ^= 0xff
	if err := meta.PutCheckpoint(key, v); err != nil {
		t.Fatal(err)
	}
	meta.Close()
	before, files := 0, 0
	b = startTiered(t, dir)
	cl = mustClient(t, b.addr)
	_, files = b.localLogBytes(t, topic)
	produceTiered(t, b.addr, topic, n, 40)
	b.s.tiered.RunOnce()
	if code, _ := b.fetchCode(t, cl, topic, 0); code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch with damaged metadata: code %d, want KAFKA_STORAGE_ERROR", code)
	}
	if code, size := b.fetchCode(t, cl, topic, local); code != 0 || size == 0 {
		t.Fatalf("local fetch with damaged remote metadata: code %d, %d bytes", code, size)
	}
	if start, _ := listOffset(t, cl, topic, -4); start != local {
		t.Fatalf("local log start moved from %d to %d with unreadable metadata", local, start)
	}
	_, after := b.localLogBytes(t, topic)
	if after < files+before {
		t.Fatalf("local segments went from %d to %d with unreadable metadata", files, after)
	}
}

// TestTieredRetentionDeletesRemote: whole-log retention (retention.ms)
// deletes remote segments past it, and their local copies; the log start
// offset (ListOffsets -2) follows.
func TestTieredRetentionDeletesRemote(t *testing.T) {
	b := startTiered(t, t.TempDir())
	const topic, n = "expiring", 120
	res, err := kadm.NewClient(mustClient(t, b.addr)).CreateTopic(context.Background(), 1, 1, map[string]*string{
		"segment.bytes": ptr("2048"), "local.retention.bytes": ptr("4096"), "remote.storage.enable": ptr("true"),
		"retention.ms": ptr(fmt.Sprint((24 * time.Hour).Milliseconds())),
	}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	saved := tieredTimeBase
	tieredTimeBase = time.Now().Add(-48 * time.Hour).UnixMilli()
	produceTiered(t, b.addr, topic, 0, n)
	tieredTimeBase = saved
	b.s.tiered.RunOnce()
	if starts, _ := b.remoteLogStarts(t); len(starts) != 0 {
		t.Fatalf("%d remote segments past retention.ms left", len(starts))
	}
	cl := mustClient(t, b.addr)
	earliest, _ := listOffset(t, cl, topic, -2)
	local, _ := listOffset(t, cl, topic, -4)
	if earliest != local || earliest <= 0 {
		t.Fatalf("earliest %d, earliest local %d: want equal and above 0", earliest, local)
	}
}

// TestTieredOneRemoteReadPerFetch: a fetch of two partitions both below
// their local log start reads the remote tier for one of them; the other
// answers no records and no error, and is read by the next fetch.
func TestTieredOneRemoteReadPerFetch(t *testing.T) {
	b := startTiered(t, t.TempDir())
	const topic, n = "two", 100
	res, err := kadm.NewClient(mustClient(t, b.addr)).CreateTopic(context.Background(), 2, 1, map[string]*string{
		"segment.bytes": ptr("2048"), "local.retention.bytes": ptr("2048"), "remote.storage.enable": ptr("true"),
	}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 2*n; i++ {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: tieredValue(i)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b.s.tiered.RunOnce()
	for p := int32(0); p < 2; p++ {
		if start := b.s.rm.Partition(topic, p).LogStartOffset(); start == 0 {
			t.Fatalf("partition %d: nothing tiered away", p)
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, b.s.rm.Topic(topic).ID
	for p := int32(0); p < 2; p++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	withRecords := 0
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.LogStartOffset != 0 {
			t.Fatalf("partition %d: code %d, log start %d", p.Partition, p.ErrorCode, p.LogStartOffset)
		}
		if len(p.RecordBatches) > 0 {
			withRecords++
		}
	}
	if withRecords != 1 {
		t.Fatalf("%d partitions read from the remote tier in one fetch, want 1", withRecords)
	}
	if code, size := b.fetchCode(t, cl, topic, 0); code != 0 || size == 0 {
		t.Fatalf("partition 0 alone: code %d, %d bytes", code, size)
	}
}

// TestTieredRetentionConfigsRefused: as Kafka's LogConfig, a tiered
// topic's local.retention.* above, or -1 beside, a finite retention.*, and
// turning remote.storage.enable off without
// remote.log.delete.on.disable=true, are INVALID_CONFIG; the allowed
// forms pass.
func TestTieredRetentionConfigsRefused(t *testing.T) {
	b := startTiered(t, t.TempDir())
	ka := kadm.NewClient(mustClient(t, b.addr))
	ctx := context.Background()
	for _, c := range []map[string]*string{
		{"retention.bytes": ptr("1000"), "local.retention.bytes": ptr("2000")},
		{"retention.bytes": ptr("1000"), "local.retention.bytes": ptr("-1")},
		{"retention.ms": ptr("60000"), "local.retention.ms": ptr("120000")},
		{"retention.ms": ptr("60000"), "local.retention.ms": ptr("-1")},
	} {
		c["remote.storage.enable"] = ptr("true")
		_, err := ka.CreateTopic(ctx, 1, 1, c, "refused")
		var ke *kerr.Error
		if !errors.As(err, &ke) || ke.Code != kerr.InvalidConfig.Code {
			t.Fatalf("create with %v: %v, want INVALID_CONFIG", c, err)
		}
	}
	res, err := ka.CreateTopic(ctx, 1, 1, map[string]*string{
		"remote.storage.enable": ptr("true"), "retention.ms": ptr("60000"), "local.retention.ms": ptr("30000"),
	}, "on")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	alter := func(cfgs ...kadm.AlterConfig) error {
		rs, err := ka.AlterTopicConfigs(ctx, cfgs, "on")
		if err != nil {
			return err
		}
		return rs[0].Err
	}
	set := func(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Name: k, Value: ptr(v)} }
	if err := alter(set("local.retention.ms", "90000")); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("local.retention.ms above retention.ms: %v, want INVALID_CONFIG", err)
	}
	if err := alter(set("remote.storage.enable", "false")); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("turning remote storage off without delete: %v, want INVALID_CONFIG", err)
	}
	if err := alter(kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "remote.storage.enable"}); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("deleting remote.storage.enable without delete: %v, want INVALID_CONFIG", err)
	}
	if err := alter(set("remote.storage.enable", "false"), set("remote.log.delete.on.disable", "true")); err != nil {
		t.Fatalf("turning remote storage off with delete: %v", err)
	}
}

// TestTieredCopyDisabledKeepsRetention: with remote.log.copy.disable=true
// nothing is copied and local retention is the topic's retention.*, so the
// local log does not grow without bound; local.retention.* other than
// retention.* (or -2) is INVALID_CONFIG, as Kafka's LogConfig.
func TestTieredCopyDisabledKeepsRetention(t *testing.T) {
	b := startTiered(t, t.TempDir())
	ka := kadm.NewClient(mustClient(t, b.addr))
	ctx := context.Background()
	_, err := ka.CreateTopic(ctx, 1, 1, map[string]*string{
		"remote.storage.enable": ptr("true"), "remote.log.copy.disable": ptr("true"),
		"retention.bytes": ptr("4096"), "local.retention.bytes": ptr("2048"),
	}, "mismatch")
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("copy disabled with local.retention.bytes != retention.bytes: %v, want INVALID_CONFIG", err)
	}
	const topic, n = "nocopy", 300
	res, err := ka.CreateTopic(ctx, 1, 1, map[string]*string{
		"segment.bytes": ptr("2048"), "retention.bytes": ptr("4096"),
		"remote.storage.enable": ptr("true"), "remote.log.copy.disable": ptr("true"),
	}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	produceTiered(t, b.addr, topic, 0, n)
	before, files := b.localLogBytes(t, topic)
	b.s.tiered.RunOnce()
	after, left := b.localLogBytes(t, topic)
	if after > 4096+2048 || left >= files {
		t.Fatalf("local .log bytes %d in %d files after retention (before: %d in %d), want about retention.bytes 4096", after, left, before, files)
	}
	if f := b.remoteFiles(t); len(f) != 0 {
		t.Fatalf("copied with remote.log.copy.disable: %v", f)
	}
	cl := mustClient(t, b.addr)
	if start, code := listOffset(t, cl, topic, -2); start <= 0 || code != 0 {
		t.Fatalf("earliest %d (code %d), want above 0", start, code)
	}
}

// TestTieredDeleteRecords: DeleteRecords on a tiered topic moves its log
// start offset, also below the local log start: DeleteRecords and
// ListOffsets -2 answer it, a fetch below it is OFFSET_OUT_OF_RANGE (not a
// remote read, which left a consumer between the remote end and the new
// start resetting to 0 forever), and the task deletes the remote segments
// wholly below it, as Kafka's RemoteLogManager.
func TestTieredDeleteRecords(t *testing.T) {
	b := startTiered(t, t.TempDir())
	const topic, n = "deleting", 300
	cl := mustClient(t, b.addr)
	ka := kadm.NewClient(cl)
	ctx := context.Background()
	createSmallTiered(t, ka, topic)
	produceTiered(t, b.addr, topic, 0, n)
	b.s.tiered.RunOnce()
	remoteEnd, _ := listOffset(t, cl, topic, -5)
	local, _ := listOffset(t, cl, topic, -4)
	if remoteEnd < 40 || local <= 0 {
		t.Fatalf("remote end %d, local start %d: want much remote", remoteEnd, local)
	}
	deleteBefore := func(off int64) int64 {
		t.Helper()
		rs, err := ka.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: off}}})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := rs.Lookup(topic, 0)
		if r.Err != nil {
			t.Fatalf("delete records before %d: %v", off, r.Err)
		}
		return r.LowWatermark
	}
	remoteBelow := func(off int64) (below, all int) {
		starts, _ := b.remoteLogStarts(t)
		for s := range starts {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("remote object name %q: %v", s, err)
			}
			if v < off {
				below++
			}
			all++
		}
		return below, all
	}

	// Inside the remote tier.
	mid := remoteEnd / 2
	if low := deleteBefore(mid); low != mid {
		t.Fatalf("low watermark %d, want %d", low, mid)
	}
	if off, code := listOffset(t, cl, topic, -2); off != mid || code != 0 {
		t.Fatalf("earliest after delete records: %d (code %d), want %d", off, code, mid)
	}
	if code, _ := b.fetchCode(t, cl, topic, 0); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the log start: code %d, want OFFSET_OUT_OF_RANGE", code)
	}
	if code, nb := b.fetchCode(t, cl, topic, mid); code != 0 || nb == 0 {
		t.Fatalf("fetch at the log start: code %d, %d bytes", code, nb)
	}
	before, _ := remoteBelow(mid)
	b.s.tiered.RunOnce()
	if after, all := remoteBelow(mid); after != 1 || before <= 1 || all == 0 {
		// One remote segment holds mid (it starts below it) and stays.
		t.Fatalf("remote segments starting below the log start %d: %d before the task, %d after (of %d), want 1 after", mid, before, after, all)
	}

	// Above the remote end, in the local log.
	to := max(local, remoteEnd+1) + 2
	if to >= n {
		t.Fatalf("remote end %d, local start %d: no room above both", remoteEnd, local)
	}
	if low := deleteBefore(to); low != to {
		t.Fatalf("low watermark %d, want %d", low, to)
	}
	if off, code := listOffset(t, cl, topic, -2); off != to || code != 0 {
		t.Fatalf("earliest after delete records: %d (code %d), want %d", off, code, to)
	}
	if code, _ := b.fetchCode(t, cl, topic, remoteEnd+1); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch between the remote end and the log start: code %d, want OFFSET_OUT_OF_RANGE", code)
	}
	b.s.tiered.RunOnce()
	if _, all := remoteBelow(to); all != 0 {
		t.Fatalf("%d remote segments left below the log start %d", all, to)
	}
	if off, _ := listOffset(t, cl, topic, -2); off != to {
		t.Fatalf("earliest after the task: %d, want %d", off, to)
	}
}

// tieredWithRemote starts a tiered broker on dir with createSmallTiered's
// topic holding n records, and runs its task once: the rolled segments
// are remote and cut locally. It returns the broker and a client of it.
func tieredWithRemote(t *testing.T, dir, topic string, n int) (*tieredBroker, *kgo.Client) {
	t.Helper()
	b := startTiered(t, dir)
	cl := mustClient(t, b.addr)
	createSmallTiered(t, kadm.NewClient(cl), topic)
	produceTiered(t, b.addr, topic, 0, n)
	b.s.tiered.RunOnce()
	return b, cl
}

// createSmallTiered creates topic, one partition, tiered, with 2 KiB
// segments of which 4 KiB stay local: a few hundred small records put
// most of it in the remote tier.
func createSmallTiered(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	res, err := adm.CreateTopic(context.Background(), 1, 1, map[string]*string{
		"segment.bytes": ptr("2048"), "local.retention.bytes": ptr("4096"), "remote.storage.enable": ptr("true"),
	}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
}
