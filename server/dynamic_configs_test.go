package server_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/internal/zktest"
)

// setBroker sets key=value dynamically on broker ids (none: the
// cluster-wide default) and fails the test on any error.
func setBroker(t *testing.T, adm *kadm.Client, op kadm.IncrementalOp, key, value string, ids ...int32) {
	t.Helper()
	ac := kadm.AlterConfig{Op: op, Name: key}
	if op != kadm.DeleteConfig {
		ac.Value = kadm.StringPtr(value)
	}
	resps, err := adm.AlterBrokerConfigs(testCtx(t, 10*time.Second), []kadm.AlterConfig{ac}, ids...)
	if err == nil {
		for _, r := range resps {
			if r.Err != nil {
				err = errors.Join(err, r.Err, errors.New(r.ErrMessage))
			}
		}
	}
	if err != nil {
		t.Fatalf("alter broker %v %s=%s: %v", ids, key, value, err)
	}
}

// brokerConfigOf returns key as broker id (or the default, "") describes it.
func brokerConfigOf(t *testing.T, adm *kadm.Client, key string, ids ...int32) (kadm.Config, bool) {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(testCtx(t, 10*time.Second), ids...)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe broker %v: %v %v", ids, err, rcs)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == key {
			return c, true
		}
	}
	return kadm.Config{}, false
}

// produceSize produces one record of n bytes to topic and returns the
// error.
func produceSize(t *testing.T, cl *kgo.Client, topic string, n int) error {
	t.Helper()
	return cl.ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Topic: topic, Value: randomBytes(n)}).FirstErr()
}

// randomBytes returns n bytes no codec shrinks (the client compresses).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

type synonymT struct {
	key, value string
	src        kmsg.ConfigSource
}

func synonymsOf(c kadm.Config) []synonymT {
	var out []synonymT
	for _, s := range c.Synonyms {
		v := ""
		if s.Value != nil {
			v = *s.Value
		}
		out = append(out, synonymT{s.Key, v, s.Source})
	}
	return out
}

// TestDynamicBrokerConfigs: IncrementalAlterConfigs on the broker changes
// message.max.bytes (a topic default) at once for a topic without an
// override; this broker's value beats the cluster-wide default, deleting
// it falls back to the default; DescribeConfigs shows each source and the
// synonyms in Kafka's order, on the broker and on the topic; the default
// resource lists only what it sets; and the configs survive a restart.
func TestDynamicBrokerConfigs(t *testing.T) {
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, "segment")
	cl := newClient(t, b.Addr(), kgo.RecordRetries(0), kgo.ProducerBatchMaxBytes(1<<20))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "dyn", 1, nil)
	if err := produceSize(t, cl, "dyn", 5000); err != nil {
		t.Fatalf("5000-byte record before any change: %v", err)
	}

	setBroker(t, adm, kadm.SetConfig, "message.max.bytes", "2000", 0)
	if err := produceSize(t, cl, "dyn", 5000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("5000-byte record with message.max.bytes=2000: %v, want MESSAGE_TOO_LARGE", err)
	}
	setBroker(t, adm, kadm.SetConfig, "message.max.bytes", "4000")
	c, _ := brokerConfigOf(t, adm, "message.max.bytes", 0)
	if c.MaybeValue() != "2000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("message.max.bytes = %q %v, want 2000 DYNAMIC_BROKER_CONFIG", c.MaybeValue(), c.Source)
	}
	want := []synonymT{
		{"message.max.bytes", "2000", kmsg.ConfigSourceDynamicBrokerConfig},
		{"message.max.bytes", "4000", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig},
	}
	if got := synonymsOf(c); !equalSynonyms(got, want) {
		t.Fatalf("message.max.bytes synonyms %v, want %v", got, want)
	}
	// The topic without an override takes the broker's value, and says
	// where it comes from.
	rcs, err := adm.DescribeTopicConfigs(testCtx(t, 10*time.Second), "dyn")
	if err != nil || rcs[0].Err != nil {
		t.Fatalf("describe topic: %v %v", err, rcs)
	}
	for _, tc := range rcs[0].Configs {
		if tc.Key == "max.message.bytes" && (tc.MaybeValue() != "2000" || tc.Source != kmsg.ConfigSourceDynamicBrokerConfig || !equalSynonyms(synonymsOf(tc), want)) {
			t.Fatalf("topic max.message.bytes = %q %v %v", tc.MaybeValue(), tc.Source, synonymsOf(tc))
		}
	}
	// The default resource lists only what it sets.
	rcs, err = adm.DescribeBrokerConfigs(testCtx(t, 10*time.Second))
	if err != nil || len(rcs) != 1 || len(rcs[0].Configs) != 1 || rcs[0].Configs[0].Key != "message.max.bytes" ||
		rcs[0].Configs[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || rcs[0].Configs[0].MaybeValue() != "4000" {
		t.Fatalf("describe the default: %v %+v", err, rcs)
	}

	// Without this broker's value, the cluster-wide default applies.
	setBroker(t, adm, kadm.DeleteConfig, "message.max.bytes", "", 0)
	if err := produceSize(t, cl, "dyn", 3000); err != nil {
		t.Fatalf("3000-byte record under the default 4000: %v", err)
	}
	if err := produceSize(t, cl, "dyn", 5000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("5000-byte record under the default 4000: %v", err)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// Stored: a restart keeps the default.
	b = brokertest.StartIn(t, dir, "segment")
	cl = newClient(t, b.Addr(), kgo.RecordRetries(0), kgo.ProducerBatchMaxBytes(1<<20))
	adm = kadm.NewClient(cl)
	if c, _ := brokerConfigOf(t, adm, "message.max.bytes", 0); c.MaybeValue() != "4000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("after restart: message.max.bytes = %q %v", c.MaybeValue(), c.Source)
	}
	if err := produceSize(t, cl, "dyn", 5000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("after restart, 5000-byte record: %v", err)
	}
}

