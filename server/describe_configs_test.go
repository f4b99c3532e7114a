package server_test

import (
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// readmeConfigKeys returns the broker and topic keys README.md documents.
func readmeConfigKeys(t *testing.T) (broker, topic []string) {
	t.Helper()
	md, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	b, tp, err := config.ParseDocTables(string(md))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range b {
		broker = append(broker, r.Key)
	}
	for _, r := range tp {
		topic = append(topic, r.Key)
	}
	sort.Strings(broker)
	sort.Strings(topic)
	return broker, topic
}

func configKeys(cs []kadm.Config) []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Key)
	}
	sort.Strings(names)
	return names
}

// TestDescribeBrokerConfigsEveryKey: DescribeConfigs on broker 0 lists
// exactly the broker keys README documents, with STATIC_BROKER_CONFIG for
// what was set (even at its default value) and DEFAULT_CONFIG otherwise,
// all read-only with their type and documentation; a password is
// described sensitive and without its value, in its synonyms too.
func TestDescribeBrokerConfigsEveryKey(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		for _, kv := range [][2]string{{"ssl.key.password", "hunter2"}, {"log.retention.ms", "3600000"}, {"num.io.threads", "8"}} {
			if err := c.Set(kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
	})
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 10*time.Second)
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe broker 0: %v %v", err, rcs)
	}
	documented, _ := readmeConfigKeys(t)
	if got := configKeys(rcs[0].Configs); !slices.Equal(got, documented) {
		t.Fatalf("described keys differ from README's:\ndescribed %v\nREADME    %v", got, documented)
	}
	got := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		got[c.Key] = c
	}
	for _, want := range []struct {
		key, value string
		null       bool
		src        kmsg.ConfigSource
	}{
		{"log.retention.ms", "3600000", false, kmsg.ConfigSourceStaticBrokerConfig},
		{"num.io.threads", "8", false, kmsg.ConfigSourceStaticBrokerConfig},
		{"num.network.threads", "3", false, kmsg.ConfigSourceDefaultConfig},
		{"log.segment.bytes", "1073741824", false, kmsg.ConfigSourceDefaultConfig},
		{"zookeeper.connect", "", true, kmsg.ConfigSourceDefaultConfig},
		{"ssl.key.password", "", true, kmsg.ConfigSourceStaticBrokerConfig},
	} {
		c := got[want.key]
		if (c.Value == nil) != want.null || c.MaybeValue() != want.value || c.Source != want.src {
			t.Errorf("%s = %v %q source %v, want null %v %q %v", want.key, c.Value == nil, c.MaybeValue(), c.Source, want.null, want.value, want.src)
		}
	}
	pw := got["ssl.key.password"]
	if !pw.Sensitive || pw.Value != nil {
		t.Fatalf("ssl.key.password: sensitive %v value %v", pw.Sensitive, pw.Value)
	}
	for _, s := range pw.Synonyms {
		if s.Value != nil {
			t.Fatalf("ssl.key.password synonym %s carries a value", s.Key)
		}
	}
	// Kafka's order: every source in precedence order, and within one the
	// synonyms log.retention.ms, .minutes, .hours.
	if syn := got["log.retention.ms"].Synonyms; len(syn) != 3 || syn[0].Source != kmsg.ConfigSourceStaticBrokerConfig ||
		syn[1].Source != kmsg.ConfigSourceDefaultConfig || syn[1].Value == nil || *syn[1].Value != "604800000" ||
		syn[2].Key != "log.retention.hours" || syn[2].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("log.retention.ms synonyms: %+v", syn)
	}

	// v4 with documentation: every key typed and documented, read-only
	// unless dynamic.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe v4: %v %+v", err, resp)
	}
	for _, c := range resp.Resources[0].Configs {
		k, ok := config.Lookup(c.Name)
		if !ok || c.ReadOnly != (k.Dynamic == config.Static) || c.ConfigType != kmsg.ConfigType(k.Type) || c.Documentation == nil || *c.Documentation == "" || c.IsSensitive != k.Sensitive {
			t.Errorf("%s: read-only %v type %v sensitive %v documented %v", c.Name, c.ReadOnly, c.ConfigType, c.IsSensitive, c.Documentation != nil)
		}
		if c.IsSensitive && c.Value != nil {
			t.Errorf("%s: sensitive with a value", c.Name)
		}
	}
	if n := len(resp.Resources[0].Configs); n != len(documented) {
		t.Fatalf("v4 described %d keys, README documents %d", n, len(documented))
	}

	// A static broker key is refused, with Kafka's message.
	ir := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ires := kmsg.NewIncrementalAlterConfigsRequestResource()
	ires.ResourceType, ires.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	op.Name, op.Value = "num.partitions", kmsg.StringPtr("3")
	ires.Configs = append(ires.Configs, op)
	ir.Resources = append(ir.Resources, ires)
	iresp, err := ir.RequestWith(ctx, cl)
	if err != nil || len(iresp.Resources) != 1 || kerr.ErrorForCode(iresp.Resources[0].ErrorCode) != kerr.InvalidRequest ||
		iresp.Resources[0].ErrorMessage == nil || *iresp.Resources[0].ErrorMessage != "Cannot update these configs dynamically: Set(num.partitions)" {
		t.Fatalf("alter broker config: %v %+v", err, iresp)
	}
}

