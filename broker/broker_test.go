package broker_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

func client(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestRestartKeepsData: records, topics, topic ids, configs and the cluster
// id survive a clean restart on the same dir; producer ids are not reused.
func TestRestartKeepsData(t *testing.T) {
	for _, be := range brokertest.Backends() {
		t.Run("backend="+be, func(t *testing.T) {
			dir := t.TempDir()
			b := brokertest.StartIn(t, dir, be)
			cl := client(t, b.Addr())
			adm := kadm.NewClient(cl)
			ctx := ctxFor(t, time.Minute)
			if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": kmsg.StringPtr("86400000")}, "keep"); err != nil {
				t.Fatal(err)
			}
			const n = 3000
			for i := 0; i < n; i++ {
				cl.Produce(ctx, &kgo.Record{Topic: "keep", Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprint("v", i))}, nil)
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			details, err := adm.ListTopics(ctx, "keep")
			if err != nil {
				t.Fatal(err)
			}
			id := details["keep"].ID
			ends, _ := adm.ListEndOffsets(ctx, "keep")
			pid1 := initPID(t, b.Addr())
			cid := b.ClusterID()
			cl.Close()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}

			b2 := brokertest.StartIn(t, dir, be)
			if b2.ClusterID() != cid {
				t.Fatalf("cluster id changed: %s -> %s", cid, b2.ClusterID())
			}
			cl2 := client(t, b2.Addr())
			adm2 := kadm.NewClient(cl2)
			details2, err := adm2.ListTopics(ctx, "keep")
			if err != nil || details2["keep"].ID != id || len(details2["keep"].Partitions) != 3 {
				t.Fatalf("topic after restart: %v %+v", err, details2["keep"])
			}
			ends2, _ := adm2.ListEndOffsets(ctx, "keep")
			var total int64
			ends.Each(func(o kadm.ListedOffset) {
				o2, _ := ends2.Lookup(o.Topic, o.Partition)
				if o2.Offset != o.Offset {
					t.Errorf("partition %d end offset %d, was %d", o.Partition, o2.Offset, o.Offset)
				}
				total += o2.Offset
			})
			if total != n {
				t.Fatalf("%d records after restart, want %d", total, n)
			}
			rcs, err := adm2.DescribeTopicConfigs(ctx, "keep")
			if err != nil {
				t.Fatal(err)
			}
			rc, _ := rcs.On("keep", nil)
			for _, c := range rc.Configs {
				if c.Key == "retention.ms" && c.MaybeValue() != "86400000" {
					t.Fatalf("retention.ms after restart: %q", c.MaybeValue())
				}
			}
			cons := client(t, b2.Addr(), kgo.ConsumeTopics("keep"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			seen := map[string]bool{}
			for len(seen) < n {
				fs := cons.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("read %d of %d after restart", len(seen), n)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if string(r.Value) != "v"+string(r.Key) {
						t.Fatalf("record %q=%q", r.Key, r.Value)
					}
					seen[string(r.Key)] = true
				})
			}
			if pid2 := initPID(t, b2.Addr()); pid2 <= pid1 {
				t.Fatalf("producer id %d after restart, not above %d", pid2, pid1)
			}
			// A new producer after restart continues the log.
			if err := cl2.ProduceSync(ctx, &kgo.Record{Topic: "keep", Partition: 0, Value: []byte("after")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func initPID(t *testing.T, addr string) int64 {
	t.Helper()
	cl := client(t, addr)
	req := kmsg.NewPtrInitProducerIDRequest()
	resp, err := req.RequestWith(ctxFor(t, 10*time.Second), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %v", err, resp)
	}
	return resp.ProducerID
}

// TestCloseEndsLongPoll: Close answers a parked fetch at once instead of
// waiting for its MaxWait.
func TestCloseEndsLongPoll(t *testing.T) {
	t.Parallel()
	b := brokertest.Start(t, "memory")
	cl := client(t, b.Addr())
	if _, err := kadm.NewClient(cl).CreateTopic(ctxFor(t, 10*time.Second), 1, 1, nil, "lp"); err != nil {
		t.Fatal(err)
	}
	cons := client(t, b.Addr(), kgo.ConsumeTopics("lp"), kgo.FetchMaxWait(30*time.Second))
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		cons.PollFetches(ctxFor(t, 5*time.Second))
	}()
	time.Sleep(300 * time.Millisecond) // let the fetch park
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s with a 30s long poll parked")
	}
	b.Wait()
	<-polled
}

func TestAdvertisedAddress(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.AdvertisedListeners = []string{"PLAINTEXT://broker.example:19092"}
	})
	cl := client(t, b.Addr())
	md := kmsg.NewPtrMetadataRequest()
	resp, err := md.RequestWith(ctxFor(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].Host != "broker.example" || resp.Brokers[0].Port != 19092 {
		t.Fatalf("brokers: %+v", resp.Brokers)
	}

	b2 := brokertest.Start(t, "memory")
	host, port, _ := net.SplitHostPort(b2.Addr())
	cl2 := client(t, b2.Addr())
	resp, err = kmsg.NewPtrMetadataRequest().RequestWith(ctxFor(t, 10*time.Second), cl2)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Brokers[0].Host != host || strconv.Itoa(int(resp.Brokers[0].Port)) != port {
		t.Fatalf("advertised %s:%d, bound %s", resp.Brokers[0].Host, resp.Brokers[0].Port, b2.Addr())
	}
}

func TestStartErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*config.Config)
	}{
		{"unknown backend", func(c *config.Config) { c.StorageBackend = "nope" }},
		{"bad listener", func(c *config.Config) { c.Listeners = []string{"127.0.0.1:0"} }},
		{"ssl listener", func(c *config.Config) { c.Listeners = []string{"SSL://127.0.0.1:0"} }},
		{"no log dirs", func(c *config.Config) { c.LogDirs = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := brokertest.Config(t.TempDir(), "memory", tc.mod)
			b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t)})
			if err == nil {
				b.Close()
				t.Fatal("started")
			}
		})
	}
	// A cluster.id or broker.id that disagrees with the stored one is refused.
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, "memory")
	b.Close()
	for _, mod := range []func(*config.Config){
		func(c *config.Config) { c.ClusterIDOverride = "other" },
		func(c *config.Config) { c.BrokerID = 7 },
	} {
		cfg := brokertest.Config(dir, "memory", mod)
		if b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t)}); err == nil {
			b.Close()
			t.Fatal("started with a mismatched id")
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "meta.properties")); err != nil || !strings.Contains(string(data), "cluster.id="+b.ClusterID()) {
		t.Fatalf("meta.properties: %q %v", data, err)
	}
}

