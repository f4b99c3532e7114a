package broker_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/faultfs"
)

const alterLogDirsRate = "replica.alter.log.dirs.io.max.bytes.per.second"

// futureSize returns the size DescribeLogDirs gives the future replica of
// topic-part, and whether there is one.
func futureSize(resp *kmsg.DescribeLogDirsResponse, topic string, part int32) (int64, bool) {
	for _, d := range resp.Dirs {
		for _, tp := range d.Topics {
			for _, p := range tp.Partitions {
				if tp.Topic == topic && p.Partition == part && p.IsFuture {
					return p.Size, true
				}
			}
		}
	}
	return 0, false
}

// brokerConfig returns the value and source DescribeConfigs gives key on
// broker 0.
func brokerConfig(t *testing.T, adm *kadm.Client, key string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(ctxFor(t, 30*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == key {
			return c.MaybeValue(), c.Source
		}
	}
	t.Fatalf("DescribeConfigs lacks %s", key)
	return "", 0
}

// TestJBODMoveThrottleIsDynamic: replica.alter.log.dirs.io.max.bytes.per.second
// is a dynamic broker config, as in Kafka. Set cluster-wide to 1 KiB/s, it
// holds a move of 256 KiB back (it would take minutes); raised on the
// broker itself while the future replica copies, the same move finishes
// without a restart. DescribeConfigs gives each step's source
// (DYNAMIC_DEFAULT_BROKER_CONFIG, then DYNAMIC_BROKER_CONFIG).
func TestJBODMoveThrottleIsDynamic(t *testing.T) {
	dirs := twoDirs(t)
	b := jbodBroker(t, dirs, faultfs.New())
	// Uncompressed batches of 16 KiB: the copier steps a batch at least.
	cl := client(t, b.Addr(), kgo.DefaultProduceTopic("m"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	adm := kadm.NewClient(cl)
	if v, src := brokerConfig(t, adm, alterLogDirsRate); v != "9223372036854775807" || src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("%s before any change: %s (%v)", alterLogDirsRate, v, src)
	}
	low := "1024"
	if err := alterOne(adm.AlterBrokerConfigs(ctxFor(t, 30*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: alterLogDirsRate, Value: &low}})); err != nil {
		t.Fatalf("set %s cluster-wide: %v", alterLogDirsRate, err)
	}
	if v, src := brokerConfig(t, adm, alterLogDirsRate); v != low || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("%s set cluster-wide: %s (%v)", alterLogDirsRate, v, src)
	}
	if r, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 1, 1, nil, "m"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	const total = 256 << 10
	var batch []*kgo.Record
	for i := 0; len(batch)*1000 < total; i++ {
		batch = append(batch, &kgo.Record{Value: []byte(strconv.Itoa(i) + strings.Repeat("x", 1000))})
	}
	if err := cl.ProduceSync(ctxFor(t, 30*time.Second), batch...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	req := kadm.AlterReplicaLogDirsReq{}
	req.Add(dirs[1], kadm.TopicsSet{"m": {0: {}}})
	res, err := adm.AlterBrokerReplicaLogDirs(ctxFor(t, 30*time.Second), 0, req)
	if err != nil {
		t.Fatal(err)
	}
	res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("AlterReplicaLogDirs %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})
	var before int64
	eventually(t, "the future replica of m-0", func() bool {
		n, ok := futureSize(describeLogDirs(t, cl), "m", 0)
		before = n
		return ok
	})
	if before >= total {
		t.Fatalf("the future replica has %d bytes at 1 KiB/s already", before)
	}

	high := "1073741824"
	if err := alterOne(adm.AlterBrokerConfigs(ctxFor(t, 30*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: alterLogDirsRate, Value: &high}}, 0)); err != nil {
		t.Fatalf("set %s on broker 0: %v", alterLogDirsRate, err)
	}
	if v, src := brokerConfig(t, adm, alterLogDirsRate); v != high || src != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("%s set on the broker: %s (%v)", alterLogDirsRate, v, src)
	}
	// At 1 KiB/s the rest would take minutes: eventually's guard ends the
	// test then. (Right at the swap the moved replica may be listed before
	// it is reopened, with no size: its size is waited for too.)
	var after int64
	eventually(t, "m-0 moved to the second dir", func() bool {
		resp := describeLogDirs(t, cl)
		dir, future := dirOf(resp, "m", 0)
		after = 0
		for _, d := range resp.Dirs {
			for _, tp := range d.Topics {
				for _, p := range tp.Partitions {
					if tp.Topic == "m" && d.Dir == dirs[1] {
						after = p.Size
					}
				}
			}
		}
		return dir == dirs[1] && !future && after >= total
	})
	t.Logf("future replica: %d bytes before the change, %d moved in all", before, after)
}

// alterOne checks the answer of an alter configs request for one resource.
func alterOne(resps kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}
