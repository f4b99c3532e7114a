package config

// Share groups (KIP-932): the broker's group.share.* keys and the share.*
// per-group configs, with Kafka 4.2's rules (GroupCoordinatorConfig and
// ShareGroupConfig for the broker, GroupConfig.validateValues for a
// group), and Kafka 4.3's share.delivery.count.limit and
// share.partition.max.record.locks (KIP-1240), bounded by the ranges of
// their broker keys.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ShareGroupBroker is the broker's share group settings.
type ShareGroupBroker struct {
	Enable                                     bool          // group.share.enable
	HeartbeatInterval                          time.Duration // group.share.heartbeat.interval.ms
	MinHeartbeatInterval, MaxHeartbeatInterval time.Duration
	SessionTimeout                             time.Duration // group.share.session.timeout.ms
	MinSessionTimeout, MaxSessionTimeout       time.Duration
	MaxSize                                    int    // group.share.max.size
	RecordLockDurationMs                       int    // group.share.record.lock.duration.ms
	MinRecordLockDurationMs                    int    // group.share.min.record.lock.duration.ms
	MaxRecordLockDurationMs                    int    // group.share.max.record.lock.duration.ms
	DeliveryCountLimit                         int    // group.share.delivery.count.limit
	PartitionMaxRecordLocks                    int    // group.share.partition.max.record.locks
	DLQAutoCreateTopics                        bool   // errors.deadletterqueue.auto.create.topics.enable (KIP-1191)
	DLQTopicNamePrefix                         string // errors.deadletterqueue.topic.name.prefix (KIP-1191)
	StateTopicPartitions                       int32  // share.coordinator.state.topic.num.partitions
	StateTopicReplication                      int16  // share.coordinator.state.topic.replication.factor (cluster mode)
	StateTopicMinISR                           int    // share.coordinator.state.topic.min.isr (cluster mode)
}

// ServesShareGroups reports whether group.share.enable is set: the share
// group APIs are then in the dispatch table.
func (c *Config) ServesShareGroups() bool { return c.GroupShare.Enable }

// checkShareGroupBounds is Kafka's GroupCoordinatorConfig and
// ShareGroupConfig rules for the share group keys.
func (c *Config) checkShareGroupBounds() error {
	s := c.GroupShare
	if s.MinHeartbeatInterval > s.MaxHeartbeatInterval {
		return keyError("group.share.max.heartbeat.interval.ms", "must be greater than or equal to group.share.min.heartbeat.interval.ms")
	}
	if s.HeartbeatInterval < s.MinHeartbeatInterval || s.HeartbeatInterval > s.MaxHeartbeatInterval {
		return keyError("group.share.heartbeat.interval.ms", "%d is outside [%d, %d]", s.HeartbeatInterval.Milliseconds(),
			s.MinHeartbeatInterval.Milliseconds(), s.MaxHeartbeatInterval.Milliseconds())
	}
	if s.MinSessionTimeout > s.MaxSessionTimeout {
		return keyError("group.share.max.session.timeout.ms", "must be greater than or equal to group.share.min.session.timeout.ms")
	}
	if s.SessionTimeout < s.MinSessionTimeout || s.SessionTimeout > s.MaxSessionTimeout {
		return keyError("group.share.session.timeout.ms", "%d is outside [%d, %d]", s.SessionTimeout.Milliseconds(),
			s.MinSessionTimeout.Milliseconds(), s.MaxSessionTimeout.Milliseconds())
	}
	if s.HeartbeatInterval >= s.SessionTimeout {
		return keyError("group.share.heartbeat.interval.ms", "must be less than group.share.session.timeout.ms")
	}
	if s.MinRecordLockDurationMs > s.MaxRecordLockDurationMs {
		return keyError("group.share.max.record.lock.duration.ms", "must be greater than or equal to group.share.min.record.lock.duration.ms")
	}
	if d := s.RecordLockDurationMs; d < s.MinRecordLockDurationMs || d > s.MaxRecordLockDurationMs {
		return keyError("group.share.record.lock.duration.ms", "%d is outside [%d, %d]", d, s.MinRecordLockDurationMs, s.MaxRecordLockDurationMs)
	}
	return nil
}

