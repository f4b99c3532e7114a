package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/topicname"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/record"
)

// Topic configs are defined in package config (config.TopicKeys: their
// names, types, validation and documentation, and the broker key whose
// value each one takes when a topic does not override it). A topic stores
// only its overrides (metastore.Topic.Configs). This file applies them:
// it validates overrides, resolves a topic's effective values and parses
// them into what the logs and the produce path use. Any name the table
// does not define is INVALID_CONFIG, as Kafka answers for an unknown topic
// config.

// Config sources of DescribeConfigs v1+ (and CreateTopics v5+).
const (
	sourceDynamicTopic = int8(config.SourceDynamicTopic)
	sourceStaticBroker = int8(config.SourceStaticBroker)
	sourceDefault      = int8(config.SourceDefaultConfig)
)

// topicConfigDefs are the topic keys, sorted by name.
var topicConfigDefs = config.TopicKeys()

func findTopicConfig(name string) (config.TopicKey, bool) { return config.LookupTopic(name) }

// msDuration converts a count of ms to a Duration, saturating at
// math.MaxInt64 (Kafka's Long.MAX_VALUE ms does not fit).
func msDuration(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Millisecond
}

// topicConfig is a topic's effective configuration, parsed.
type topicConfig struct {
	log           engine.LogConfig
	logAppendTime bool
	maxMessage    int
	minISR        int
	rules         record.Rules // what client batches are validated against
	// keySchema, valueSchema: confluent.{key,value}.schema.validation
	keySchema, valueSchema bool
	// keyStrategy, valueStrategy: confluent.{key,value}.subject.name.strategy
	keyStrategy, valueStrategy string
}

// checkTopicConfigs validates overrides: every name known, every value in
// range. The error wraps errInvalidConfig and names the key.
func checkTopicConfigs(overrides map[string]string) error {
	for k, v := range overrides {
		d, ok := config.LookupTopic(k)
		if !ok {
			return fmt.Errorf("%w: unknown topic config %q", errInvalidConfig, k)
		}
		if err := d.Validate(v); err != nil {
			return fmt.Errorf("%w: %s: %v", errInvalidConfig, k, err)
		}
	}
	return nil
}

// internalOverrides returns the overrides a topic is run with: its stored
// ones, and for __consumer_offsets cleanup.policy=compact when they do not
// set it, so that a topic created before the log cleaner existed (with
// retention.ms=-1 alone) is compacted too. overrides is not changed.
func internalOverrides(name string, overrides map[string]string) map[string]string {
	if name != offsets.Topic {
		return overrides
	}
	if _, ok := overrides["cleanup.policy"]; ok {
		return overrides
	}
	m := make(map[string]string, len(overrides)+1)
	for k, v := range overrides {
		m[k] = v
	}
	m["cleanup.policy"] = "compact"
	return m
}

// checkTopicConfigRelations checks the rules between a topic's effective
// configs (overrides that passed checkTopicConfigs, else the broker's), as
// Kafka's LogConfig.validateValues: min.compaction.lag.ms <=
// max.compaction.lag.ms. The error wraps errInvalidConfig.
func (s *Server) checkTopicConfigRelations(overrides map[string]string) error {
	tc := s.effectiveConfig(overrides)
	if tc.log.MinCompactionLag > tc.log.MaxCompactionLag {
		minV, _ := s.configValue(overrides, "min.compaction.lag.ms")
		maxV, _ := s.configValue(overrides, "max.compaction.lag.ms")
		return fmt.Errorf("%w: min.compaction.lag.ms %s is above max.compaction.lag.ms %s", errInvalidConfig, minV, maxV)
	}
	return s.checkTieredConfigs(overrides, tc.log.Compact) // tiered.go
}

// storageBackendKey is the topic config naming the storage backend of a
// topic's logs (config.StorageBackends).
const storageBackendKey = "storage.backend"

// checkBackendUnchanged refuses overrides that would change a topic's
// storage backend (its effective storage.backend) from what cur gives: its
// logs were created with that backend on every replica and stay there.
// Setting it to the value it has, or dropping an override that equals the
// broker's, is no change. The error wraps errInvalidConfig.
func (s *Server) checkBackendUnchanged(cur, overrides map[string]string) error {
	was, _ := s.configValue(cur, storageBackendKey)
	now, _ := s.configValue(overrides, storageBackendKey)
	if was != now {
		return fmt.Errorf("%w: %s cannot be changed on an existing topic (it is %s; its logs were created with that backend): create a new topic with %s=%s and copy the data", errInvalidConfig, storageBackendKey, was, storageBackendKey, now)
	}
	return nil
}

// configValue is the effective value of topic config name: the override
// (DYNAMIC_TOPIC_CONFIG) or the broker's value of its synonym
// (STATIC_BROKER_CONFIG when the broker key was set, else DEFAULT_CONFIG).
func (s *Server) configValue(overrides map[string]string, name string) (v string, source int8) {
	if v, ok := overrides[name]; ok {
		return v, sourceDynamicTopic
	}
	d := (*s.topicDefaults.Load())[name]
	return d.v, d.src
}

