package broker_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// topicBackends are the storage backends a topic can choose.
var topicBackends = []string{"segment", "pebble", "memory"}

// TestTopicBackendsOneBroker: one broker serves a topic of each storage
// backend (the topic config storage.backend) in one run, whichever
// backend is the broker's own: each topic's logs are where its backend
// keeps them; produce and consume, a consumer group's commits and log
// compaction work on each; DescribeConfigs shows each topic's backend;
// creating a topic with an unknown backend and changing a topic's backend
// are INVALID_CONFIG; after a restart every topic has every record (the
// memory topic too, as a memory broker's logs outlive a restart inside one
// process: e2e.TestTopicBackendRestartProcess for a new process).
func TestTopicBackendsOneBroker(t *testing.T) {
	t.Parallel()
	for _, def := range []string{"segment", "pebble"} {
		t.Run("broker="+def, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fast := func(c *config.Config) { c.LogCleanerBackoff = 100 * time.Millisecond }
			b := brokertest.StartIn(t, dir, def, fast)
			cl := client(t, b.Addr())
			adm := kadm.NewClient(cl)
			ctx := ctxFor(t, 3*time.Minute)

			for _, be := range topicBackends {
				createTopic(t, adm, "t-"+be, 2, map[string]*string{"storage.backend": kmsg.StringPtr(be)})
				createTopic(t, adm, "kv-"+be, 1, map[string]*string{"storage.backend": kmsg.StringPtr(be),
					"cleanup.policy": kmsg.StringPtr("compact"), "segment.bytes": kmsg.StringPtr("2048"),
					"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01")})
			}
			createTopic(t, adm, "t-default", 1, nil)

			// An unknown backend is refused at creation.
			r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"storage.backend": kmsg.StringPtr("rocksdb")}, "bad")
			if err == nil {
				err = r.Err
			}
			if !errors.Is(err, kerr.InvalidConfig) {
				t.Fatalf("create with storage.backend=rocksdb: %v, want INVALID_CONFIG", err)
			}

			const n = 1000
			for _, be := range topicBackends {
				produceN(t, cl, "t-"+be, 0, n)
				if got := consumeGroup(t, b.Addr(), "g-"+be, "t-"+be, n); got != n {
					t.Fatalf("%s: group consumed %d of %d", be, got, n)
				}
				committed := committedTotal(t, adm, "g-"+be, "t-"+be)
				if committed != n {
					t.Fatalf("%s: group committed %d, want %d", be, committed, n)
				}
			}

			// Compaction: 30 rounds over 20 keys; the cleaner leaves each
			// key once below the dense tail, with its latest value.
			const rounds, keys = 30, 20
			for _, be := range topicBackends {
				topic := "kv-" + be
				for round := 0; round < rounds; round++ {
					var recs []*kgo.Record
					for k := 0; k < keys; k++ {
						recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("k", k)), Value: []byte(fmt.Sprint("r", round))})
					}
					if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
				eventually(t, be+" compacted", func() bool {
					recs := readAll(t, b.Addr(), topic, rounds*keys)
					return len(recs) < rounds*keys/2 && compacted(t, recs, rounds*keys)
				})
				latest := map[string]string{}
				for _, r := range readAll(t, b.Addr(), topic, rounds*keys) {
					latest[string(r.Key)] = string(r.Value)
				}
				for k := 0; k < keys; k++ {
					if v := latest[fmt.Sprint("k", k)]; v != fmt.Sprint("r", rounds-1) {
						t.Fatalf("%s: key k%d latest %q, want r%d", be, k, v, rounds-1)
					}
				}
			}

			// DescribeConfigs: each topic's backend; the broker's for a
			// topic that set none.
			for _, be := range topicBackends {
				v, src := describeTopicConfig(t, adm, "t-"+be, "storage.backend")
				if v != be || src != kmsg.ConfigSourceDynamicTopicConfig {
					t.Fatalf("t-%s: storage.backend %q (%v), want %q (DYNAMIC_TOPIC_CONFIG)", be, v, src, be)
				}
			}
			if v, src := describeTopicConfig(t, adm, "t-default", "storage.backend"); v != def || src == kmsg.ConfigSourceDynamicTopicConfig {
				t.Fatalf("t-default: storage.backend %q (%v), want the broker's %q", v, src, def)
			}

			// A change is refused, by either alter API; the same value is
			// no change.
			for _, be := range topicBackends {
				other := topicBackends[(indexOf(topicBackends, be)+1)%len(topicBackends)]
				res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "storage.backend", Value: kmsg.StringPtr(other)}}, "t-"+be)
				if err == nil {
					err = res[0].Err
				}
				if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(res[0].ErrMessage, "cannot be changed") {
					t.Fatalf("t-%s: IncrementalAlterConfigs to %s: %v %q, want INVALID_CONFIG", be, other, err, res[0].ErrMessage)
				}
				res, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "storage.backend", Value: kmsg.StringPtr(other)}}, "t-"+be)
				if err == nil {
					err = res[0].Err
				}
				if !errors.Is(err, kerr.InvalidConfig) {
					t.Fatalf("t-%s: AlterConfigs to %s: %v, want INVALID_CONFIG", be, other, err)
				}
				res, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "storage.backend", Value: kmsg.StringPtr(be)}}, "t-"+be)
				if err == nil {
					err = res[0].Err
				}
				if err != nil {
					t.Fatalf("t-%s: set storage.backend to its value: %v", be, err)
				}
			}
			res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "storage.backend", Value: kmsg.StringPtr("memory")}}, "t-default")
			if err == nil {
				err = res[0].Err
			}
			if !errors.Is(err, kerr.InvalidConfig) {
				t.Fatalf("t-default: storage.backend to memory: %v, want INVALID_CONFIG", err)
			}

			// On disk: each topic's logs in its backend's store.
			checkLayout(t, dir, def)

			ends := map[string]int64{}
			for _, topic := range []string{"t-segment", "t-pebble", "t-memory", "kv-segment", "kv-pebble", "kv-memory"} {
				ends[topic] = endTotal(t, adm, topic)
			}
			cl.Close()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}

			b2 := brokertest.StartIn(t, dir, def, fast)
			cl2 := client(t, b2.Addr())
			adm2 := kadm.NewClient(cl2)
			for topic, end := range ends {
				got := endTotal(t, adm2, topic)
				if got != end {
					t.Fatalf("%s after restart: end offsets sum %d, want %d", topic, got, end)
				}
			}
			for _, be := range topicBackends {
				if got := len(readAll(t, b2.Addr(), "t-"+be, n)); got != n {
					t.Fatalf("t-%s after restart: read %d of %d", be, got, n)
				}
				if c := committedTotal(t, adm2, "g-"+be, "t-"+be); c != n {
					t.Fatalf("t-%s after restart: group committed %d, want %d", be, c, n)
				}
			}
			// Every topic still takes records, in its own backend.
			for _, be := range topicBackends {
				produceN(t, cl2, "t-"+be, n, 10)
				if v, _ := describeTopicConfig(t, adm2, "t-"+be, "storage.backend"); v != be {
					t.Fatalf("t-%s after restart: storage.backend %q", be, v)
				}
			}
			if got := len(readAll(t, b2.Addr(), "t-memory", n+10)); got != n+10 {
				t.Fatalf("t-memory after restart: read %d of %d produced", got, n+10)
			}
			checkLayout(t, dir, def)
		})
	}
}