// The share group keys a GROUP config resource takes, Kafka's names.
const (
	GroupShareAutoOffsetResetKey         = "share.auto.offset.reset"
	GroupShareDeliveryCountLimitKey      = "share.delivery.count.limit"
	GroupShareHeartbeatIntervalKey       = "share.heartbeat.interval.ms"
	GroupShareIsolationLevelKey          = "share.isolation.level"
	GroupSharePartitionMaxRecordLocksKey = "share.partition.max.record.locks"
	GroupShareRecordLockDurationKey      = "share.record.lock.duration.ms"
	GroupShareRedeliveryBackoffKey       = "share.redelivery.backoff.ms"
	GroupShareRedeliveryBackoffMaxKey    = "share.redelivery.backoff.max.ms"
	GroupShareRedeliveryBackoffMultKey   = "share.redelivery.backoff.multiplier"
	GroupShareRenewAcknowledgeEnableKey  = "share.renew.acknowledge.enable"
	GroupShareSessionTimeoutKey          = "share.session.timeout.ms"

	// KIP-1191's dead-letter topic of a share group.
	GroupDLQTopicNameKey        = "errors.deadletterqueue.topic.name"
	GroupDLQCopyRecordEnableKey = "errors.deadletterqueue.copy.record.enable"
)

// shareGroupKeys are the share.* per-group keys, sorted by name.
var shareGroupKeys = []GroupKey{
	{Name: GroupDLQCopyRecordEnableKey, Type: TypeBoolean,
		Doc: "Whether a dead letter of this share group carries the record's key and value, not only the headers naming it (KIP-1191; default false)."},
	{Name: GroupDLQTopicNameKey, Type: TypeString,
		Doc: "The dead-letter topic of this share group: records rejected or archived at the delivery-count limit are written there before they are archived (KIP-1191; must start with the broker's errors.deadletterqueue.topic.name.prefix; default none)."},
	{Name: GroupShareAutoOffsetResetKey, Type: TypeString,
		Doc: "Where a share-partition of this group starts: latest (default), earliest, or by_duration:<ISO-8601 duration> back from now."},
	{Name: GroupShareDeliveryCountLimitKey, Synonym: "group.share.delivery.count.limit", Type: TypeInt,
		Doc: "Deliveries of a record to this group before it is archived (2-10; default: the broker's group.share.delivery.count.limit; Kafka 4.3, KIP-1240)."},
	{Name: GroupShareHeartbeatIntervalKey, Synonym: "group.share.heartbeat.interval.ms", Type: TypeInt,
		Doc: "The heartbeat interval given to this share group's members (default: the broker's group.share.heartbeat.interval.ms)."},
	{Name: GroupShareIsolationLevelKey, Type: TypeString,
		Doc: "read_uncommitted (default) or read_committed: whether this group skips records of aborted transactions."},
	{Name: GroupSharePartitionMaxRecordLocksKey, Synonym: "group.share.partition.max.record.locks", Type: TypeInt,
		Doc: "Most records in flight per share-partition of this group (100-10000; default: the broker's group.share.partition.max.record.locks; Kafka 4.3, KIP-1240)."},
	{Name: GroupShareRecordLockDurationKey, Synonym: "group.share.record.lock.duration.ms", Type: TypeInt,
		Doc: "How long a record delivered to this group stays acquired (default: the broker's group.share.record.lock.duration.ms)."},
	{Name: GroupShareRedeliveryBackoffKey, Type: TypeInt,
		Doc: "Sluice's own, beyond Kafka: how long a record released by this group's consumers, or whose lock expired, stays unavailable before its next delivery (0-3600000; default 0, redelivered at once as Kafka does)."},
	{Name: GroupShareRedeliveryBackoffMaxKey, Type: TypeInt,
		Doc: "Sluice's own, beyond Kafka: the cap of the exponential redelivery backoff (0-3600000, at least share.redelivery.backoff.ms when set; default 0, no cap)."},
	{Name: GroupShareRedeliveryBackoffMultKey, Type: TypeDouble,
		Doc: "Sluice's own, beyond Kafka: the redelivery backoff after a record's n-th delivery is share.redelivery.backoff.ms times this to the power n-1, capped at share.redelivery.backoff.max.ms (1-100; default 1, a fixed backoff)."},
	{Name: GroupShareRenewAcknowledgeEnableKey, Type: TypeBoolean,
		Doc: "Whether this group's consumers may renew a record's acquisition lock (KIP-1222); when false a Renew acknowledgement is refused with INVALID_RECORD_STATE (default true, as Kafka's GroupConfig)."},
	{Name: GroupShareSessionTimeoutKey, Synonym: "group.share.session.timeout.ms", Type: TypeInt,
		Doc: "The timeout to detect failures of this share group's members (default: the broker's group.share.session.timeout.ms)."},
}