// topicDefault is what a topic without an override of a key takes: the
// broker's value of its synonym and that value's source.
type topicDefault struct {
	v   string
	src int8
}

// topicDefaults maps each topic key to its topicDefault.
type topicDefaults map[string]topicDefault

// newTopicDefaults formats the topic keys' broker defaults once per
// effective broker config (a dynamic broker config makes a new one):
// formatting them on every effectiveConfig (each created, loaded or
// described topic) cost about 80 allocations per topic created.
func newTopicDefaults(c *config.Config) *topicDefaults {
	keys := config.TopicKeys()
	m := make(topicDefaults, len(keys))
	for _, k := range keys {
		v, src, _ := c.TopicDefault(k)
		m[k.Name] = topicDefault{v: v, src: int8(src)}
	}
	return &m
}

// effectiveConfig parses the effective config of a topic with overrides.
// Overrides must have passed checkTopicConfigs; a stored value that no
// longer parses falls back to the broker's.
func (s *Server) effectiveConfig(overrides map[string]string) topicConfig {
	num := func(name string) int64 {
		v, _ := s.configValue(overrides, name)
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			n, _ = strconv.ParseInt((*s.topicDefaults.Load())[name].v, 10, 64)
		}
		return n
	}
	var tc topicConfig
	tc.log.SegmentBytes = num("segment.bytes")
	tc.log.SegmentMs = msDuration(num("segment.ms"))
	switch r := num("retention.ms"); {
	case r < 0:
		tc.log.RetentionMs = -1
	case r == 0:
		tc.log.RetentionMs = time.Nanosecond // zero would mean "default" to the engine
	default:
		tc.log.RetentionMs = msDuration(r)
	}
	switch r := num("retention.bytes"); {
	case r < 0:
		tc.log.RetentionBytes = -1
	case r == 0:
		tc.log.RetentionBytes = 1 // zero would mean "default" to the engine
	default:
		tc.log.RetentionBytes = r
	}
	cur := s.currentConfig()
	tc.log.IndexIntervalBytes = cur.LogIndexIntervalBytes
	tc.log.IndexMaxBytes = cur.LogIndexSizeMaxBytes
	tc.maxMessage = int(num("max.message.bytes"))
	tc.log.MaxBatchBytes = tc.maxMessage
	if f := num("flush.messages"); f > 0 && f < math.MaxInt64 {
		tc.log.FlushMessages = f
	}
	tc.minISR = int(num("min.insync.replicas"))
	policyV, _ := s.configValue(overrides, "cleanup.policy")
	policy, err := config.ParseCleanupPolicy(policyV)
	if err != nil {
		policy = cur.LogCleanupPolicy
	}
	tc.log.Compact, tc.log.Delete = policy.Compact, policy.Delete
	tc.log.DeleteRetention = msDuration(num("delete.retention.ms"))
	tc.log.MinCompactionLag = msDuration(num("min.compaction.lag.ms"))
	tc.log.MaxCompactionLag = msDuration(num("max.compaction.lag.ms"))
	ratioV, _ := s.configValue(overrides, "min.cleanable.dirty.ratio")
	ratio, err := strconv.ParseFloat(strings.TrimSpace(ratioV), 64)
	if err != nil || !(ratio >= 0 && ratio <= 1) {
		ratio = cur.LogCleanerMinCleanableRatio
	}
	tc.log.MinCleanableDirtyRatio = ratio
	// Tiered (KIP-405) as the remote log manager takes it (tiered.Manager).
	tc.log.RemoteStorage = cur.RemoteLogStorageSystemEnable && overrides["remote.storage.enable"] == "true"
	ts, _ := s.configValue(overrides, "message.timestamp.type")
	tc.logAppendTime = ts == "LogAppendTime"
	diff := num("message.timestamp.difference.max.ms")
	orDiff := func(v int64) int64 {
		if v == math.MaxInt64 {
			return diff
		}
		return v
	}
	tc.rules = record.Rules{
		MaxDecompressed:    record.DecompressBound(tc.maxMessage),
		LogAppendTime:      tc.logAppendTime,
		TimestampBeforeMax: orDiff(num("message.timestamp.before.max.ms")),
		TimestampAfterMax:  orDiff(num("message.timestamp.after.max.ms")),
		RequireKeys:        policy.Compact,
	}
	ks, _ := s.configValue(overrides, "confluent.key.schema.validation")
	vs, _ := s.configValue(overrides, "confluent.value.schema.validation")
	tc.keySchema, tc.valueSchema = ks == "true", vs == "true"
	tc.keyStrategy, _ = s.configValue(overrides, "confluent.key.subject.name.strategy")
	tc.valueStrategy, _ = s.configValue(overrides, "confluent.value.subject.name.strategy")
	return tc
}

// validateTopicName is topicname.Validate in server's error class
// (INVALID_TOPIC_EXCEPTION).
func validateTopicName(name string) error {
	if err := topicname.Validate(name); err != nil {
		return fmt.Errorf("%w: %v", errInvalidTopic, err)
	}
	return nil
}