// TestTopicBackendJBODMove: a replica of a pebble topic on a segment
// broker moved to its other log dir (AlterReplicaLogDirs) stays pebble:
// its log is in the target dir's pebble store, and every record is read
// back.
func TestTopicBackendJBODMove(t *testing.T) {
	dirs := twoDirs(t)
	cfg := brokertest.Config(dirs[0], "segment")
	cfg.LogDirs = dirs
	b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cl := client(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, time.Minute)
	createTopic(t, adm, "p", 1, map[string]*string{"storage.backend": kmsg.StringPtr("pebble")})
	const n = 500
	produceN(t, cl, "p", 0, n)
	from, _ := dirOf(describeLogDirs(t, cl), "p", 0)
	to := dirs[0]
	if from == dirs[0] {
		to = dirs[1]
	}
	req := kadm.AlterReplicaLogDirsReq{}
	req.Add(to, kadm.TopicsSet{"p": {0: {}}})
	res, err := adm.AlterBrokerReplicaLogDirs(ctx, 0, req)
	if err != nil {
		t.Fatal(err)
	}
	res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("AlterReplicaLogDirs: %v", r.Err)
		}
	})
	eventually(t, "the move done", func() bool {
		d, future := dirOf(describeLogDirs(t, cl), "p", 0)
		return d == to && !future
	})
	if _, err := os.Stat(filepath.Join(to, "storage-pebble")); err != nil {
		t.Fatalf("no pebble store in the target dir: %v", err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "p-0")); err == nil {
			t.Fatalf("%s holds a segment log of the pebble topic", d)
		}
	}
	if got := len(readAll(t, b.Addr(), "p", n)); got != n {
		t.Fatalf("read %d of %d after the move", got, n)
	}
	produceN(t, cl, "p", n, 10)
}

