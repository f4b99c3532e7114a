package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/kconn"

	"github.com/sluice/sluice/internal/sched"
)

func TestDefaultsAreKafkas(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Listeners[0]; got != "PLAINTEXT://:9092" {
		t.Errorf("listeners = %q", got)
	}
	if c.LogDirs[0] != "./data" || c.StorageBackend != "segment" || !c.SingleNode() {
		t.Errorf("log.dirs %v backend %q single %v", c.LogDirs, c.StorageBackend, c.SingleNode())
	}
	if c.SocketRequestMaxBytes != 104857600 || c.LogRetention != 168*time.Hour || c.NumPartitions != 1 {
		t.Errorf("defaults off: %+v", c)
	}
	// Kafka's ServerLogConfigs: Long.MAX_VALUE, unbounded.
	if c.MessageTimestampDifferenceMax != math.MaxInt64 || c.MessageTimestampBeforeMax != math.MaxInt64 || c.MessageTimestampAfterMax != math.MaxInt64 {
		t.Errorf("timestamp bounds %d %d %d, want MaxInt64", c.MessageTimestampDifferenceMax, c.MessageTimestampBeforeMax, c.MessageTimestampAfterMax)
	}
}

// TestTimestampBoundKeys: Kafka's three timestamp bound keys parse.
func TestTimestampBoundKeys(t *testing.T) {
	c, err := Load("", []string{"log.message.timestamp.difference.max.ms=100",
		"log.message.timestamp.before.max.ms=3600000", "log.message.timestamp.after.max.ms=0"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MessageTimestampDifferenceMax != 100 || c.MessageTimestampBeforeMax != 3600000 || c.MessageTimestampAfterMax != 0 {
		t.Fatalf("got %d %d %d", c.MessageTimestampDifferenceMax, c.MessageTimestampBeforeMax, c.MessageTimestampAfterMax)
	}
}

func TestPropertiesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.properties")
	body := `# a comment
! another
broker.id=3
listeners = PLAINTEXT://127.0.0.1:19092
log.dirs: /tmp/a
num.partitions 6
log.retention.hours=1
log.retention.minutes=5
storage.backend=pebble
zookeeper.connect=127.0.0.1:2181,\
    127.0.0.1:2182/chroot
`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, []string{"num.partitions=8"})
	if err != nil {
		t.Fatal(err)
	}
	if c.BrokerID != 3 || c.Listeners[0] != "PLAINTEXT://127.0.0.1:19092" || c.LogDirs[0] != "/tmp/a" {
		t.Errorf("got %+v", c)
	}
	if c.NumPartitions != 8 {
		t.Errorf("--set did not override: %d", c.NumPartitions)
	}
	if c.LogRetention != 5*time.Minute {
		t.Errorf("minutes must win over hours: %v", c.LogRetention)
	}
	if c.ZooKeeperConnect != "127.0.0.1:2181,127.0.0.1:2182/chroot" || c.SingleNode() {
		t.Errorf("zookeeper.connect = %q", c.ZooKeeperConnect)
	}
	if c.StorageBackend != "pebble" {
		t.Errorf("backend %q", c.StorageBackend)
	}
}

func TestBadValuesNameTheKey(t *testing.T) {
	cases := []struct {
		name string
		set  string
		key  string
	}{
		{"unknown key", "log.dirz=/x", "log.dirz"},
		{"not a number", "num.partitions=six", "num.partitions"},
		{"out of range", "num.partitions=0", "num.partitions"},
		{"bad bool", "auto.create.topics.enable=yes", "auto.create.topics.enable"},
		{"bad backend", "storage.backend=rocks", "storage.backend"},
		{"bad listener", "listeners=9092", "listeners"},
		{"no equals", "num.partitions", "num.partitions"},
		{"timestamp type", "log.message.timestamp.type=Now", "log.message.timestamp.type"},
		{"timestamp before negative", "log.message.timestamp.before.max.ms=-1", "log.message.timestamp.before.max.ms"},
		{"timestamp after not a number", "log.message.timestamp.after.max.ms=1h", "log.message.timestamp.after.max.ms"},
		{"timestamp difference negative", "log.message.timestamp.difference.max.ms=-5", "log.message.timestamp.difference.max.ms"},
		{"advertised wildcard", "advertised.listeners=PLAINTEXT://:9092", "advertised.listeners"},
		{"log dir twice", "log.dirs=/a,/b/../a", "log.dirs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("", []string{tc.set})
			if err == nil {
				t.Fatalf("%s accepted", tc.set)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("error %q does not name %q", err, tc.key)
			}
		})
	}
}

