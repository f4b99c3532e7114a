package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/record"
)

// TestCompactedTopicRequiresKeys: on a topic whose cleanup.policy includes
// compact a record without a key is INVALID_RECORD with Kafka's message,
// through franz-go (its default compression) and a raw uncompressed
// produce, while a keyed record is appended; altering the policy to delete
// (IncrementalAlterConfigs APPEND/SUBTRACT) lets key-less records in, and
// appending compact again refuses them, on the live topic.
func TestCompactedTopicRequiresKeys(t *testing.T) {
	b := brokertest.Start(t, "memory")
	cl := newClient(t, b.Addr(), kgo.RecordRetries(0))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "ck", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	ctx := testCtx(t, 30*time.Second)
	rc := dialRaw(t, b.Addr())

	produce := func(key []byte) error {
		t.Helper()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "ck", Partition: 0, Key: key, Value: []byte("v")}).FirstErr()
	}
	rawProduce := func(key []byte) (*kerr.Error, string) {
		t.Helper()
		batch := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]record.BuildRecord{{Key: []byte("k"), Value: []byte("a"), Timestamp: time.Now().UnixMilli()},
				{Key: key, Value: []byte("b"), Timestamp: time.Now().UnixMilli()}})
		resp := rc.Do(produceReq(9, -1, "ck", 0, batch)).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		msg := ""
		if p.ErrorMessage != nil {
			msg = *p.ErrorMessage
		}
		return kerr.TypedErrorForCode(p.ErrorCode), msg
	}
	alter := func(ops ...kadm.AlterConfig) {
		t.Helper()
		resp, err := adm.AlterTopicConfigs(ctx, ops, "ck")
		if err == nil {
			err = resp[0].Err
		}
		if err != nil {
			t.Fatalf("alter %+v: %v", ops, err)
		}
	}

	if err := produce(nil); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("key-less record on a compacted topic: %v, want INVALID_RECORD", err)
	}
	if err := produce([]byte("k1")); err != nil {
		t.Fatalf("keyed record on a compacted topic: %v", err)
	}
	if err := produce([]byte{}); err != nil {
		t.Fatalf("empty key on a compacted topic: %v", err)
	}
	if err, msg := rawProduce(nil); err != kerr.InvalidRecord || !strings.Contains(msg, "compacted topic cannot accept message without key") {
		t.Fatalf("raw key-less record: %v %q", err, msg)
	}
	if err, _ := rawProduce([]byte("k2")); err != nil {
		t.Fatalf("raw keyed records: %v", err)
	}

	alter(kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete")},
		kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact")})
	if v := describeTopicConfig(t, cl, "ck", "cleanup.policy"); v.Value != "delete" {
		t.Fatalf("cleanup.policy after APPEND delete, SUBTRACT compact: %q", v.Value)
	}
	if err := produce(nil); err != nil {
		t.Fatalf("key-less record after altering the topic to delete: %v", err)
	}
	if err, _ := rawProduce(nil); err != nil {
		t.Fatalf("raw key-less record after altering the topic to delete: %v", err)
	}

	alter(kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact")})
	if err := produce(nil); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("key-less record after altering to delete,compact: %v, want INVALID_RECORD", err)
	}
	ends, err := adm.ListEndOffsets(ctx, "ck")
	if err != nil {
		t.Fatal(err)
	}
	// k1, the empty key, 2 raw, 1 key-less, 2 raw key-less-allowed.
	if o, _ := ends.Lookup("ck", 0); o.Offset != 7 {
		t.Fatalf("end offset %d, want 7: a refused batch reached the log, or an accepted one did not", o.Offset)
	}
}

