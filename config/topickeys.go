package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// topicKeys is the table of topic-level keys, sorted by name. A topic
// stores only its overrides (metastore.Topic.Configs); a key not
// overridden takes the value of its broker synonym (the broker key whose
// Topic names it: retention.ms from log.retention.ms). Any other name is
// INVALID_CONFIG, as Kafka answers for an unknown topic config. Read-only.
var topicKeys = []TopicKey{
	{Name: "cleanup.policy", Type: TypeList, Importance: Medium,
		Doc:   "delete: old segments go by retention; compact: the latest record per key is kept; or both (in any order). Compact also makes key-less records INVALID_RECORD on produce, and compact alone turns retention by time and size off",
		check: func(v string) error { _, err := ParseCleanupPolicy(v); return err }},
	{Name: "compression.type", Type: TypeString, Importance: Medium, Default: "producer",
		Doc:   "accepted and stored (producer, uncompressed, gzip, snappy, lz4, zstd); batches are kept as the producer compressed them, so only producer means what it says",
		check: oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")},
	{Name: "delete.retention.ms", Type: TypeLong, Importance: Medium,
		Doc:   "how long a tombstone stays after its segment was cleaned (compacted topics)",
		check: intRange(0, math.MaxInt64)},
	{Name: "flush.messages", Type: TypeLong, Importance: Medium,
		Doc:   "fsync the log after this many records",
		check: intRange(1, math.MaxInt64)},
	{Name: "follower.replication.throttled.replicas", Type: TypeList, Importance: Medium, Default: "",
		Doc:   "as Kafka: the replicas whose fetching their follower throttles to `follower.replication.throttled.rate` while they are not caught up: `partition:brokerId,...` naming the following brokers, or `*` for every replica",
		check: CheckThrottledReplicas},
	{Name: "leader.replication.throttled.replicas", Type: TypeList, Importance: Medium, Default: "",
		Doc:   "as Kafka: the replicas whose replication the leader throttles to `leader.replication.throttled.rate` while they are out of the ISR: `partition:brokerId,...` naming the brokers that lead (or may lead) them, or `*` for every replica",
		check: CheckThrottledReplicas},
	{Name: "max.compaction.lag.ms", Type: TypeLong, Importance: Medium,
		Doc:   "longest time a record stays uncompacted, whatever the dirty ratio; at least min.compaction.lag.ms",
		check: intRange(1, math.MaxInt64)},
	{Name: "max.message.bytes", Type: TypeInt, Importance: Medium,
		Doc:   "largest record batch allowed",
		check: intRange(0, math.MaxInt32)},
	{Name: "message.timestamp.after.max.ms", Type: TypeLong, Importance: Medium,
		Doc:   "how far (ms) a CreateTime timestamp may lie after the broker's clock (INVALID_TIMESTAMP past it)",
		check: intRange(0, math.MaxInt64)},
	{Name: "message.timestamp.before.max.ms", Type: TypeLong, Importance: Medium,
		Doc:   "how far (ms) a CreateTime timestamp may lie before the broker's clock (INVALID_TIMESTAMP past it)",
		check: intRange(0, math.MaxInt64)},
	{Name: "message.timestamp.difference.max.ms", Type: TypeLong, Importance: Medium,
		Doc:   "[Deprecated] both bounds at once, where before/after.max.ms are left at their default (Long.MAX_VALUE), as in Kafka's LogConfig",
		check: intRange(0, math.MaxInt64)},
	{Name: "message.timestamp.type", Type: TypeString, Importance: Medium,
		Doc:   "CreateTime or LogAppendTime",
		check: oneOf("CreateTime", "LogAppendTime")},
	{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Importance: Medium,
		Doc:   "share of the log that must be dirty before it is compacted, in [0, 1]",
		check: floatRange(0, 1)},
	{Name: "min.compaction.lag.ms", Type: TypeLong, Importance: Medium,
		Doc:   "shortest time a record stays uncompacted",
		check: intRange(0, math.MaxInt64)},
	{Name: "min.insync.replicas", Type: TypeInt, Importance: Medium,
		Doc:   "minimum in-sync replicas for acks=all",
		check: intRange(1, math.MaxInt32)},
	{Name: "retention.bytes", Type: TypeLong, Importance: Medium,
		Doc:   "maximum log size before old segments are deleted; -1: unlimited",
		check: intRange(math.MinInt64, math.MaxInt64)},
	{Name: "retention.ms", Type: TypeLong, Importance: Medium,
		Doc:   "maximum age of a segment before deletion; -1: unlimited",
		check: intRange(-1, math.MaxInt64)},
	{Name: "segment.bytes", Type: TypeInt, Importance: Medium,
		Doc:   "segment file size",
		check: intRange(14, math.MaxInt32)},
	{Name: "segment.ms", Type: TypeLong, Importance: Medium,
		Doc:   "time after which a segment is rolled",
		check: intRange(1, math.MaxInt64)},
	{Name: "storage.backend", Type: TypeString, Importance: Medium,
		Doc:   "Sluice's own: the storage backend of the topic's partitions (`segment`, `pebble` or `memory`), on every broker holding a replica; set when the topic is created and never changed after (INVALID_CONFIG)",
		check: oneOf(StorageBackends...)},
}

// StorageBackends are the values of storage.backend (the broker key and
// the topic key): the backends registered in package engine.
var StorageBackends = []string{"segment", "pebble", "memory"}

// tieredTopicKeys are the topic keys of tiered storage (KIP-405), kept in
// their own block and merged into topicKeys, in name order, by init.
var tieredTopicKeys = []TopicKey{
	{Name: "local.retention.bytes", Type: TypeLong, Importance: Medium,
		Doc:   "tiered topics: the most bytes a partition keeps on local disk; only segments already remote are deleted; -2: retention.bytes",
		check: intRange(-2, math.MaxInt64)},
	{Name: "local.retention.ms", Type: TypeLong, Importance: Medium,
		Doc:   "tiered topics: how long a segment stays on local disk; only segments already remote are deleted; -2: retention.ms",
		check: intRange(-2, math.MaxInt64)},
	{Name: "remote.log.copy.disable", Type: TypeBoolean, Importance: Medium, Default: "false",
		Doc:   "tiered topics: stop copying segments to remote storage; what is remote stays readable and retention still deletes it, and local retention is retention.* (local.retention.* must equal it or be -2)",
		check: oneOf("true", "false")},
	{Name: "remote.log.delete.on.disable", Type: TypeBoolean, Importance: Medium, Default: "false",
		Doc:   "with remote.storage.enable turned off on a topic that was tiered: true deletes its remote segments at the remote log manager's next run; false keeps them (unread while tiering is off)",
		check: oneOf("true", "false")},
	{Name: "remote.storage.enable", Type: TypeBoolean, Importance: Medium, Default: "false",
		Doc:   "tier this topic: copy its rolled segments to remote storage and keep only local.retention.* on local disk (needs remote.log.storage.system.enable; refused with cleanup.policy compact)",
		check: oneOf("true", "false")},
}

// Confluent's subject name strategies, by their class names, for
// confluent.{key,value}.subject.name.strategy: TopicNameStrategy (the
// default) names subject <topic>-key or <topic>-value; RecordNameStrategy
// the record's name; TopicRecordNameStrategy <topic>-<record name>.
const (
	TopicNameStrategy       = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
	RecordNameStrategy      = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
	TopicRecordNameStrategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
)

// checkSubjectStrategy accepts Confluent's three strategies.
func checkSubjectStrategy(v string) error {
	switch v {
	case TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy:
		return nil
	}
	return fmt.Errorf("%q is not a subject name strategy (%s, %s or %s)", v, TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy)
}

// schemaTopicKeys are Confluent Server's broker-side schema validation
// keys (README, "Schema registry"), merged into topicKeys by init.
var schemaTopicKeys = []TopicKey{
	{Name: "confluent.key.schema.validation", Type: TypeBoolean, Importance: Medium, Default: "false",
		Doc:   "as Confluent Server: refuse (INVALID_RECORD) a produced record whose key does not start with magic byte 0 and a schema id registered under the key subject (built-in schema registry)",
		check: oneOf("true", "false")},
	{Name: "confluent.key.subject.name.strategy", Type: TypeString, Importance: Medium, Default: TopicNameStrategy,
		Doc:   "the key subject of confluent.key.schema.validation, as Confluent's serializers name it: TopicNameStrategy (`<topic>-key`), RecordNameStrategy (the record name of the schema the id names: Avro's full name, JSON Schema's title, the Protobuf message the record's message indexes select) or TopicRecordNameStrategy (`<topic>-<record name>`), by Confluent's class names",
		check: checkSubjectStrategy},
	{Name: "confluent.value.schema.validation", Type: TypeBoolean, Importance: Medium, Default: "false",
		Doc:   "as Confluent Server: refuse (INVALID_RECORD) a produced record whose value does not start with magic byte 0 and a schema id registered under the value subject (built-in schema registry)",
		check: oneOf("true", "false")},
	{Name: "confluent.value.subject.name.strategy", Type: TypeString, Importance: Medium, Default: TopicNameStrategy,
		Doc:   "the value subject of confluent.value.schema.validation, as Confluent's serializers name it: TopicNameStrategy (`<topic>-value`), RecordNameStrategy (the record name of the schema the id names: Avro's full name, JSON Schema's title, the Protobuf message the record's message indexes select) or TopicRecordNameStrategy (`<topic>-<record name>`), by Confluent's class names",
		check: checkSubjectStrategy},
}

func init() {
	topicKeys = append(topicKeys, tieredTopicKeys...)
	topicKeys = append(topicKeys, schemaTopicKeys...)
	slices.SortFunc(topicKeys, func(a, b TopicKey) int { return strings.Compare(a.Name, b.Name) })
}

func intRange(min, max int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		if n < min || n > max {
			return fmt.Errorf("%d out of range [%d, %d]", n, min, max)
		}
		return nil
	}
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(vals, v) {
			return fmt.Errorf("%q is not one of %v", v, vals)
		}
		return nil
	}
}

func floatRange(min, max float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", v)
		}
		if !(f >= min && f <= max) {
			return fmt.Errorf("%v out of range [%v, %v]", f, min, max)
		}
		return nil
	}
}
