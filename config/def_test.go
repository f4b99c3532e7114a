package config

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

// TestTableDefaults: every key's Default is what its field holds under
// Default() and reads back the same; a key without a field is described
// as its Default; every default of a topic key passes the topic key's own
// validation.
func TestTableDefaults(t *testing.T) {
	def := Default()
	for _, k := range Keys() {
		t.Run(k.Name, func(t *testing.T) {
			if k.NoDefault && k.Default != "" {
				t.Fatalf("NoDefault with Default %q", k.Default)
			}
			v, src := def.Describe(k)
			if src != SourceDefaultConfig {
				t.Fatalf("source %d under Default(), want DEFAULT_CONFIG", src)
			}
			switch {
			case k.Sensitive:
				if v != nil {
					t.Fatalf("sensitive key described with value %q", *v)
				}
			case k.NoDefault:
				if v != nil {
					t.Fatalf("key without default described as %q", *v)
				}
			case v == nil || *v != k.Default:
				t.Fatalf("described as %v, want the table's default %q", v, k.Default)
			}
			if err := k.Validate(k.Default); err != nil && !k.NoDefault {
				t.Fatalf("default %q does not validate: %v", k.Default, err)
			}
			if k.Sensitive && k.Type != TypePassword {
				t.Fatalf("sensitive key of type %s", k.Type)
			}
			if k.Dynamic != Static && !k.NoDefault {
				if err := CheckDynamic(map[string]string{k.Name: k.Default}, true); err != nil {
					t.Fatalf("dynamic key refused dynamically at its default: %v", err)
				}
			}
			if k.Doc == "" {
				t.Fatalf("no documentation")
			}
		})
	}
	for _, tk := range TopicKeys() {
		v, synonym := TopicDefaultOf(tk)
		if err := tk.Validate(v); err != nil {
			t.Errorf("topic key %s: default %q (from %s) does not validate: %v", tk.Name, v, synonym, err)
		}
	}
}

// TestTopicSynonyms: each broker key's Topic names a topic key, every
// topic key but compression.type (Sluice takes no broker-level
// compression) has a broker synonym, and their defaults are Kafka's.
func TestTopicSynonyms(t *testing.T) {
	for _, k := range Keys() {
		if _, ok := LookupTopic(k.Topic); k.Topic != "" && !ok {
			t.Errorf("%s: topic synonym %s is not a topic key", k.Name, k.Topic)
		}
	}
	want := map[string][2]string{
		"cleanup.policy":                      {"log.cleanup.policy", "delete"},
		"compression.type":                    {"compression.type", "producer"},
		"delete.retention.ms":                 {"log.cleaner.delete.retention.ms", "86400000"},
		"flush.messages":                      {"log.flush.interval.messages", "9223372036854775807"},
		"max.compaction.lag.ms":               {"log.cleaner.max.compaction.lag.ms", "9223372036854775807"},
		"max.message.bytes":                   {"message.max.bytes", "1048588"},
		"message.timestamp.after.max.ms":      {"log.message.timestamp.after.max.ms", "9223372036854775807"},
		"message.timestamp.before.max.ms":     {"log.message.timestamp.before.max.ms", "9223372036854775807"},
		"message.timestamp.difference.max.ms": {"log.message.timestamp.difference.max.ms", "9223372036854775807"},
		"message.timestamp.type":              {"log.message.timestamp.type", "CreateTime"},
		"min.cleanable.dirty.ratio":           {"log.cleaner.min.cleanable.ratio", "0.5"},
		"min.compaction.lag.ms":               {"log.cleaner.min.compaction.lag.ms", "0"},
		"min.insync.replicas":                 {"min.insync.replicas", "1"},
		"retention.bytes":                     {"log.retention.bytes", "-1"},
		"retention.ms":                        {"log.retention.ms", "604800000"},
		"segment.bytes":                       {"log.segment.bytes", "1073741824"},
		"segment.ms":                          {"log.roll.ms", "604800000"},
		"storage.backend":                     {"storage.backend", "segment"}, // Sluice's own
	}
	// Tiered storage (KIP-405): Kafka's synonyms and defaults.
	want["local.retention.bytes"] = [2]string{"log.local.retention.bytes", "-2"}
	want["local.retention.ms"] = [2]string{"log.local.retention.ms", "-2"}
	for _, k := range []string{"remote.storage.enable", "remote.log.copy.disable", "remote.log.delete.on.disable"} {
		want[k] = [2]string{k, "false"}
	}
	// Confluent Server's schema validation keys have no broker synonym.
	for _, k := range []string{"confluent.key.schema.validation", "confluent.value.schema.validation"} {
		want[k] = [2]string{k, "false"}
	}
	for _, k := range []string{"confluent.key.subject.name.strategy", "confluent.value.subject.name.strategy"} {
		want[k] = [2]string{k, TopicNameStrategy}
	}
	// The replication throttles' replica lists have no broker synonym.
	want[LeaderThrottledReplicas] = [2]string{LeaderThrottledReplicas, ""}
	want[FollowerThrottledReplicas] = [2]string{FollowerThrottledReplicas, ""}
	if len(TopicKeys()) != len(want) {
		t.Errorf("%d topic keys, want %d", len(TopicKeys()), len(want))
	}
	for _, tk := range TopicKeys() {
		v, synonym := TopicDefaultOf(tk)
		if w := want[tk.Name]; synonym != w[0] || v != w[1] {
			t.Errorf("%s: default %q from %s, want %q from %s", tk.Name, v, synonym, w[1], w[0])
		}
	}
}