func equalSynonyms(a, b []synonymT) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDynamicRetention: a cluster-wide log.retention.ms reaches a topic
// without an override, and retention deletes by it without a restart.
func TestDynamicRetention(t *testing.T) {
	b := brokertest.Start(t, "segment", func(c *configT) { c.LogRetentionCheck = 20 * time.Millisecond })
	cl := newClient(t, b.Addr(), kgo.RecordRetries(0))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "old", 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024")})
	ctx := testCtx(t, 30*time.Second)
	hourAgo := time.Now().Add(-time.Hour)
	for range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "old", Timestamp: hourAgo, Value: bytes.Repeat([]byte{'r'}, 600)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	start := func() int64 {
		los, err := adm.ListStartOffsets(ctx, "old")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := los.Lookup("old", 0)
		return o.Offset
	}
	if s := start(); s != 0 {
		t.Fatalf("start offset %d before the change, want 0 (retention 7 days)", s)
	}
	setBroker(t, adm, kadm.SetConfig, "log.retention.ms", "60000")
	for start() == 0 { // retention runs every 20 ms; the test's deadline bounds the wait
		if ctx.Err() != nil {
			t.Fatal("old segments never deleted under log.retention.ms=60000")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDynamicMaxConnections: lowering max.connections holds back a new
// connection until one closes; raising it lets a waiting one in.
func TestDynamicMaxConnections(t *testing.T) {
	b := brokertest.Start(t, "memory")
	admin := dialRaw(t, b.Addr())
	other := dialRaw(t, b.Addr())
	ping(t, admin)
	ping(t, other)
	setMax := func(v string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "max.connections", kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		resp := admin.Do(req).(*kmsg.IncrementalAlterConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("set max.connections=%s: %+v", v, resp.Resources)
		}
	}
	setMax("2")
	extra := dialRaw(t, b.Addr())
	corr := expectNoAnswer(t, extra, 300*time.Millisecond)
	other.NetConn().Close()
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	extra.Recv(corr, resp) // served once a slot freed

	waiting := dialRaw(t, b.Addr())
	corr = expectNoAnswer(t, waiting, 300*time.Millisecond)
	setMax("3")
	waiting.Recv(corr, resp) // the raised limit lets it in
}

// TestDynamicBrokerConfigRefusals: Kafka's answers to what may not be set
// dynamically, to bad values and to another broker's id; nothing refused
// is stored, and validate_only stores nothing.
func TestDynamicBrokerConfigRefusals(t *testing.T) {
	b := brokertest.Start(t, "memory")
	rc := dialRaw(t, b.Addr())
	alter := func(name string, validateOnly bool, kvs ...[2]string) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		for _, kv := range kvs {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp := rc.Do(req).(*kmsg.IncrementalAlterConfigsResponse)
		if len(resp.Resources) != 1 {
			t.Fatalf("%d resources answered", len(resp.Resources))
		}
		msg := ""
		if m := resp.Resources[0].ErrorMessage; m != nil {
			msg = *m
		}
		return resp.Resources[0].ErrorCode, msg
	}
	for _, tc := range []struct {
		name     string
		resource string
		kvs      [][2]string
		msg      string
	}{
		{"static key", "0", [][2]string{{"log.dirs", "/tmp/x"}}, "Cannot update these configs dynamically: Set(log.dirs)"},
		{"static keys at the default", "", [][2]string{{"log.retention.hours", "1"}, {"broker.id", "3"}, {"message.max.bytes", "10"}},
			"Cannot update these configs dynamically: Set(broker.id, log.retention.hours)"},
		{"unknown key", "0", [][2]string{{"no.such.key", "1"}}, "Cannot update these configs dynamically: Set(no.such.key)"},
		{"not a listener limit", "0", [][2]string{{"listener.name.plaintext.ssl.key.password", "x"}},
			"Cannot update these configs dynamically: Set(listener.name.plaintext.ssl.key.password)"},
		{"huge value", "0", [][2]string{{"message.max.bytes", "99999999999999999999"}},
			`Invalid value 99999999999999999999 for configuration message.max.bytes: "99999999999999999999" is not an integer`},
		{"out of range", "", [][2]string{{"log.cleaner.min.cleanable.ratio", "2"}},
			"Invalid value 2 for configuration log.cleaner.min.cleanable.ratio: 2 is out of range [0, 1]"},
		{"relation", "0", [][2]string{{"message.max.bytes", "200000000"}},
			"message.max.bytes: 200000000 exceeds socket.request.max.bytes 104857600"},
		{"cleaner threads doubled and more", "0", [][2]string{{"log.cleaner.threads", "2147483647"}},
			"Invalid dynamic configuration: Log cleaner threads cannot be increased to more than double the current value 1"},
		{"io threads to zero", "", [][2]string{{"num.io.threads", "0"}},
			"Invalid dynamic configuration: Dynamic thread count update validation failed for num.io.threads=0, value should be at least 1"},
		{"another broker", "7", [][2]string{{"message.max.bytes", "1000"}}, "Unexpected broker id, expected 0, but received 7"},
		{"not an id", "abc", [][2]string{{"message.max.bytes", "1000"}}, "Node id must be an integer, but it is: abc"},
		{"duplicate key", "0", [][2]string{{"message.max.bytes", "1000"}, {"message.max.bytes", "2000"}}, "Error due to duplicate config keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := alter(tc.resource, false, tc.kvs...)
			if kerr.ErrorForCode(code) != kerr.InvalidRequest || msg != tc.msg {
				t.Fatalf("got %v %q, want INVALID_REQUEST %q", kerr.ErrorForCode(code), msg, tc.msg)
			}
		})
	}
	// Hostile sizes: a 30 KB value is refused without being echoed
	// whole; a layer of made-up listeners is refused past 1000 keys.
	huge := strings.Repeat("9", 30000) // an int16 string length for v0
	if code, msg := alter("0", false, [2]string{"log.retention.ms", huge}); kerr.ErrorForCode(code) != kerr.InvalidRequest || len(msg) > 400 ||
		!strings.HasPrefix(msg, "Invalid value 999") {
		t.Fatalf("30 KB value: %v, %d-byte message %.80q", kerr.ErrorForCode(code), len(msg), msg)
	}
	var many [][2]string
	for i := range 1001 {
		many = append(many, [2]string{"listener.name.l" + strconv.Itoa(i) + ".max.connections", "5"})
	}
	if code, msg := alter("0", false, many...); kerr.ErrorForCode(code) != kerr.InvalidRequest || msg != "Too many dynamic configs: 1001, at most 1000" {
		t.Fatalf("1001 keys: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alter("0", true, [2]string{"message.max.bytes", "1000"}); code != 0 {
		t.Fatalf("validate only: %d %s", code, msg)
	}
	// Nothing above was stored: the broker describes no dynamic config.
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, name := range []string{"0", "", "7"} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		req.Resources = append(req.Resources, rr)
	}
	resp := rc.Do(req).(*kmsg.DescribeConfigsResponse)
	for _, c := range resp.Resources[0].Configs {
		if c.Source == kmsg.ConfigSourceDynamicBrokerConfig || c.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			t.Errorf("%s stored: %v", c.Name, c.Source)
		}
	}
	if r := resp.Resources[1]; r.ErrorCode != 0 || len(r.Configs) != 0 {
		t.Errorf("default resource: %+v", r)
	}
	if r := resp.Resources[2]; kerr.ErrorForCode(r.ErrorCode) != kerr.InvalidRequest || r.ErrorMessage == nil ||
		*r.ErrorMessage != "Unexpected broker id, expected 0 or empty string, but received 7" {
		t.Errorf("describe broker 7: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
}

// TestDynamicBrokerConfigsCluster: a cluster-wide default set through one
// broker reaches the other through ZooKeeper (/config/brokers/<default>
// and its change notification) and applies there without a restart; a
// per-broker value stays on its broker.
func TestDynamicBrokerConfigsCluster(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 2, "memory", zk.Addr())
	cl := newClient(t, bs[0].Addr(), kgo.RecordRetries(0), kgo.ProducerBatchMaxBytes(1<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 30*time.Second)
	// Two partitions, one replica each: one led by each broker.
	resp, err := adm.CreateTopic(ctx, 2, 1, nil, "spread")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	setBroker(t, adm, kadm.SetConfig, "message.max.bytes", "3000")
	setBroker(t, adm, kadm.SetConfig, "log.retention.ms", "120000", 1)
	for {
		c, _ := brokerConfigOf(t, adm, "message.max.bytes", 2)
		if c.MaybeValue() == "3000" && c.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("broker 2 never applied the default: %q %v", c.MaybeValue(), c.Source)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, _ := brokerConfigOf(t, adm, "log.retention.ms", 2); c.Source == kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("broker 1's own log.retention.ms applied on broker 2")
	}
	if c, _ := brokerConfigOf(t, adm, "log.retention.ms", 1); c.MaybeValue() != "120000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("broker 1 log.retention.ms = %q %v", c.MaybeValue(), c.Source)
	}
	md, err := adm.Metadata(ctx, "spread")
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]bool{}
	for _, p := range md.Topics["spread"].Partitions {
		leaders[p.Leader] = true
		rec := &kgo.Record{Topic: "spread", Partition: p.Partition, Value: randomBytes(5000)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("5000-byte record to partition %d (leader %d) under the default 3000: %v", p.Partition, p.Leader, err)
		}
	}
	if !leaders[1] || !leaders[2] {
		t.Fatalf("leaders %v: want both brokers", leaders)
	}

	// A broker 2 that starts later (here: a new one, with an empty log
	// dir) reads the stored default from ZooKeeper at start.
	if err := bs[1].Close(); err != nil {
		t.Fatal(err)
	}
	b2 := brokertest.Start(t, "memory", func(c *configT) {
		c.BrokerID = 2
		c.ZooKeeperConnect = zk.Addr() + "/sluice"
		c.ControlledShutdownEnable = false
		c.OffsetsTopicReplication = 1
	})
	brokertest.WaitForBrokers(t, 2, nil, b2)
	cl2 := newClient(t, b2.Addr())
	if c, _ := brokerConfigOf(t, kadm.NewClient(cl2), "message.max.bytes", 2); c.MaybeValue() != "3000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("restarted broker 2: message.max.bytes = %q %v", c.MaybeValue(), c.Source)
	}
}

