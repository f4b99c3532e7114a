package server

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/record"
)

// Topic configs. A topic stores only its overrides (metastore.Topic.Configs);
// every other value comes from the broker config it is a synonym of. The
// supported set:
//
//	retention.ms            LONG  >= -1 (-1: unlimited)         log.retention.ms
//	retention.bytes         LONG  (-1: unlimited)                log.retention.bytes
//	segment.bytes           INT   >= 14                          log.segment.bytes
//	segment.ms              LONG  >= 1                           log.roll.ms
//	cleanup.policy          LIST  delete, compact, or both       log.cleanup.policy
//	                              (any order; compact also makes key-less
//	                              records INVALID_RECORD on produce, and
//	                              compact alone turns retention by time and
//	                              size off)
//	delete.retention.ms     LONG  >= 0                           log.cleaner.delete.retention.ms
//	min.cleanable.dirty.ratio  DOUBLE  [0, 1]                    log.cleaner.min.cleanable.ratio
//	min.compaction.lag.ms   LONG  >= 0                           log.cleaner.min.compaction.lag.ms
//	max.compaction.lag.ms   LONG  >= 1, >= min.compaction.lag.ms log.cleaner.max.compaction.lag.ms
//	                              the cleaner settings, carried to
//	                              engine.LogConfig for the log cleaner
//	message.timestamp.type  CreateTime | LogAppendTime           log.message.timestamp.type
//	message.timestamp.difference.max.ms  LONG >= 0  (deprecated) log.message.timestamp.difference.max.ms
//	message.timestamp.before.max.ms      LONG >= 0               log.message.timestamp.before.max.ms
//	message.timestamp.after.max.ms       LONG >= 0               log.message.timestamp.after.max.ms
//	                              how far a CreateTime timestamp may lie before/after
//	                              the broker clock (INVALID_TIMESTAMP past it); before
//	                              and after fall back to difference while at their
//	                              default, Long.MAX_VALUE, as in Kafka's LogConfig
//	max.message.bytes       INT   >= 0                           message.max.bytes
//	min.insync.replicas     INT   >= 1                           min.insync.replicas
//	compression.type        producer|uncompressed|gzip|snappy|lz4|zstd
//	                              stored and described; batches are always kept as
//	                              the producer compressed them (Sluice does not
//	                              recompress), so only "producer" means what it says
//	flush.messages          LONG  >= 1                           log.flush.interval.messages
//
// Any other name is INVALID_CONFIG, as Kafka answers for an unknown topic
// config.

// Config types of DescribeConfigs v3+.
const (
	configTypeString int8 = 2
	configTypeInt    int8 = 3
	configTypeLong   int8 = 5
	configTypeDouble int8 = 6
	configTypeList   int8 = 7
)

// Config sources of DescribeConfigs v1+.
const (
	sourceDynamicTopic int8 = 1
	sourceStaticBroker int8 = 4
	sourceDefault      int8 = 5
)

// topicConfigDef describes one supported topic config.
type topicConfigDef struct {
	name    string
	typ     int8
	synonym string                        // the broker key whose value is the default
	def     func(c *config.Config) string // the broker's value for synonym
	check   func(v string) error
	doc     string
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

// javaDouble formats f as Java's Double.toString does for the values
// configs hold ("0.5", "1.0", "1.7976931348623157E308"), so that a
// described double reads as Kafka's.
func javaDouble(f float64) string {
	if a := math.Abs(f); a == 0 || (a >= 1e-3 && a < 1e7) {
		if f == math.Trunc(f) {
			return strconv.FormatFloat(f, 'f', 1, 64)
		}
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'E', -1, 64), "E") // "1E-04"
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	sign := ""
	if exp[0] == '-' {
		sign = "-"
	}
	return mant + "E" + sign + strings.TrimLeft(exp[1:], "0")
}

// msDuration converts a count of ms to a Duration, saturating at
// math.MaxInt64 (Kafka's Long.MAX_VALUE ms does not fit).
func msDuration(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Millisecond
}