func init() { groupKeys = append(groupKeys, shareGroupKeys...) }

// isShareGroupKey reports whether name is a share.* group key.
func isShareGroupKey(name string) bool {
	return strings.HasPrefix(name, "share.") || strings.HasPrefix(name, "errors.deadletterqueue.")
}

// ShareGroupSettings is what a share group runs with.
type ShareGroupSettings struct {
	SessionTimeout          time.Duration
	HeartbeatInterval       time.Duration
	RecordLockDuration      time.Duration
	DeliveryCountLimit      int
	PartitionMaxRecordLocks int
	AutoOffsetReset         string // latest, earliest or by_duration:<ISO-8601>
	IsolationLevel          string // read_uncommitted or read_committed
	RenewAcknowledgeEnable  bool
	// The redelivery backoff, Sluice's own (share.redelivery.backoff.*):
	// 0 backoff disables it, 0 max is no cap, multiplier 1 a fixed
	// backoff.
	RedeliveryBackoff           time.Duration
	RedeliveryBackoffMax        time.Duration
	RedeliveryBackoffMultiplier float64
	// KIP-1191: the dead-letter topic ("" none) and whether a dead letter
	// copies the record's key and value.
	DLQTopic      string
	DLQCopyRecord bool
}

// ShareGroupSettings returns the settings of a share group whose stored
// configs are props: each the group's value when set and valid, else the
// broker's (or Kafka's default for the keys without a broker synonym).
func (c *Config) ShareGroupSettings(props map[string]string) ShareGroupSettings {
	s := c.GroupShare
	out := ShareGroupSettings{
		SessionTimeout:          s.SessionTimeout,
		HeartbeatInterval:       s.HeartbeatInterval,
		RecordLockDuration:      time.Duration(s.RecordLockDurationMs) * time.Millisecond,
		DeliveryCountLimit:      s.DeliveryCountLimit,
		PartitionMaxRecordLocks: s.PartitionMaxRecordLocks,
		AutoOffsetReset:         "latest",
		IsolationLevel:          "read_uncommitted",
		RenewAcknowledgeEnable:  true, // Kafka's GroupConfig default

		RedeliveryBackoffMultiplier: 1,
	}
	ms := func(k string, d *time.Duration) {
		if v, err := groupInt(props, k); err == nil && v > 0 {
			*d = time.Duration(v) * time.Millisecond
		}
	}
	ms(GroupShareSessionTimeoutKey, &out.SessionTimeout)
	ms(GroupShareHeartbeatIntervalKey, &out.HeartbeatInterval)
	ms(GroupShareRecordLockDurationKey, &out.RecordLockDuration)
	if v, err := groupInt(props, GroupShareDeliveryCountLimitKey); err == nil && v > 0 {
		out.DeliveryCountLimit = int(v)
	}
	if v, err := groupInt(props, GroupSharePartitionMaxRecordLocksKey); err == nil && v > 0 {
		out.PartitionMaxRecordLocks = int(v)
	}
	if v, ok := props[GroupShareAutoOffsetResetKey]; ok && checkAutoOffsetReset(v) == nil {
		out.AutoOffsetReset = strings.ToLower(strings.TrimSpace(v))
		if strings.HasPrefix(out.AutoOffsetReset, "by_duration:") {
			out.AutoOffsetReset = "by_duration:" + strings.TrimSpace(v)[len("by_duration:"):]
		}
	}
	if v, ok := props[GroupShareIsolationLevelKey]; ok && (v == "read_committed" || v == "read_uncommitted") {
		out.IsolationLevel = v
	}
	if v, ok := props[GroupShareRenewAcknowledgeEnableKey]; ok {
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			out.RenewAcknowledgeEnable = b
		}
	}
	if v, err := backoffMs(props, GroupShareRedeliveryBackoffKey); err == nil {
		out.RedeliveryBackoff = time.Duration(v) * time.Millisecond
	}
	if v, err := backoffMs(props, GroupShareRedeliveryBackoffMaxKey); err == nil {
		out.RedeliveryBackoffMax = time.Duration(v) * time.Millisecond
	}
	if v, err := backoffMultiplier(props); err == nil {
		out.RedeliveryBackoffMultiplier = v
	}
	out.DLQTopic = strings.TrimSpace(props[GroupDLQTopicNameKey])
	if v, ok := props[GroupDLQCopyRecordEnableKey]; ok {
		out.DLQCopyRecord, _ = strconv.ParseBool(strings.TrimSpace(v))
	}
	return out
}