// TestDynamicBrokerConfigOps: APPEND and SUBTRACT work on a broker list
// key from its default, as Kafka's prepareIncrementalConfigs; APPEND on a
// non-list key is INVALID_CONFIG; legacy AlterConfigs replaces the whole
// layer and refuses a null value (INVALID_REQUEST, Kafka's message).
func TestDynamicBrokerConfigOps(t *testing.T) {
	b := brokertest.Start(t, "memory")
	rc := dialRaw(t, b.Addr())
	incremental := func(op kmsg.IncrementalAlterConfigOp, key, value string) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = key, op, kmsg.StringPtr(value)
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		r := rc.Do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return r.ErrorCode, msg
	}
	layer := func() map[string]string {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeBroker
		req.Resources = append(req.Resources, rr)
		out := map[string]string{}
		for _, c := range rc.Do(req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
			out[c.Name] = *c.Value
		}
		return out
	}
	if code, msg := incremental(kmsg.IncrementalAlterConfigOpAppend, "log.cleanup.policy", "compact"); code != 0 {
		t.Fatalf("append: %d %s", code, msg)
	}
	if got := layer()["log.cleanup.policy"]; got != "delete,compact" {
		t.Fatalf("after APPEND compact: %q, want delete,compact", got)
	}
	if code, msg := incremental(kmsg.IncrementalAlterConfigOpSubtract, "log.cleanup.policy", "delete"); code != 0 {
		t.Fatalf("subtract: %d %s", code, msg)
	}
	if got := layer()["log.cleanup.policy"]; got != "compact" {
		t.Fatalf("after SUBTRACT delete: %q, want compact", got)
	}
	if code, msg := incremental(kmsg.IncrementalAlterConfigOpAppend, "message.max.bytes", "1"); kerr.ErrorForCode(code) != kerr.InvalidConfig ||
		msg != "Config value append is not allowed for config key: message.max.bytes" {
		t.Fatalf("append to a non-list key: %v %q", kerr.ErrorForCode(code), msg)
	}

	legacy := func(kvs map[string]*string) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeBroker
		for k, v := range kvs {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, v
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		r := rc.Do(req).(*kmsg.AlterConfigsResponse).Resources[0]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return r.ErrorCode, msg
	}
	if code, msg := legacy(map[string]*string{"log.retention.ms": nil}); kerr.ErrorForCode(code) != kerr.InvalidRequest || msg != "Null value not supported for : log.retention.ms" {
		t.Fatalf("null value: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := legacy(map[string]*string{"log.retention.ms": kmsg.StringPtr("5000")}); code != 0 {
		t.Fatalf("legacy alter: %d %s", code, msg)
	}
	if got := layer(); len(got) != 1 || got["log.retention.ms"] != "5000" {
		t.Fatalf("legacy AlterConfigs left the layer %v, want only log.retention.ms=5000", got)
	}
}