// TestCleanerTopicConfigsDescribed: DescribeConfigs reports the cleaner's
// topic configs with Kafka's defaults, types and synonyms, and an override
// as DYNAMIC_TOPIC_CONFIG.
func TestCleanerTopicConfigsDescribed(t *testing.T) {
	b := brokertest.Start(t, "memory")
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "cd", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact,delete"), "min.cleanable.dirty.ratio": kmsg.StringPtr("0.25")})
	for _, tc := range []struct {
		name, value, synonym string
		typ                  kmsg.ConfigType
		src                  kmsg.ConfigSource
	}{
		{"cleanup.policy", "compact,delete", "log.cleanup.policy", kmsg.ConfigTypeList, kmsg.ConfigSourceDynamicTopicConfig},
		{"min.cleanable.dirty.ratio", "0.25", "log.cleaner.min.cleanable.ratio", kmsg.ConfigTypeDouble, kmsg.ConfigSourceDynamicTopicConfig},
		{"delete.retention.ms", "86400000", "log.cleaner.delete.retention.ms", kmsg.ConfigTypeLong, kmsg.ConfigSourceDefaultConfig},
		{"min.compaction.lag.ms", "0", "log.cleaner.min.compaction.lag.ms", kmsg.ConfigTypeLong, kmsg.ConfigSourceDefaultConfig},
		{"max.compaction.lag.ms", "9223372036854775807", "log.cleaner.max.compaction.lag.ms", kmsg.ConfigTypeLong, kmsg.ConfigSourceDefaultConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := describeTopicConfig(t, cl, "cd", tc.name)
			if c.Value != tc.value || c.Source != tc.src || c.Type != tc.typ {
				t.Fatalf("%s = %q source %v type %v; want %q %v %v", tc.name, c.Value, c.Source, c.Type, tc.value, tc.src, tc.typ)
			}
			last := c.Synonyms[len(c.Synonyms)-1]
			if last.Name != tc.synonym || last.Source != kmsg.ConfigSourceDefaultConfig {
				t.Fatalf("%s synonyms %+v, want the default of %s last", tc.name, c.Synonyms, tc.synonym)
			}
		})
	}
}

// describedConfig is one described topic config.
type describedConfig struct {
	Value    string
	Source   kmsg.ConfigSource
	Type     kmsg.ConfigType
	Synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

// describeTopicConfig describes one config of topic, with synonyms.
func describeTopicConfig(t *testing.T, cl *kgo.Client, topic, name string) describedConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	res := resp.Resources[0]
	if err := kerr.ErrorForCode(res.ErrorCode); err != nil || len(res.Configs) != 1 {
		t.Fatalf("describe %s %s: %v, %d configs", topic, name, err, len(res.Configs))
	}
	c := res.Configs[0]
	return describedConfig{Value: *c.Value, Source: c.Source, Type: c.ConfigType, Synonyms: c.ConfigSynonyms}
}

// TestCleanerBrokerConfigsDescribed: the broker describes its log cleaner
// keys, Kafka's defaults as DEFAULT_CONFIG and a --set value as
// STATIC_BROKER_CONFIG.
func TestCleanerBrokerConfigsDescribed(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		for _, kv := range [][2]string{{"log.cleaner.threads", "2"}, {"log.cleanup.policy", "compact"}} {
			if err := c.Set(kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
	})
	cl := newClient(t, b.Addr(), kgo.RecordRetries(0))
	adm := kadm.NewClient(cl)
	rcs, err := adm.DescribeBrokerConfigs(testCtx(t, 10*time.Second), 0)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe broker: %v %v", err, rcs)
	}
	got := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		got[c.Key] = c
	}
	for _, want := range []struct {
		key, value string
		src        kmsg.ConfigSource
	}{
		{"log.cleanup.policy", "compact", kmsg.ConfigSourceStaticBrokerConfig},
		{"log.cleaner.threads", "2", kmsg.ConfigSourceStaticBrokerConfig},
		{"log.cleaner.enable", "true", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.dedupe.buffer.size", "134217728", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.backoff.ms", "15000", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.delete.retention.ms", "86400000", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.min.cleanable.ratio", "0.5", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.min.compaction.lag.ms", "0", kmsg.ConfigSourceDefaultConfig},
		{"log.cleaner.max.compaction.lag.ms", "9223372036854775807", kmsg.ConfigSourceDefaultConfig},
	} {
		if c, ok := got[want.key]; !ok || c.MaybeValue() != want.value || c.Source != want.src {
			t.Errorf("%s = %q source %v (present %v), want %q %v", want.key, c.MaybeValue(), c.Source, ok, want.value, want.src)
		}
	}
	// A topic without its own cleanup.policy takes the broker's: compact,
	// so a key-less record is refused.
	createTopic(t, adm, "bc", 1, nil)
	if c := describeTopicConfig(t, cl, "bc", "cleanup.policy"); c.Value != "compact" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("cleanup.policy of a topic on a log.cleanup.policy=compact broker: %q %v", c.Value, c.Source)
	}
	ctx := testCtx(t, 10*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bc", Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("key-less record on a topic compacted by the broker default: %v", err)
	}
}