// TestDescribeTopicConfigsEveryKey: a topic describes every topic key
// README documents; an override is DYNAMIC_TOPIC_CONFIG with the broker
// key and its default as synonyms, a key the broker set is
// STATIC_BROKER_CONFIG, the rest DEFAULT_CONFIG.
func TestDescribeTopicConfigsEveryKey(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		if err := c.Set("log.retention.ms", "3600000"); err != nil {
			t.Fatal(err)
		}
	})
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 10*time.Second)
	createTopic(t, adm, "described", 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1048576")})
	rcs, err := adm.DescribeTopicConfigs(ctx, "described")
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe topic: %v %v", err, rcs)
	}
	_, documented := readmeConfigKeys(t)
	if got := configKeys(rcs[0].Configs); !slices.Equal(got, documented) {
		t.Fatalf("described topic keys differ from README's:\ndescribed %v\nREADME    %v", got, documented)
	}
	got := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		got[c.Key] = c
		if c.Sensitive || c.Value == nil {
			t.Errorf("%s: sensitive %v value %v", c.Key, c.Sensitive, c.Value)
		}
	}
	type syn struct {
		key, value string
		src        kmsg.ConfigSource
	}
	for _, want := range []struct {
		key, value string
		src        kmsg.ConfigSource
		synonyms   []syn
	}{
		{"segment.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig, []syn{
			{"segment.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig},
			{"log.segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig}}},
		{"retention.ms", "3600000", kmsg.ConfigSourceStaticBrokerConfig, []syn{
			{"log.retention.ms", "3600000", kmsg.ConfigSourceStaticBrokerConfig},
			{"log.retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig},
			{"log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig}}},
		{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig, []syn{
			{"log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig}}},
		{"compression.type", "producer", kmsg.ConfigSourceDefaultConfig, []syn{
			{"compression.type", "producer", kmsg.ConfigSourceDefaultConfig}}},
	} {
		c := got[want.key]
		if c.MaybeValue() != want.value || c.Source != want.src {
			t.Errorf("%s = %q source %v, want %q %v", want.key, c.MaybeValue(), c.Source, want.value, want.src)
		}
		var gotSyn []syn
		for _, s := range c.Synonyms {
			v := ""
			if s.Value != nil {
				v = *s.Value
			}
			gotSyn = append(gotSyn, syn{s.Key, v, s.Source})
		}
		if !slices.Equal(gotSyn, want.synonyms) {
			t.Errorf("%s synonyms %v, want %v", want.key, gotSyn, want.synonyms)
		}
	}
}
