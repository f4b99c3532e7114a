package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/s3test"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/tiered"
)

// startTieredS3 starts an in-process single node whose remote tier is the
// S3 backend on srv (bucket "bench"), the remote log manager's task run
// only by the caller (RunOnce).
func startTieredS3(tb testing.TB, dir string, srv *s3test.Server) (*Server, string) {
	tb.Helper()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	logs := filepath.Join(dir, "logs")
	store, err := engine.Open("segment", engine.Options{Dir: logs})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := config.Default()
	cfg.LogDirs = []string{logs}
	cfg.RemoteLogStorageSystemEnable = true
	cfg.RemoteLogStorageBackend = "s3"
	cfg.RemoteLogManagerTaskInterval = time.Hour
	cfg.RemoteStorageProperties = map[string]string{
		tiered.S3KeyBucket: "bench", tiered.S3KeyEndpoint: srv.Endpoint(), tiered.S3KeyPathStyle: "true",
		tiered.S3KeyAccessKeyID: s3test.Access, tiered.S3KeySecretAccessKey: s3test.Secret,
	}
	sc, err := tiered.S3ConfigOf(cfg.RemoteStorageProperties)
	if err != nil {
		tb.Fatal(err)
	}
	s3c, err := tiered.NewS3(sc)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s3c.CreateBucket(); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Logger: slog.New(slog.DiscardHandler), Meta: meta, Store: store,
		ClusterID: "bench", AdvertisedHost: "127.0.0.1", AdvertisedPort: int32(ln.Addr().(*net.TCPAddr).Port)})
	if err != nil {
		tb.Fatal(err)
	}
	go s.ServeListener(ln, "PLAINTEXT")
	tb.Cleanup(func() { s.Close(); store.Close(); meta.Close() })
	return s, ln.Addr().String()
}

// benchProduce writes total bytes of incompressible 16 KiB records to a
// new topic of one partition with 4 MiB segments; tiered topics keep one
// segment locally.
func benchProduce(tb testing.TB, addr, topic string, total int, tieredTopic bool) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	configs := map[string]*string{"segment.bytes": ptr(fmt.Sprint(4 << 20))}
	if tieredTopic {
		configs["remote.storage.enable"] = ptr("true")
		configs["local.retention.bytes"] = ptr(fmt.Sprint(4 << 20))
	}
	if res, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, configs, topic); err != nil || res.Err != nil {
		tb.Fatalf("create: %v %v", err, res.Err)
	}
	v := make([]byte, 16<<10)
	rand.Read(v)
	for i := 0; i < total/len(v); i++ {
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				tb.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// benchConsume reads topic-0 from offset 0 to end and returns the bytes of
// record values read.
func benchConsume(tb testing.TB, addr, topic string, end int64) int64 {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var n, next int64
	for next < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			tb.Fatalf("consumed to %d of %d", next, end)
		}
		fs.EachRecord(func(r *kgo.Record) { n += int64(len(r.Value)); next = r.Offset + 1 })
	}
	return n
}

// BenchmarkTieredS3 measures tiered storage on versitygw (a posix dir on
// this machine's disk behind the S3 API, over loopback HTTP): op=copy is
// the remote log manager copying the rolled 4 MiB segments of 32 MiB
// produced (7 of them: 28 MiB; RunOnce); op=consume reads 32 MiB with franz-go from offset 0 of a
// topic whose segments are remote but one (tier=remote-cold: the read
// cache emptied before each run; tier=remote-warm: every chunk cached by
// the previous run) or of a topic kept wholly on local disk (tier=local),
// in the same run.
//
//	go test -run '^$' -bench BenchmarkTieredS3 -benchtime 3x ./server/
func BenchmarkTieredS3(b *testing.B) {
	srv := s3test.Start(b)
	s, addr := startTieredS3(b, b.TempDir(), srv)
	const total = 32 << 20
	topics := 0
	b.Run("op=copy", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			topics++
			topic := fmt.Sprintf("copy-%d", topics)
			benchProduce(b, addr, topic, total, true)
			b.StartTimer()
			s.tiered.RunOnce()
			b.StopTimer()
			st := s.tiered.Stats(topic)
			if st.CopyLagSegments != 0 || st.CopyErrors != 0 || st.CopyBytes == 0 {
				b.Fatalf("after the copy: %+v", st)
			}
			b.SetBytes(st.CopyBytes) // the rolled segments: all but the active one
			b.StartTimer()
		}
	})
	benchProduce(b, addr, "remote", total, true)
	benchProduce(b, addr, "local", total, false)
	s.tiered.RunOnce()
	end := s.rm.Partition("remote", 0).LogEndOffset()
	if start := s.rm.Partition("remote", 0).LogStartOffset(); start == 0 {
		b.Fatal("nothing of topic remote is remote only")
	}
	for _, tc := range []struct {
		name, topic string
		drop        bool
	}{{"tier=local", "local", false}, {"tier=remote-cold", "remote", true}, {"tier=remote-warm", "remote", false}} {
		b.Run("op=consume/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			if tc.name == "tier=remote-warm" {
				benchConsume(b, addr, tc.topic, end) // warms the cache
			}
			b.SetBytes(total)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if tc.drop {
					b.StopTimer()
					s.tiered.DropCache()
					b.StartTimer()
				}
				if n := benchConsume(b, addr, tc.topic, end); n < total*9/10 {
					b.Fatalf("consumed %d bytes", n)
				}
			}
		})
	}
}