// TestDescribeSources: a key set by Load or Set is STATIC_BROKER_CONFIG
// even at its default value; a topic key takes its synonym's value and
// source; sensitive keys never show their value; Set on a copy leaves the
// original's sources alone.
func TestDescribeSources(t *testing.T) {
	c, err := Load("", []string{"num.partitions=1", "log.retention.hours=2", "ssl.key.password=hunter2",
		"listener.name.internal.plain.sasl.jaas.config=secret", "log.cleanup.policy=compact"})
	if err != nil {
		t.Fatal(err)
	}
	describe := func(c *Config, name string) (string, bool, Source) {
		k, ok := Lookup(name)
		if !ok {
			t.Fatalf("no key %s", name)
		}
		v, src := c.Describe(k)
		if v == nil {
			return "", false, src
		}
		return *v, true, src
	}
	for _, tc := range []struct {
		name  string
		value string
		has   bool
		src   Source
	}{
		{"num.partitions", "1", true, SourceStaticBroker},
		{"log.retention.hours", "2", true, SourceStaticBroker},
		{"log.retention.ms", "7200000", true, SourceStaticBroker}, // the effective value
		{"log.retention.minutes", "", false, SourceDefaultConfig},
		{"log.segment.bytes", "1073741824", true, SourceDefaultConfig},
		{"ssl.key.password", "", false, SourceStaticBroker},
		{"sasl.jaas.config", "", false, SourceDefaultConfig},
		{"zookeeper.connect", "", false, SourceDefaultConfig},
		{"num.io.threads", "8", true, SourceDefaultConfig},
	} {
		v, has, src := describe(&c, tc.name)
		if v != tc.value || has != tc.has || src != tc.src {
			t.Errorf("%s = %q (has %v) source %d, want %q (%v) %d", tc.name, v, has, src, tc.value, tc.has, tc.src)
		}
	}
	tk, _ := LookupTopic("cleanup.policy")
	if v, src, syn := c.TopicDefault(tk); v != "compact" || src != SourceStaticBroker || syn != "log.cleanup.policy" {
		t.Errorf("cleanup.policy default = %q %d from %s", v, src, syn)
	}
	tk, _ = LookupTopic("segment.bytes")
	if v, src, _ := c.TopicDefault(tk); v != "1073741824" || src != SourceDefaultConfig {
		t.Errorf("segment.bytes default = %q %d", v, src)
	}

	cp := c
	if err := cp.Set("num.io.threads", "16"); err != nil {
		t.Fatal(err)
	}
	if v, _, src := describe(&c, "num.io.threads"); v != "8" || src != SourceDefaultConfig {
		t.Errorf("Set on a copy changed the original: %q %d", v, src)
	}
	if v, _, src := describe(&cp, "num.io.threads"); v != "16" || src != SourceStaticBroker {
		t.Errorf("copy: %q %d", v, src)
	}
	// A field changed without Set is described as set.
	cp.MessageMaxBytes = 5
	if v, _, src := describe(&cp, "message.max.bytes"); v != "5" || src != SourceStaticBroker {
		t.Errorf("changed field: %q %d", v, src)
	}
}

