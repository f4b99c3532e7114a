package server

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
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
//	cleanup.policy          LIST  "delete" only (compaction is not implemented,
//	                              so "compact" is INVALID_CONFIG) log.cleanup.policy
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

func ms(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

var topicConfigDefs = []topicConfigDef{
	{"cleanup.policy", configTypeList, "log.cleanup.policy",
		func(*config.Config) string { return "delete" },
		func(v string) error {
			for _, p := range strings.Split(v, ",") {
				switch strings.TrimSpace(p) {
				case "delete":
				case "compact":
					return fmt.Errorf("cleanup.policy=compact is not supported by Sluice (no log compaction)")
				default:
					return fmt.Errorf("unknown cleanup.policy %q", p)
				}
			}
			return nil
		}, "Retention policy for old log segments: delete (compact is not supported)."},
	{"compression.type", configTypeString, "compression.type",
		func(*config.Config) string { return "producer" },
		oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
		"Accepted and stored; batches are kept as the producer compressed them."},
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

// configValue is the effective value of name: the override or the broker's.
func (s *Server) configValue(overrides map[string]string, name string) (v string, source int8) {
	if v, ok := overrides[name]; ok {
		return v, sourceDynamicTopic
	}
	d, _ := findTopicConfig(name)
	v = d.def(&s.cfg)
	def := config.Default()
	if d.def(&def) != v {
		return v, sourceStaticBroker
	}
	return v, sourceDefault
}

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
	}
	return tc
}
