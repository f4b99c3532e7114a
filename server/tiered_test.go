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
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
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
	s, err := New(Options{Config: cfg, Logger: slog.New(slog.DiscardHandler), Meta: meta, Store: store,
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
		if err := cl.ProduceSync(context.Background(), kgo.SliceRecord(tieredValue(i))).FirstErr(); err != nil {
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
}

func ptr(s string) *string { return &s }