// TestAliases: node.id and log.dir set broker.id and log.dirs, and are
// described under those names.
func TestAliases(t *testing.T) {
	c, err := Load("", []string{"node.id=3", "log.dir=/x"})
	if err != nil {
		t.Fatal(err)
	}
	if c.BrokerID != 3 || len(c.LogDirs) != 1 || c.LogDirs[0] != "/x" {
		t.Fatalf("aliases: broker %d dirs %v", c.BrokerID, c.LogDirs)
	}
	for _, name := range []string{"node.id", "log.dir"} {
		k, _ := Lookup(name)
		if v, src := c.Describe(k); k.Name == name || v == nil || src != SourceStaticBroker {
			t.Errorf("%s: described as %s %v %d", name, k.Name, v, src)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{0: "0.0", 0.5: "0.5", 1: "1.0", 0.25: "0.25", 1e6: "1000000.0",
		math.MaxFloat64: "1.7976931348623157E308", 1e20: "1.0E20", 1e-4: "1.0E-4", 2.5e-10: "2.5E-10"} {
		if got := JavaDouble(f); got != want {
			t.Errorf("JavaDouble(%v) = %q, want %q", f, got, want)
		}
	}
}

// TestReadmeMatchesTable: README.md's configuration tables against the
// definition table, both ways: every key defined is documented, every key
// documented is defined, with the same type and default. (Regenerate the
// tables with `go run ./config/cmd/configdoc`.)
func TestReadmeMatchesTable(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	broker, topic, err := ParseDocTables(string(md))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]DocRow{}
	for _, r := range broker {
		if _, dup := documented[r.Key]; dup {
			t.Errorf("README line %d: %s documented twice", r.Line, r.Key)
		}
		documented[r.Key] = r
		k, ok := Lookup(r.Key)
		switch {
		case !ok:
			t.Errorf("README line %d documents %s, which the table does not define", r.Line, r.Key)
			continue
		case k.Name != r.Key:
			t.Errorf("README line %d documents alias %s as a key of its own", r.Line, r.Key)
		case r.Type != k.Type.String():
			t.Errorf("README line %d: %s is %s, the table says %s", r.Line, r.Key, r.Type, k.Type)
		}
		if d, ok := strings.CutPrefix(r.Default, "`"); ok {
			if d = strings.TrimSuffix(d, "`"); k.NoDefault || d != k.Default {
				t.Errorf("README line %d: %s defaults to %q, the table says %q (none: %v)", r.Line, r.Key, d, k.Default, k.NoDefault)
			}
		} else if (r.Default == "none") != k.NoDefault {
			t.Errorf("README line %d: %s default %q, the table says %q (none: %v)", r.Line, r.Key, r.Default, k.Default, k.NoDefault)
		}
	}
	for _, k := range Keys() {
		if _, ok := documented[k.Name]; !ok {
			t.Errorf("%s is not documented in README", k.Name)
		}
	}
	topicDocumented := map[string]bool{}
	for _, r := range topic {
		topicDocumented[r.Key] = true
		tk, ok := LookupTopic(r.Key)
		if !ok {
			t.Errorf("README line %d documents topic key %s, which the table does not define", r.Line, r.Key)
			continue
		}
		want := "`" + tk.Default + "`"
		if bk, ok := tk.Synonym(); ok {
			want = "from `" + bk.Name + "`"
		}
		if r.Default != want || r.Type != tk.Type.String() {
			t.Errorf("README line %d: %s %s default %s, the table says %s %s", r.Line, r.Key, r.Type, r.Default, tk.Type, want)
		}
	}
	for _, tk := range TopicKeys() {
		if !topicDocumented[tk.Name] {
			t.Errorf("topic key %s is not documented in README", tk.Name)
		}
	}
	if len(broker) == 0 || len(topic) == 0 {
		t.Fatalf("README: %d broker rows, %d topic rows", len(broker), len(topic))
	}
}

// TestEveryTypedKeyRefusesGarbage: every boolean, numeric or duration key
// of the table refuses a value that is not of its type, and the error
// names the key (so a key added to the table without a parser, or with
// one that accepts anything, fails here).
func TestEveryTypedKeyRefusesGarbage(t *testing.T) {
	checked := 0
	for _, k := range Keys() {
		switch k.Type {
		case TypeBoolean, TypeInt, TypeShort, TypeLong, TypeDouble:
		default:
			continue
		}
		for _, v := range []string{"garbage", "", "1e999999"} {
			if k.Type == TypeDouble && v == "1e999999" {
				continue // parses as +Inf; bounds are the key's own
			}
			_, err := Load("", []string{k.Name + "=" + v})
			if err == nil {
				t.Errorf("%s=%q accepted", k.Name, v)
				continue
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), k.Name) {
				t.Errorf("%s=%q: error %q does not name the key", k.Name, v, err)
			}
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("checked %d typed keys; the table has more", checked)
	}
}