func ms(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

var topicConfigDefs = []topicConfigDef{
	{"cleanup.policy", configTypeList, "log.cleanup.policy",
		func(c *config.Config) string { return c.LogCleanupPolicy.String() },
		func(v string) error { _, err := config.ParseCleanupPolicy(v); return err },
		"delete: old segments go by retention; compact: the latest record per key is kept; or both."},
	{"compression.type", configTypeString, "compression.type",
		func(*config.Config) string { return "producer" },
		oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
		"Accepted and stored; batches are kept as the producer compressed them."},
	{"delete.retention.ms", configTypeLong, "log.cleaner.delete.retention.ms",
		func(c *config.Config) string { return strconv.FormatInt(c.LogCleanerDeleteRetentionMs, 10) },
		intRange(0, math.MaxInt64), "How long a tombstone stays after its segment was cleaned (compacted topics)."},
	{"flush.messages", configTypeLong, "log.flush.interval.messages",
		func(c *config.Config) string {
			if c.LogFlushIntervalMsgs <= 0 {
				return strconv.FormatInt(math.MaxInt64, 10)
			}
			return strconv.FormatInt(c.LogFlushIntervalMsgs, 10)
		},
		intRange(1, math.MaxInt64), "Fsync the log after this many records."},
	{"max.message.bytes", configTypeInt, "message.max.bytes",
		func(c *config.Config) string { return strconv.Itoa(c.MessageMaxBytes) },
		intRange(0, math.MaxInt32), "Largest record batch size allowed."},
	{"max.compaction.lag.ms", configTypeLong, "log.cleaner.max.compaction.lag.ms",
		func(c *config.Config) string { return strconv.FormatInt(c.LogCleanerMaxCompactionLagMs, 10) },
		intRange(1, math.MaxInt64), "Longest time a record stays uncompacted, whatever the dirty ratio."},
	{"message.timestamp.after.max.ms", configTypeLong, "log.message.timestamp.after.max.ms",
		func(c *config.Config) string { return strconv.FormatInt(c.MessageTimestampAfterMax, 10) },
		intRange(0, math.MaxInt64), "How far (ms) a CreateTime timestamp may lie after the broker's clock."},
	{"message.timestamp.before.max.ms", configTypeLong, "log.message.timestamp.before.max.ms",
		func(c *config.Config) string { return strconv.FormatInt(c.MessageTimestampBeforeMax, 10) },
		intRange(0, math.MaxInt64), "How far (ms) a CreateTime timestamp may lie before the broker's clock."},
	{"message.timestamp.difference.max.ms", configTypeLong, "log.message.timestamp.difference.max.ms",
		func(c *config.Config) string { return strconv.FormatInt(c.MessageTimestampDifferenceMax, 10) },
		intRange(0, math.MaxInt64), "[Deprecated] Both bounds at once, where before/after.max.ms are not set."},
	{"message.timestamp.type", configTypeString, "log.message.timestamp.type",
		func(c *config.Config) string { return c.MessageTimestampType },
		oneOf("CreateTime", "LogAppendTime"), "CreateTime or LogAppendTime."},
	{"min.cleanable.dirty.ratio", configTypeDouble, "log.cleaner.min.cleanable.ratio",
		func(c *config.Config) string { return javaDouble(c.LogCleanerMinCleanableRatio) },
		floatRange(0, 1), "Share of the log that must be dirty before it is compacted."},
	{"min.compaction.lag.ms", configTypeLong, "log.cleaner.min.compaction.lag.ms",
		func(c *config.Config) string { return strconv.FormatInt(c.LogCleanerMinCompactionLagMs, 10) },
		intRange(0, math.MaxInt64), "Shortest time a record stays uncompacted."},
	{"min.insync.replicas", configTypeInt, "min.insync.replicas",
		func(c *config.Config) string { return strconv.Itoa(c.MinInsyncReplicas) },
		intRange(1, math.MaxInt32), "Minimum in-sync replicas for acks=all."},
	{"retention.bytes", configTypeLong, "log.retention.bytes",
		func(c *config.Config) string { return strconv.FormatInt(c.LogRetentionBytes, 10) },
		intRange(math.MinInt64, math.MaxInt64), "Maximum log size before old segments are deleted; -1: unlimited."},
	{"retention.ms", configTypeLong, "log.retention.ms",
		func(c *config.Config) string { return ms(c.LogRetention) },
		intRange(-1, math.MaxInt64), "Maximum age of a segment before deletion; -1: unlimited."},
	{"segment.bytes", configTypeInt, "log.segment.bytes",
		func(c *config.Config) string { return strconv.FormatInt(c.LogSegmentBytes, 10) },
		intRange(14, math.MaxInt32), "Segment file size."},
	{"segment.ms", configTypeLong, "log.roll.ms",
		func(c *config.Config) string { return ms(c.LogSegmentMs) },
		intRange(1, math.MaxInt64), "Time after which a segment is rolled."},
}

func findTopicConfig(name string) (topicConfigDef, bool) {
	for _, d := range topicConfigDefs {
		if d.name == name {
			return d, true
		}
	}
	return topicConfigDef{}, false
}

// topicConfig is a topic's effective configuration, parsed.
type topicConfig struct {
	log           engine.LogConfig
	logAppendTime bool
	maxMessage    int
	minISR        int
	rules         record.Rules // what client batches are validated against
}

// checkTopicConfigs validates overrides: every name known, every value in
// range. The error wraps errInvalidConfig and names the key.
func checkTopicConfigs(overrides map[string]string) error {
	for k, v := range overrides {
		d, ok := findTopicConfig(k)
		if !ok {
			return fmt.Errorf("%w: unknown topic config %q", errInvalidConfig, k)
		}
		if err := d.check(v); err != nil {
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
	return nil
}

// configValue is the effective value of name: the override or the broker's.
func (s *Server) configValue(overrides map[string]string, name string) (v string, source int8) {
	if v, ok := overrides[name]; ok {
		return v, sourceDynamicTopic
	}
	d, _ := findTopicConfig(name)
	v = d.def(&s.cfg)
	if topicConfigDefaults()[name] != v {
		return v, sourceStaticBroker
	}
	return v, sourceDefault
}

// topicConfigDefaults maps each topic config to its value under
// config.Default(): built once, read-only. configValue ran per config of
// every topic created (CreateTopics answers all of them), and building
// config.Default() each time was ~25 KB of garbage per topic.
var topicConfigDefaults = sync.OnceValue(func() map[string]string {
	def := config.Default()
	m := make(map[string]string, len(topicConfigDefs))
	for _, d := range topicConfigDefs {
		m[d.name] = d.def(&def)
	}
	return m
})

// effectiveConfig parses the effective config of a topic with overrides.
// Overrides must have passed checkTopicConfigs; a stored value that no
// longer parses falls back to the broker's.
func (s *Server) effectiveConfig(overrides map[string]string) topicConfig {
	num := func(name string) int64 {
		v, _ := s.configValue(overrides, name)
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			d, _ := findTopicConfig(name)
			n, _ = strconv.ParseInt(d.def(&s.cfg), 10, 64)
		}
		return n
	}
	var tc topicConfig
	tc.log.SegmentBytes = num("segment.bytes")
	tc.log.SegmentMs = time.Duration(num("segment.ms")) * time.Millisecond
	switch r := num("retention.ms"); {
	case r < 0:
		tc.log.RetentionMs = -1
	case r == 0:
		tc.log.RetentionMs = time.Nanosecond // zero would mean "default" to the engine
	default:
		tc.log.RetentionMs = time.Duration(r) * time.Millisecond
	}
	switch r := num("retention.bytes"); {
	case r < 0:
		tc.log.RetentionBytes = -1
	case r == 0:
		tc.log.RetentionBytes = 1 // zero would mean "default" to the engine
	default:
		tc.log.RetentionBytes = r
	}
	tc.log.IndexIntervalBytes = s.cfg.LogIndexIntervalBytes
	tc.log.IndexMaxBytes = s.cfg.LogIndexSizeMaxBytes
	tc.maxMessage = int(num("max.message.bytes"))
	tc.log.MaxBatchBytes = tc.maxMessage
	if f := num("flush.messages"); f > 0 && f < math.MaxInt64 {
		tc.log.FlushMessages = f
	}
	tc.minISR = int(num("min.insync.replicas"))
	policyV, _ := s.configValue(overrides, "cleanup.policy")
	policy, err := config.ParseCleanupPolicy(policyV)
	if err != nil {
		policy = s.cfg.LogCleanupPolicy
	}
	tc.log.Compact, tc.log.Delete = policy.Compact, policy.Delete
	tc.log.DeleteRetention = msDuration(num("delete.retention.ms"))
	tc.log.MinCompactionLag = msDuration(num("min.compaction.lag.ms"))
	tc.log.MaxCompactionLag = msDuration(num("max.compaction.lag.ms"))
	ratioV, _ := s.configValue(overrides, "min.cleanable.dirty.ratio")
	ratio, err := strconv.ParseFloat(strings.TrimSpace(ratioV), 64)
	if err != nil || !(ratio >= 0 && ratio <= 1) {
		ratio = s.cfg.LogCleanerMinCleanableRatio
	}
	tc.log.MinCleanableDirtyRatio = ratio
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
	return tc
}