// maxRedeliveryBackoffMs bounds share.redelivery.backoff.ms and .max.ms:
// an hour.
const maxRedeliveryBackoffMs = 3600000

// backoffMs parses share.redelivery.backoff.ms or .max.ms: an INT in
// [0, maxRedeliveryBackoffMs]; 0 when unset.
func backoffMs(props map[string]string, key string) (int64, error) {
	s, ok := props[key]
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: Not a number of type INT", ErrGroupConfig, s, key)
	}
	if v < 0 || v > maxRedeliveryBackoffMs {
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: Value must be in [0, %d]", ErrGroupConfig, s, key, maxRedeliveryBackoffMs)
	}
	return v, nil
}

// backoffMultiplier parses share.redelivery.backoff.multiplier: a DOUBLE
// in [1, 100]; 1 when unset.
func backoffMultiplier(props map[string]string) (float64, error) {
	s, ok := props[GroupShareRedeliveryBackoffMultKey]
	if !ok {
		return 1, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: Not a number of type DOUBLE", ErrGroupConfig, s, GroupShareRedeliveryBackoffMultKey)
	}
	if !(v >= 1 && v <= 100) { // also refuses NaN
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: Value must be in [1, 100]", ErrGroupConfig, s, GroupShareRedeliveryBackoffMultKey)
	}
	return v, nil
}

// checkRedeliveryBackoff checks the share.redelivery.backoff.* keys: each
// in range, and a set cap not below the backoff.
func checkRedeliveryBackoff(props map[string]string) error {
	b, err := backoffMs(props, GroupShareRedeliveryBackoffKey)
	if err != nil {
		return err
	}
	m, err := backoffMs(props, GroupShareRedeliveryBackoffMaxKey)
	if err != nil {
		return err
	}
	if _, err := backoffMultiplier(props); err != nil {
		return err
	}
	if m > 0 && m < b {
		return fmt.Errorf("%w: %s must be greater than or equal to %s", ErrGroupConfig, GroupShareRedeliveryBackoffMaxKey, GroupShareRedeliveryBackoffKey)
	}
	return nil
}