// TestRetentionLoop: with log.retention.check.interval.ms set, the broker
// deletes old segments of a topic with a small retention.bytes.
func TestRetentionLoop(t *testing.T) {
	for _, be := range brokertest.Backends() {
		t.Run("backend="+be, func(t *testing.T) {
			b := brokertest.Start(t, be, func(c *config.Config) { c.LogRetentionCheck = 50 * time.Millisecond })
			cl := client(t, b.Addr(), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1))
			adm := kadm.NewClient(cl)
			ctx := ctxFor(t, time.Minute)
			cfgs := map[string]*string{"segment.bytes": kmsg.StringPtr("1024"), "retention.bytes": kmsg.StringPtr("2048")}
			if r, err := adm.CreateTopic(ctx, 1, 1, cfgs, "ret"); err != nil || r.Err != nil {
				t.Fatal(err, r.Err)
			}
			for i := 0; i < 100; i++ {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ret", Value: make([]byte, 200)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				starts, err := adm.ListStartOffsets(ctx, "ret")
				if err != nil {
					t.Fatal(err)
				}
				if o, _ := starts.Lookup("ret", 0); o.Offset > 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("retention deleted nothing within 20s")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestFlushAndRecoveryCheckpointLoops: the broker's replica manager runs
// log.flush.interval.ms (a flush, then a recovery-point checkpoint) and
// log.flush.offset.checkpoint.interval.ms, so recovery-point-offset-checkpoint
// (segment backend) records progress while the broker runs: up to the log
// end after a periodic flush, past a rolled segment (which is flushed in
// the background) with the checkpoint loop alone.
func TestFlushAndRecoveryCheckpointLoops(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flush, ckpt time.Duration
		segment     string // segment.bytes
		toEnd       bool   // the checkpoint reaches the log end
	}{
		{name: "flush", flush: 50 * time.Millisecond, segment: "1048576", toEnd: true},
		{name: "checkpoint", ckpt: 50 * time.Millisecond, segment: "1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := brokertest.StartIn(t, dir, "segment", func(c *config.Config) {
				c.LogFlushInterval, c.LogFlushOffsetCheckpointInterval = tc.flush, tc.ckpt
			})
			cl := client(t, b.Addr(), kgo.ProducerLinger(0))
			adm := kadm.NewClient(cl)
			ctx := ctxFor(t, time.Minute)
			cfgs := map[string]*string{"segment.bytes": kmsg.StringPtr(tc.segment)}
			if r, err := adm.CreateTopic(ctx, 1, 1, cfgs, "fl"); err != nil || r.Err != nil {
				t.Fatal(err, r.Err)
			}
			for i := 0; i < 20; i++ {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fl", Value: make([]byte, 200)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			want := int64(20)
			if !tc.toEnd {
				want = 1 // past the first segment
			}
			path := filepath.Join(dir, "recovery-point-offset-checkpoint")
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if got := checkpointed(path, "fl 0 "); got >= want {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("checkpointed recovery point of fl-0 still %d after 20s, want >= %d", checkpointed(path, "fl 0 "), want)
				}
			}
		})
	}
}

// checkpointed returns the offset after prefix in an offset checkpoint
// file, or -1.
func checkpointed(path, prefix string) int64 {
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if o, err := strconv.ParseInt(rest, 10, 64); err == nil {
				return o
			}
		}
	}
	return -1
}