func TestRetentionUnlimited(t *testing.T) {
	c, err := Load("", []string{"log.retention.ms=-1", "log.retention.bytes=-1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.LogRetention >= 0 || c.LogRetentionBytes >= 0 {
		t.Fatalf("want unlimited, got %v %d", c.LogRetention, c.LogRetentionBytes)
	}
}

func TestParsePropertiesEscapes(t *testing.T) {
	props, err := ParseProperties(strings.NewReader("a\\=b=c\\td\nkey\\u0041=v\nempty=\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Property{{"a=b", "c\td", 1}, {"keyA", "v", 2}, {"empty", "", 3}}
	if len(props) != len(want) {
		t.Fatalf("got %v", props)
	}
	for i := range want {
		if props[i] != want[i] {
			t.Errorf("prop %d = %+v, want %+v", i, props[i], want[i])
		}
	}
	if _, err := ParseProperties(strings.NewReader("k=\\u12")); err == nil {
		t.Error("short \\u escape accepted")
	}
}

// TestLeaderRebalanceKeys: Kafka's defaults (enabled, 300 s, 10%), their
// overrides, and out-of-range values naming the key.
func TestLeaderRebalanceKeys(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.AutoLeaderRebalance || c.LeaderImbalanceCheck != 300*time.Second || c.LeaderImbalancePercentage != 10 {
		t.Errorf("defaults: %v %v %d", c.AutoLeaderRebalance, c.LeaderImbalanceCheck, c.LeaderImbalancePercentage)
	}
	c, err = Load("", []string{"auto.leader.rebalance.enable=false", "leader.imbalance.check.interval.seconds=5", "leader.imbalance.per.broker.percentage=0"})
	if err != nil {
		t.Fatal(err)
	}
	if c.AutoLeaderRebalance || c.LeaderImbalanceCheck != 5*time.Second || c.LeaderImbalancePercentage != 0 {
		t.Errorf("overrides: %v %v %d", c.AutoLeaderRebalance, c.LeaderImbalanceCheck, c.LeaderImbalancePercentage)
	}
	for _, bad := range []string{"leader.imbalance.check.interval.seconds=0", "leader.imbalance.per.broker.percentage=101", "auto.leader.rebalance.enable=maybe"} {
		key, _, _ := strings.Cut(bad, "=")
		if _, err := Load("", []string{bad}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestConnectionLimitKeys: defaults (Kafka's unbounded connection limits,
// Sluice's bounded request memory and read timeout), overrides, and bad
// values naming the key.
func TestConnectionLimitKeys(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.QueuedMaxRequestBytes != 256<<20 || c.RequestReadTimeout != 30*time.Second {
		t.Errorf("defaults: queued.max.request.bytes %d request.read.timeout.ms %v", c.QueuedMaxRequestBytes, c.RequestReadTimeout)
	}
	if c.MaxConnections != math.MaxInt32 || c.MaxConnectionsPerIP != math.MaxInt32 || len(c.MaxConnectionsPerIPOverrides) != 0 {
		t.Errorf("defaults: max.connections %d per ip %d overrides %v", c.MaxConnections, c.MaxConnectionsPerIP, c.MaxConnectionsPerIPOverrides)
	}
	c, err = Load("", []string{
		"queued.max.request.bytes=209715200", "request.read.timeout.ms=1500",
		"max.connections=100", "max.connections.per.ip=0",
		"max.connections.per.ip.overrides=hostName:100, 127.0.0.1:200,::1:3",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.QueuedMaxRequestBytes != 200<<20 || c.RequestReadTimeout != 1500*time.Millisecond || c.MaxConnections != 100 || c.MaxConnectionsPerIP != 0 {
		t.Errorf("overrides: %d %v %d %d", c.QueuedMaxRequestBytes, c.RequestReadTimeout, c.MaxConnections, c.MaxConnectionsPerIP)
	}
	want := map[string]int32{"hostName": 100, "127.0.0.1": 200, "::1": 3}
	if len(c.MaxConnectionsPerIPOverrides) != len(want) {
		t.Errorf("overrides map %v", c.MaxConnectionsPerIPOverrides)
	}
	for h, n := range want {
		if c.MaxConnectionsPerIPOverrides[h] != n {
			t.Errorf("override %s = %d, want %d", h, c.MaxConnectionsPerIPOverrides[h], n)
		}
	}
	for _, v := range []string{"-1", "0"} { // Kafka's "unbounded"
		if c, err = Load("", []string{"queued.max.request.bytes=" + v}); err != nil || c.QueuedMaxRequestBytes != -1 {
			t.Errorf("queued.max.request.bytes=%s: %d %v", v, c.QueuedMaxRequestBytes, err)
		}
	}
	for _, tc := range []struct {
		key  string
		sets []string
	}{
		{"queued.max.request.bytes", []string{"queued.max.request.bytes=lots"}},
		{"queued.max.request.bytes", []string{"queued.max.request.bytes=1048576"}}, // below socket.request.max.bytes
		{"queued.max.request.bytes", []string{"socket.request.max.bytes=536870912"}},
		{"request.read.timeout.ms", []string{"request.read.timeout.ms=0"}},
		{"max.connections", []string{"max.connections=-1"}},
		{"max.connections.per.ip", []string{"max.connections.per.ip=-5"}},
		{"max.connections.per.ip", []string{"max.connections.per.ip=0"}}, // 0 needs overrides
		{"max.connections.per.ip.overrides", []string{"max.connections.per.ip.overrides=hostName"}},
		{"max.connections.per.ip.overrides", []string{"max.connections.per.ip.overrides=hostName:many"}},
		{"max.connections.per.ip.overrides", []string{"max.connections.per.ip.overrides=:5"}},
	} {
		t.Run(strings.Join(tc.sets, " "), func(t *testing.T) {
			_, err := Load("", tc.sets)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("error %v does not name %q", err, tc.key)
			}
		})
	}
}

// TestNamedListeners: listener names come from
// listener.security.protocol.map (Kafka's default maps the four protocol
// names to themselves), and control.plane.listener.name must name a
// listener of its own, in cluster mode.
func TestNamedListeners(t *testing.T) {
	zk := "zookeeper.connect=127.0.0.1:2181"
	good := []string{"listeners=PLAINTEXT://:9092,CONTROLLER://:9093",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"control.plane.listener.name=controller", zk}
	c, err := Load("", good)
	if err != nil {
		t.Fatal(err)
	}
	if c.ControlPlaneListenerName != "CONTROLLER" || c.ListenerSecurityProtocolMap["CONTROLLER"] != "PLAINTEXT" {
		t.Fatalf("control plane %q, map %v", c.ControlPlaneListenerName, c.ListenerSecurityProtocolMap)
	}
	// Names and protocols are case-insensitive, as in Kafka.
	lower, err := Load("", []string{"listeners=internal://:9092,external://:9093",
		"listener.security.protocol.map=internal:plaintext,external:Sasl_Ssl", "inter.broker.listener.name=internal"})
	if err != nil {
		t.Fatalf("lower-case protocol map: %v", err)
	}
	if m := lower.ListenerSecurityProtocolMap; len(m) != 2 || m["INTERNAL"] != "PLAINTEXT" || m["EXTERNAL"] != "SASL_SSL" {
		t.Fatalf("lower-case protocol map: %v", m)
	}
	if p := lower.ListenerProtocol("INTERNAL"); p != "PLAINTEXT" {
		t.Fatalf("ListenerProtocol(INTERNAL) = %q", p)
	}
	if d := Default(); d.ControlPlaneListenerName != "" || d.ListenerSecurityProtocolMap["SASL_SSL"] != "SASL_SSL" {
		t.Fatalf("defaults: %q %v", d.ControlPlaneListenerName, d.ListenerSecurityProtocolMap)
	}
	for _, tc := range []struct {
		name string
		sets []string
		key  string
	}{
		{"unmapped name", []string{"listeners=PLAINTEXT://:9092,INTERNAL://:9093"}, "listeners"},
		{"name twice", []string{"listeners=PLAINTEXT://:9092,PLAINTEXT://:9093"}, "listeners"},
		{"bad map entry", []string{"listener.security.protocol.map=PLAINTEXT"}, "listener.security.protocol.map"},
		{"unknown protocol", []string{"listener.security.protocol.map=A:TLS"}, "listener.security.protocol.map"},
		{"control plane not a listener", []string{"control.plane.listener.name=CONTROLLER", zk}, "control.plane.listener.name"},
		{"control plane is the only listener", []string{"listeners=CONTROLLER://:9093",
			"listener.security.protocol.map=CONTROLLER:PLAINTEXT", "control.plane.listener.name=CONTROLLER", zk}, "control.plane.listener.name"},
		{"control plane on a single node", good[:3], "control.plane.listener.name"},
		{"advertised name not a listener", []string{"advertised.listeners=SSL://h:9093"}, "advertised.listeners"},
		{"inter-broker listener not a listener", []string{"inter.broker.listener.name=INTERNAL"}, "inter.broker.listener.name"},
		{"unknown authorizer", []string{"authorizer.class.name=com.example.Auth"}, "authorizer.class.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("", tc.sets)
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("%v: error %v, want one naming %s", tc.sets, err, tc.key)
			}
		})
	}
}

// TestCleanerKeys: the log cleaner's keys have Kafka's defaults
// (ServerLogConfigs, CleanerConfig) and take overrides.
func TestCleanerKeys(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.LogCleanupPolicy != (CleanupPolicy{Delete: true}) || c.LogCleanupPolicy.String() != "delete" {
		t.Errorf("log.cleanup.policy default %+v", c.LogCleanupPolicy)
	}
	if !c.LogCleanerEnable || c.LogCleanerThreads != 1 || c.LogCleanerDedupeBufferSize != 134217728 ||
		c.LogCleanerIOMaxBytesPerSecond != math.MaxFloat64 || c.LogCleanerBackoff != 15*time.Second {
		t.Errorf("cleaner defaults: enable %v threads %d dedupe %d io %v backoff %v", c.LogCleanerEnable,
			c.LogCleanerThreads, c.LogCleanerDedupeBufferSize, c.LogCleanerIOMaxBytesPerSecond, c.LogCleanerBackoff)
	}
	if c.LogCleanerDeleteRetentionMs != 86400000 || c.LogCleanerMinCleanableRatio != 0.5 ||
		c.LogCleanerMinCompactionLagMs != 0 || c.LogCleanerMaxCompactionLagMs != math.MaxInt64 {
		t.Errorf("topic defaults: delete.retention %d ratio %v lag [%d, %d]", c.LogCleanerDeleteRetentionMs,
			c.LogCleanerMinCleanableRatio, c.LogCleanerMinCompactionLagMs, c.LogCleanerMaxCompactionLagMs)
	}

	c, err = Load("", []string{
		"log.cleanup.policy=delete, compact", "log.cleaner.enable=false", "log.cleaner.threads=4",
		"log.cleaner.dedupe.buffer.size=1048576", "log.cleaner.io.max.bytes.per.second=1e6",
		"log.cleaner.backoff.ms=500", "log.cleaner.delete.retention.ms=0",
		"log.cleaner.min.cleanable.ratio=0.1", "log.cleaner.min.compaction.lag.ms=1000",
		"log.cleaner.max.compaction.lag.ms=60000",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.LogCleanupPolicy != (CleanupPolicy{Compact: true, Delete: true}) || c.LogCleanupPolicy.String() != "compact,delete" {
		t.Errorf("log.cleanup.policy %+v", c.LogCleanupPolicy)
	}
	if c.LogCleanerEnable || c.LogCleanerThreads != 4 || c.LogCleanerDedupeBufferSize != 1<<20 ||
		c.LogCleanerIOMaxBytesPerSecond != 1e6 || c.LogCleanerBackoff != 500*time.Millisecond {
		t.Errorf("overrides: enable %v threads %d dedupe %d io %v backoff %v", c.LogCleanerEnable,
			c.LogCleanerThreads, c.LogCleanerDedupeBufferSize, c.LogCleanerIOMaxBytesPerSecond, c.LogCleanerBackoff)
	}
	if c.LogCleanerDeleteRetentionMs != 0 || c.LogCleanerMinCleanableRatio != 0.1 ||
		c.LogCleanerMinCompactionLagMs != 1000 || c.LogCleanerMaxCompactionLagMs != 60000 {
		t.Errorf("overrides: delete.retention %d ratio %v lag [%d, %d]", c.LogCleanerDeleteRetentionMs,
			c.LogCleanerMinCleanableRatio, c.LogCleanerMinCompactionLagMs, c.LogCleanerMaxCompactionLagMs)
	}
	if c, err = Load("", []string{"log.cleanup.policy=compact"}); err != nil || c.LogCleanupPolicy != (CleanupPolicy{Compact: true}) {
		t.Errorf("log.cleanup.policy=compact: %+v %v", c.LogCleanupPolicy, err)
	}
}

// TestCleanerBadValues: a bad cleaner value is refused naming its key.
func TestCleanerBadValues(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		key  string
	}{
		{"policy unknown", []string{"log.cleanup.policy=compact,purge"}, "log.cleanup.policy"},
		{"policy empty", []string{"log.cleanup.policy= , "}, "log.cleanup.policy"},
		{"threads negative", []string{"log.cleaner.threads=-1"}, "log.cleaner.threads"},
		{"dedupe zero", []string{"log.cleaner.dedupe.buffer.size=0"}, "log.cleaner.dedupe.buffer.size"},
		{"io zero", []string{"log.cleaner.io.max.bytes.per.second=0"}, "log.cleaner.io.max.bytes.per.second"},
		{"io NaN", []string{"log.cleaner.io.max.bytes.per.second=NaN"}, "log.cleaner.io.max.bytes.per.second"},
		{"backoff negative", []string{"log.cleaner.backoff.ms=-1"}, "log.cleaner.backoff.ms"},
		{"delete retention negative", []string{"log.cleaner.delete.retention.ms=-1"}, "log.cleaner.delete.retention.ms"},
		{"ratio above 1", []string{"log.cleaner.min.cleanable.ratio=1.5"}, "log.cleaner.min.cleanable.ratio"},
		{"ratio not a number", []string{"log.cleaner.min.cleanable.ratio=half"}, "log.cleaner.min.cleanable.ratio"},
		{"min lag negative", []string{"log.cleaner.min.compaction.lag.ms=-1"}, "log.cleaner.min.compaction.lag.ms"},
		{"max lag zero", []string{"log.cleaner.max.compaction.lag.ms=0"}, "log.cleaner.max.compaction.lag.ms"},
		{"min above max", []string{"log.cleaner.min.compaction.lag.ms=2000", "log.cleaner.max.compaction.lag.ms=1000"}, "log.cleaner.min.compaction.lag.ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("", tc.sets)
			if err == nil {
				t.Fatalf("%v accepted", tc.sets)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("error %q does not name %q", err, tc.key)
			}
		})
	}
}

func TestParseCleanupPolicy(t *testing.T) {
	cases := []struct {
		in   string
		want CleanupPolicy
		ok   bool
	}{
		{"delete", CleanupPolicy{Delete: true}, true},
		{"compact", CleanupPolicy{Compact: true}, true},
		{"compact,delete", CleanupPolicy{Compact: true, Delete: true}, true},
		{" delete , compact ", CleanupPolicy{Compact: true, Delete: true}, true},
		{"compact,compact", CleanupPolicy{Compact: true}, true},
		{"", CleanupPolicy{}, false},
		{"Compact", CleanupPolicy{}, false},
		{"delete,", CleanupPolicy{Delete: true}, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseCleanupPolicy(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseCleanupPolicy(%q) = %+v, %v; want %+v ok=%v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

// TestTransactionKeys: the transaction coordinator's keys default to
// Kafka's values, parse, and bad values name the key.
func TestTransactionKeys(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.TransactionStatePartitions != 50 || c.TransactionStateReplication != 3 || c.TransactionStateSegmentBytes != 104857600 ||
		c.TransactionStateMinISR != 2 || c.TransactionMaxTimeout != 900000*time.Millisecond ||
		c.TransactionalIDExpiration != 604800000*time.Millisecond || c.TransactionAbortTimedOutInterval != 10000*time.Millisecond ||
		c.TransactionRemoveExpiredInterval != 3600000*time.Millisecond {
		t.Errorf("defaults: %+v", c)
	}
	c, err = Load("", []string{"transaction.state.log.num.partitions=4", "transaction.state.log.replication.factor=1",
		"transaction.state.log.segment.bytes=1024", "transaction.state.log.min.isr=1", "transaction.max.timeout.ms=60000",
		"transactional.id.expiration.ms=1000", "transaction.abort.timed.out.transaction.cleanup.interval.ms=100",
		"transaction.remove.expired.transaction.cleanup.interval.ms=200"})
	if err != nil {
		t.Fatal(err)
	}
	if c.TransactionStatePartitions != 4 || c.TransactionStateReplication != 1 || c.TransactionStateSegmentBytes != 1024 ||
		c.TransactionStateMinISR != 1 || c.TransactionMaxTimeout != time.Minute || c.TransactionalIDExpiration != time.Second ||
		c.TransactionAbortTimedOutInterval != 100*time.Millisecond || c.TransactionRemoveExpiredInterval != 200*time.Millisecond {
		t.Errorf("overrides: %+v", c)
	}
	for _, bad := range []string{"transaction.state.log.num.partitions=0", "transaction.state.log.replication.factor=0",
		"transaction.state.log.min.isr=x", "transaction.max.timeout.ms=0", "transaction.abort.timed.out.transaction.cleanup.interval.ms=-1"} {
		key, _, _ := strings.Cut(bad, "=")
		if _, err := Load("", []string{bad}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestOffsetsTopicSegmentBytes: offsets.topic.segment.bytes (Kafka's, 100
// MiB by default), the segment.bytes __consumer_offsets is created with;
// zero, negative, past int32 and non-numbers are refused naming the key.
func TestOffsetsTopicSegmentBytes(t *testing.T) {
	c, err := Load("", nil)
	if err != nil || c.OffsetsTopicSegmentBytes != 100<<20 {
		t.Fatalf("default %d, %v", c.OffsetsTopicSegmentBytes, err)
	}
	if c, err = Load("", []string{"offsets.topic.segment.bytes=1048576"}); err != nil || c.OffsetsTopicSegmentBytes != 1<<20 {
		t.Fatalf("override %d, %v", c.OffsetsTopicSegmentBytes, err)
	}
	for _, bad := range []string{"0", "-1", "2147483648", "1e6", "", "lots"} {
		if _, err := Load("", []string{"offsets.topic.segment.bytes=" + bad}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "offsets.topic.segment.bytes") {
			t.Errorf("offsets.topic.segment.bytes=%q: %v", bad, err)
		}
	}
}

func TestHTTPListeners(t *testing.T) {
	c := Default()
	if len(c.HTTPListeners) != 1 || c.HTTPListeners[0] != "http://127.0.0.1:9644" || c.MetricsPartitionSeriesMax != 10000 {
		t.Fatalf("defaults: %v %d", c.HTTPListeners, c.MetricsPartitionSeriesMax)
	}
	c, err := Load("", []string{"http.listeners=HTTPS://127.0.0.1:0, http://[::1]:9650", "metrics.partition.series.max=0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.HTTPListeners) != 2 || c.HTTPListeners[0] != "https://127.0.0.1:0" || c.HTTPListeners[1] != "http://[::1]:9650" || c.MetricsPartitionSeriesMax != 0 {
		t.Fatalf("parsed: %v %d", c.HTTPListeners, c.MetricsPartitionSeriesMax)
	}
	if c, err = Load("", []string{"http.listeners="}); err != nil || len(c.HTTPListeners) != 0 {
		t.Fatalf("empty: %v %v", c.HTTPListeners, err)
	}
	for _, bad := range []string{"127.0.0.1:9644", "ftp://127.0.0.1:1", "http://127.0.0.1", "http://127.0.0.1:99999", "http://127.0.0.1:x"} {
		if _, err := Load("", []string{"http.listeners=" + bad}); err == nil || !strings.Contains(err.Error(), "http.listeners") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
	if _, err := Load("", []string{"metrics.partition.series.max=-1"}); err == nil {
		t.Error("negative metrics.partition.series.max accepted")
	}
	if !Default().HTTPMetricsAuthentication {
		t.Error("http.metrics.authentication.enable defaults to false")
	}
	if c, err = Load("", []string{"http.metrics.authentication.enable=false"}); err != nil || c.HTTPMetricsAuthentication {
		t.Errorf("http.metrics.authentication.enable=false: %v %v", c.HTTPMetricsAuthentication, err)
	}
}

// TestScaleKeys: log.segment.open.files.max and
// log.flush.offset.checkpoint.interval.ms parse, with their defaults.
func TestScaleKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sets  []string
		open  int
		every time.Duration
		bad   bool
	}{
		{"defaults", nil, 0, 60 * time.Second, false},
		{"set", []string{"log.segment.open.files.max=50", "log.flush.offset.checkpoint.interval.ms=0"}, 50, 0, false},
		{"zero open files: sized from the limits", []string{"log.segment.open.files.max=0"}, 0, 60 * time.Second, false},
		{"negative open files", []string{"log.segment.open.files.max=-1"}, 0, 0, true},
		{"negative interval", []string{"log.flush.offset.checkpoint.interval.ms=-5"}, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load("", tc.sets)
			if tc.bad {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.LogSegmentOpenFilesMax != tc.open || c.LogFlushOffsetCheckpointInterval != tc.every {
				t.Fatalf("got %d %v", c.LogSegmentOpenFilesMax, c.LogFlushOffsetCheckpointInterval)
			}
		})
	}
}

// TestTailCacheBytes: log.segment.tail.cache.bytes defaults to 256 MiB,
// takes 0 (off) and refuses a negative size, what is not a number and
// what does not fit a long.
func TestTailCacheBytes(t *testing.T) {
	if c := Default(); c.LogSegmentTailCacheBytes != 256<<20 {
		t.Fatalf("default %d", c.LogSegmentTailCacheBytes)
	}
	c, err := Load("", []string{"log.segment.tail.cache.bytes=0"})
	if err != nil || c.LogSegmentTailCacheBytes != 0 {
		t.Fatalf("0: %d %v", c.LogSegmentTailCacheBytes, err)
	}
	for _, bad := range []string{"-1", "16MiB", "", "9223372036854775808"} {
		if _, err := Load("", []string{"log.segment.tail.cache.bytes=" + bad}); err == nil {
			t.Errorf("log.segment.tail.cache.bytes=%q was accepted", bad)
		}
	}
}

// TestSegmentDeleteDelay: log.segment.delete.delay.ms defaults to Kafka's
// 60000, takes 0 (at once), refuses a negative delay and what is not a
// number.
func TestSegmentDeleteDelay(t *testing.T) {
	if c := Default(); c.LogSegmentDeleteDelay != time.Minute {
		t.Fatalf("default %v", c.LogSegmentDeleteDelay)
	}
	for v, want := range map[string]time.Duration{"0": 0, "1500": 1500 * time.Millisecond, "9223372036854775807": math.MaxInt64} {
		c, err := Load("", []string{"log.segment.delete.delay.ms=" + v})
		if err != nil || c.LogSegmentDeleteDelay != want {
			t.Fatalf("%s: %v %v", v, c.LogSegmentDeleteDelay, err)
		}
	}
	for _, bad := range []string{"-1", "soon", ""} {
		if _, err := Load("", []string{"log.segment.delete.delay.ms=" + bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSchedulingPolicy: process.scheduling.policy defaults to normal (a
// broker on a shared core must preempt it when a request arrives: issue 33),
// takes batch, refuses anything else.
func TestSchedulingPolicy(t *testing.T) {
	if c := Default(); c.SchedulingPolicy != sched.Normal {
		t.Fatalf("default %v", c.SchedulingPolicy)
	}
	c, err := Load("", []string{"process.scheduling.policy=batch"})
	if err != nil || c.SchedulingPolicy != sched.Batch {
		t.Fatalf("batch: %v %v", c.SchedulingPolicy, err)
	}
	for _, bad := range []string{"", "fifo", "Batch", "1"} {
		if _, err := Load("", []string{"process.scheduling.policy=" + bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestFetchSessionCacheSlots: max.incremental.fetch.session.cache.slots
// defaults to Kafka's 1000, takes 0 (sessions off), refuses what is not a
// count.
func TestFetchSessionCacheSlots(t *testing.T) {
	if c := Default(); c.FetchSessionCacheSlots != 1000 {
		t.Fatalf("default %d", c.FetchSessionCacheSlots)
	}
	c, err := Load("", []string{"max.incremental.fetch.session.cache.slots=0"})
	if err != nil || c.FetchSessionCacheSlots != 0 {
		t.Fatalf("0: %d %v", c.FetchSessionCacheSlots, err)
	}
	for _, bad := range []string{"-1", "x", "99999999999", ""} {
		if _, err := Load("", []string{"max.incremental.fetch.session.cache.slots=" + bad}); err == nil || !strings.Contains(err.Error(), "max.incremental.fetch.session.cache.slots") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

// TestReplicaFetchKeys: the follower fetchers' keys take Kafka's defaults,
// parse, refuse what is not a positive count, and replica.fetch.wait.max.ms
// may not exceed replica.lag.time.max.ms (Kafka's rule).
func TestReplicaFetchKeys(t *testing.T) {
	c := Default()
	if c.ReplicaFetchMaxBytes != 1048576 || c.ReplicaFetchResponseMaxBytes != 10485760 || c.ReplicaFetchMinBytes != 1 ||
		c.ReplicaFetchWaitMax != 500*time.Millisecond || c.ReplicaFetchBackoff != time.Second {
		t.Fatalf("defaults: %d %d %d %v %v", c.ReplicaFetchMaxBytes, c.ReplicaFetchResponseMaxBytes, c.ReplicaFetchMinBytes, c.ReplicaFetchWaitMax, c.ReplicaFetchBackoff)
	}
	if ReplicaFetchResponseMaxBytesLimit >= kconn.MaxResponseBytes {
		t.Fatalf("replica.fetch.response.max.bytes limit %d not below kconn.MaxResponseBytes %d", ReplicaFetchResponseMaxBytesLimit, kconn.MaxResponseBytes)
	}
	if _, err := Load("", []string{"replica.fetch.response.max.bytes=134217728"}); err != nil {
		t.Fatalf("the limit itself: %v", err)
	}
	c, err := Load("", []string{"replica.fetch.max.bytes=8388608", "replica.fetch.response.max.bytes=33554432",
		"replica.fetch.min.bytes=4096", "replica.fetch.wait.max.ms=50", "replica.fetch.backoff.ms=200"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ReplicaFetchMaxBytes != 8<<20 || c.ReplicaFetchResponseMaxBytes != 32<<20 || c.ReplicaFetchMinBytes != 4096 ||
		c.ReplicaFetchWaitMax != 50*time.Millisecond || c.ReplicaFetchBackoff != 200*time.Millisecond {
		t.Fatalf("set: %d %d %d %v %v", c.ReplicaFetchMaxBytes, c.ReplicaFetchResponseMaxBytes, c.ReplicaFetchMinBytes, c.ReplicaFetchWaitMax, c.ReplicaFetchBackoff)
	}
	for _, tc := range []struct{ name, set, key string }{
		{"zero max bytes", "replica.fetch.max.bytes=0", "replica.fetch.max.bytes"},
		{"negative response max", "replica.fetch.response.max.bytes=-1", "replica.fetch.response.max.bytes"},
		{"response max above kconn's bound", "replica.fetch.response.max.bytes=268435456", "replica.fetch.response.max.bytes"},
		{"zero min bytes", "replica.fetch.min.bytes=0", "replica.fetch.min.bytes"},
		{"zero wait", "replica.fetch.wait.max.ms=0", "replica.fetch.wait.max.ms"},
		{"not a number", "replica.fetch.backoff.ms=soon", "replica.fetch.backoff.ms"},
		{"wait above lag", "replica.fetch.wait.max.ms=40000", "replica.fetch.wait.max.ms"},
		// Under a lag bound that allows it, still no more than the
		// fetch request's int32 MaxWaitMillis holds.
		{"wait above int32", "replica.lag.time.max.ms=4294967296 replica.fetch.wait.max.ms=2147483648", "replica.fetch.wait.max.ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Load("", strings.Fields(tc.set)); err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("%s: err = %v", tc.set, err)
			}
		})
	}
}