// shareGroupValue is GroupValue for a share.* key.
func (c *Config) shareGroupValue(props map[string]string, k GroupKey) string {
	s := c.ShareGroupSettings(nil)
	switch k.Name {
	case GroupShareAutoOffsetResetKey:
		return s.AutoOffsetReset
	case GroupShareDeliveryCountLimitKey:
		return strconv.Itoa(s.DeliveryCountLimit)
	case GroupShareHeartbeatIntervalKey:
		return strconv.FormatInt(s.HeartbeatInterval.Milliseconds(), 10)
	case GroupShareIsolationLevelKey:
		return s.IsolationLevel
	case GroupSharePartitionMaxRecordLocksKey:
		return strconv.Itoa(s.PartitionMaxRecordLocks)
	case GroupShareRecordLockDurationKey:
		return strconv.FormatInt(s.RecordLockDuration.Milliseconds(), 10)
	case GroupShareRenewAcknowledgeEnableKey:
		return strconv.FormatBool(s.RenewAcknowledgeEnable)
	case GroupShareRedeliveryBackoffKey:
		return strconv.FormatInt(s.RedeliveryBackoff.Milliseconds(), 10)
	case GroupShareRedeliveryBackoffMaxKey:
		return strconv.FormatInt(s.RedeliveryBackoffMax.Milliseconds(), 10)
	case GroupDLQTopicNameKey:
		return s.DLQTopic
	case GroupDLQCopyRecordEnableKey:
		return strconv.FormatBool(s.DLQCopyRecord)
	case GroupShareRedeliveryBackoffMultKey:
		v := strconv.FormatFloat(s.RedeliveryBackoffMultiplier, 'f', -1, 64)
		if !strings.ContainsAny(v, ".eE") {
			v += ".0" // as Java prints a double
		}
		return v
	default:
		return strconv.FormatInt(s.SessionTimeout.Milliseconds(), 10)
	}
}

// isoDuration is ISO-8601's PnDTnHnMn.nS as Java's Duration.parse takes it
// (days, hours, minutes, seconds; a leading sign refused here, as Kafka
// refuses negative durations).
var isoDuration = regexp.MustCompile(`^[pP](?:\d+[dD])?(?:[tT](?:\d+[hH])?(?:\d+[mM])?(?:\d+(?:[.,]\d{0,9})?[sS])?)?$`)

// checkAutoOffsetReset is Kafka's ShareGroupAutoOffsetResetStrategy
// validator.
func checkAutoOffsetReset(v string) error {
	s := strings.ToLower(strings.TrimSpace(v))
	switch {
	case s == "latest", s == "earliest":
		return nil
	case strings.HasPrefix(s, "by_duration:"):
		d := strings.TrimSpace(v)[len("by_duration:"):]
		if d == "" || strings.EqualFold(d, "P") || strings.EqualFold(d, "PT") || !isoDuration.MatchString(d) ||
			strings.HasSuffix(strings.ToUpper(d), "T") {
			return fmt.Errorf("%w: Invalid value %s for configuration %s: Unable to parse duration string '%s' for by_duration reset strategy.",
				ErrGroupConfig, v, GroupShareAutoOffsetResetKey, d)
		}
		return nil
	}
	return fmt.Errorf("%w: Invalid value %s for configuration %s: Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.",
		ErrGroupConfig, v, GroupShareAutoOffsetResetKey, v, GroupShareAutoOffsetResetKey)
}