// TestTopicBackendCluster: in a three-broker cluster of segment brokers,
// a topic created with storage.backend=pebble (replication factor 3) is
// pebble on every replica, the followers' included: the config is in the
// topic's config znode, which every broker reads.
func TestTopicBackendCluster(t *testing.T) {
	srv := zktest.Start(t)
	var bs []*broker.Broker
	var dirs []string
	for id := int32(1); id <= 3; id++ {
		dir := t.TempDir()
		cfg := brokertest.Config(dir, "segment", func(c *config.Config) {
			c.BrokerID = id
			c.ZooKeeperConnect = srv.Addr() + "/sluice"
			c.ControlledShutdownEnable = false
			c.OffsetsTopicReplication = 1
			c.GroupInitialRebalanceDelay = 0
		})
		b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		bs = append(bs, b)
		dirs = append(dirs, dir)
	}
	brokertest.WaitForBrokers(t, 3, nil, bs...)
	cl := client(t, bs[0].Addr(), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, time.Minute)
	r, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"storage.backend": kmsg.StringPtr("pebble")}, "pb")
	if err == nil {
		err = r.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err = adm.CreateTopic(ctx, 1, 3, map[string]*string{"storage.backend": kmsg.StringPtr("nosuch")}, "bad")
	if err == nil {
		err = r.Err
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("create with storage.backend=nosuch: %v, want INVALID_CONFIG", err)
	}
	const n = 200
	eventually(t, "pb writable", func() bool {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "pb", Value: []byte("first")}).FirstErr() == nil
	})
	produceN(t, cl, "pb", 1, n-1)
	// Every replica holds the records, in a pebble store.
	for i, dir := range dirs {
		eventually(t, fmt.Sprintf("broker %d's replica", i+1), func() bool {
			_, err := os.Stat(filepath.Join(dir, "storage-pebble"))
			return err == nil
		})
		if _, err := os.Stat(filepath.Join(dir, "pb-0")); err == nil {
			t.Fatalf("broker %d holds a segment log of the pebble topic", i+1)
		}
	}
	// The followers caught up: the ISR is whole, so each pebble replica
	// has every record.
	eventually(t, "a full ISR", func() bool {
		md, err := adm.Metadata(ctx, "pb")
		if err != nil {
			return false
		}
		p := md.Topics["pb"].Partitions[0]
		return len(p.ISR) == 3
	})
	if got := len(readAll(t, bs[0].Addr(), "pb", n)); got != n {
		t.Fatalf("read %d of %d", got, n)
	}
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "storage.backend", Value: kmsg.StringPtr("segment")}}, "pb")
	if err == nil {
		err = res[0].Err
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("change of storage.backend: %v, want INVALID_CONFIG", err)
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func createTopic(t *testing.T, adm *kadm.Client, name string, parts int32, configs map[string]*string) {
	t.Helper()
	r, err := adm.CreateTopic(ctxFor(t, 30*time.Second), parts, 1, configs, name)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// produceN produces records from..from+count-1 to topic, key and value the
// record's number.
func produceN(t *testing.T, cl *kgo.Client, topic string, from, count int) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	var recs []*kgo.Record
	for i := from; i < from+count; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint("v", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// consumeGroup consumes topic in group until it has want records (or the
// test's deadline), commits, and returns how many it read.
func consumeGroup(t *testing.T, addr, group, topic string, want int) int {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	cons := client(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	seen := map[string]bool{}
	for len(seen) < want && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != "v"+string(r.Key) {
				t.Fatalf("%s: record %q=%q", topic, r.Key, r.Value)
			}
			seen[string(r.Key)] = true
		})
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("%s: commit: %v", group, err)
	}
	cons.Close()
	return len(seen)
}

func committedTotal(t *testing.T, adm *kadm.Client, group, topic string) int64 {
	t.Helper()
	offs, err := adm.FetchOffsets(ctxFor(t, 30*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			total += o.At
		}
	})
	return total
}