// checkShareGroupConfigs checks the share.* keys of a group's complete set
// of configs as Kafka's GroupConfig.validate: types, each value within the
// broker's bounds, the session timeout above the heartbeat interval (an
// unset one is the broker's value). Errors wrap ErrGroupConfig.
func (c *Config) checkShareGroupConfigs(props map[string]string) error {
	s := c.GroupShare
	ints := map[string]int64{}
	for _, k := range []string{GroupShareSessionTimeoutKey, GroupShareHeartbeatIntervalKey, GroupShareRecordLockDurationKey,
		GroupShareDeliveryCountLimitKey, GroupSharePartitionMaxRecordLocksKey} {
		v, err := groupInt(props, k)
		if err != nil {
			return err
		}
		ints[k] = v
	}
	if err := checkRedeliveryBackoff(props); err != nil {
		return err
	}
	if err := c.checkDLQ(props); err != nil {
		return err
	}
	if v, ok := props[GroupShareAutoOffsetResetKey]; ok {
		if err := checkAutoOffsetReset(v); err != nil {
			return err
		}
	}
	if v, ok := props[GroupShareIsolationLevelKey]; ok && v != "read_committed" && v != "read_uncommitted" {
		return fmt.Errorf("%w: Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", ErrGroupConfig, v, GroupShareIsolationLevelKey)
	}
	if v, ok := props[GroupShareRenewAcknowledgeEnableKey]; ok {
		if _, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil || !strings.EqualFold(strings.TrimSpace(v), "true") && !strings.EqualFold(strings.TrimSpace(v), "false") {
			return fmt.Errorf("%w: Invalid value %s for configuration %s: Expected value to be either true or false", ErrGroupConfig, v, GroupShareRenewAcknowledgeEnableKey)
		}
	}
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	or := func(v, def int64) int64 {
		if v == 0 {
			return def
		}
		return v
	}
	hb := or(ints[GroupShareHeartbeatIntervalKey], ms(s.HeartbeatInterval))
	st := or(ints[GroupShareSessionTimeoutKey], ms(s.SessionTimeout))
	bounds := []struct {
		key, minKey, maxKey string
		set                 bool
		v, min, max         int64
	}{
		{GroupShareHeartbeatIntervalKey, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms",
			true, hb, ms(s.MinHeartbeatInterval), ms(s.MaxHeartbeatInterval)},
		{GroupShareSessionTimeoutKey, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms",
			true, st, ms(s.MinSessionTimeout), ms(s.MaxSessionTimeout)},
		{GroupShareRecordLockDurationKey, "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms",
			ints[GroupShareRecordLockDurationKey] > 0, ints[GroupShareRecordLockDurationKey], int64(s.MinRecordLockDurationMs), int64(s.MaxRecordLockDurationMs)},
		{GroupShareDeliveryCountLimitKey, "2", "10",
			ints[GroupShareDeliveryCountLimitKey] > 0, ints[GroupShareDeliveryCountLimitKey], 2, 10},
		{GroupSharePartitionMaxRecordLocksKey, "100", "10000",
			ints[GroupSharePartitionMaxRecordLocksKey] > 0, ints[GroupSharePartitionMaxRecordLocksKey], 100, 10000},
	}
	for _, b := range bounds {
		if !b.set {
			continue
		}
		if b.v < b.min {
			return fmt.Errorf("%w: %s must be greater than or equal to %s", ErrGroupConfig, b.key, b.minKey)
		}
		if b.v > b.max {
			return fmt.Errorf("%w: %s must be less than or equal to %s", ErrGroupConfig, b.key, b.maxKey)
		}
	}
	if st <= hb {
		return fmt.Errorf("%w: %s must be greater than %s", ErrGroupConfig, GroupShareSessionTimeoutKey, GroupShareHeartbeatIntervalKey)
	}
	return nil
}

// checkDLQ checks KIP-1191's group keys: a boolean copy.record.enable, and
// a topic name that is a legal topic name starting with the broker's
// errors.deadletterqueue.topic.name.prefix (an empty one is none).
func (c *Config) checkDLQ(props map[string]string) error {
	if v, ok := props[GroupDLQCopyRecordEnableKey]; ok {
		t := strings.TrimSpace(v)
		if !strings.EqualFold(t, "true") && !strings.EqualFold(t, "false") {
			return fmt.Errorf("%w: Invalid value %s for configuration %s: Expected value to be either true or false", ErrGroupConfig, v, GroupDLQCopyRecordEnableKey)
		}
	}
	name := strings.TrimSpace(props[GroupDLQTopicNameKey])
	if name == "" {
		return nil
	}
	if !legalTopicName.MatchString(name) || len(name) > 249 || name == "." || name == ".." {
		return fmt.Errorf("%w: Invalid value %s for configuration %s: not a legal topic name", ErrGroupConfig, name, GroupDLQTopicNameKey)
	}
	if p := c.GroupShare.DLQTopicNamePrefix; !strings.HasPrefix(name, p) {
		return fmt.Errorf("%w: Invalid value %s for configuration %s: the topic name must start with %q (errors.deadletterqueue.topic.name.prefix)", ErrGroupConfig, name, GroupDLQTopicNameKey, p)
	}
	return nil
}

// legalTopicName is Kafka's Topic.LEGAL_CHARS.
var legalTopicName = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