func endTotal(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctxFor(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("%s-%d end offset: %v", o.Topic, o.Partition, o.Err)
		}
		total += o.Offset
	})
	return total
}

// readAll reads topic from the start of every partition up to its end
// offsets (at most max records).
func readAll(t *testing.T, addr, topic string, max int) []*kgo.Record {
	t.Helper()
	adm := kadm.NewClient(client(t, addr))
	ends, err := adm.ListEndOffsets(ctxFor(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var out []*kgo.Record
	if len(left) == 0 {
		return out
	}
	cons := client(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cons.Close()
	ctx := ctxFor(t, time.Minute)
	for len(left) > 0 && len(out) <= max && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	if len(left) > 0 {
		t.Fatalf("%s: partitions %v not read to their end", topic, left)
	}
	return out
}

// compacted reports whether recs (one partition, offsets [?, end)) look
// compacted: below the dense tail each key appears at most once.
func compacted(t *testing.T, recs []*kgo.Record, end int) bool {
	t.Helper()
	x := int64(end)
	for i := len(recs) - 1; i >= 0 && recs[i].Offset == x-1; i-- {
		x--
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Offset < x {
			if seen[string(r.Key)] {
				return false
			}
			seen[string(r.Key)] = true
		}
	}
	return x < int64(end)
}

func describeTopicConfig(t *testing.T, adm *kadm.Client, topic, key string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxFor(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue(), c.Source
		}
	}
	t.Fatalf("%s: no %s described", topic, key)
	return "", 0
}

// checkLayout checks where each t-<backend> topic's logs are in dir, a
// broker whose own backend is def: the segment topic's partition dirs at
// the root (def segment) or in storage-segment, the pebble topic's in a
// pebble store (the root's, or storage-pebble) and never as partition
// dirs, and the memory topic's nowhere on disk.
func checkLayout(t *testing.T, dir, def string) {
	t.Helper()
	segRoot := dir
	if def != "segment" {
		segRoot = filepath.Join(dir, "storage-segment")
	}
	for _, p := range []string{"t-segment-0", "t-segment-1", "kv-segment-0"} {
		if fi, err := os.Stat(filepath.Join(segRoot, p)); err != nil || !fi.IsDir() {
			t.Errorf("segment topic: no partition dir %s in %s: %v", p, segRoot, err)
		}
	}
	if def != "pebble" {
		if m, _ := filepath.Glob(filepath.Join(dir, "storage-pebble", "MANIFEST-*")); len(m) == 0 {
			t.Errorf("no pebble store in %s", dir)
		}
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() && (strings.HasPrefix(name, "t-pebble-") || strings.HasPrefix(name, "t-memory-") ||
			strings.HasPrefix(name, "kv-pebble-") || strings.HasPrefix(name, "kv-memory-")) {
			t.Errorf("a partition dir of a pebble or memory topic: %s", path)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dir, "storage-"+def)); err == nil {
		t.Errorf("a store of the broker's own backend %s outside the root", def)
	}
}
