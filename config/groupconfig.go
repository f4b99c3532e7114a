package config

// Per-group configs (KIP-848, Kafka 3.8+): the keys of Kafka's
// group-coordinator GroupConfig that apply to consumer groups, set on a
// GROUP config resource (IncrementalAlterConfigs / AlterConfigs) and read
// by the consumer group coordinator instead of the broker's value.
// Kafka's GroupConfig also has share.* keys (share groups, KIP-932) and,
// from 4.1, streams.* keys: Sluice serves neither kind of group, so they
// are unknown here (INVALID_CONFIG), as they would be on a broker that
// did not define them.
//
// A key's default is its broker synonym's value on this broker
// (Kafka's GroupCoordinatorConfig.extractGroupConfigMap), and a value
// must lie within the broker's bounds (GroupConfig.validateValues).

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The per-group keys, Kafka's names.
const (
	GroupConsumerSessionTimeoutKey    = "consumer.session.timeout.ms"
	GroupConsumerHeartbeatIntervalKey = "consumer.heartbeat.interval.ms"
)

// ErrGroupConfig marks a refused set of group configs (Kafka's
// InvalidConfigurationException: INVALID_CONFIG); the message is Kafka's.
var ErrGroupConfig = errors.New("config: invalid group config")

// GroupKey is one per-group config key.
type GroupKey struct {
	Name string
	// Synonym is the broker key whose value is the default.
	Synonym string
	Type    Type
	Doc     string
}

// groupKeys are the per-group keys, sorted by name.
var groupKeys = []GroupKey{
	{Name: GroupConsumerHeartbeatIntervalKey, Synonym: "group.consumer.heartbeat.interval.ms", Type: TypeInt,
		Doc: "The heartbeat interval given to the members of this consumer group (default: the broker's group.consumer.heartbeat.interval.ms)."},
	{Name: GroupConsumerSessionTimeoutKey, Synonym: "group.consumer.session.timeout.ms", Type: TypeInt,
		Doc: "The timeout to detect client failures of this consumer group's members (default: the broker's group.consumer.session.timeout.ms)."},
}

// GroupKeys returns the per-group keys, sorted by name. The slice is the
// caller's.
func GroupKeys() []GroupKey { return append([]GroupKey(nil), groupKeys...) }

// GroupTimeouts is what a consumer group runs with.
type GroupTimeouts struct {
	Session   time.Duration // consumer.session.timeout.ms
	Heartbeat time.Duration // consumer.heartbeat.interval.ms
}

// GroupTimeouts returns the session timeout and heartbeat interval of a
// group whose stored configs are props: each the group's value when set
// and valid, else the broker's. It does not check the bounds (a stored
// value was checked when it was set, as Kafka's coordinator trusts it).
func (c *Config) GroupTimeouts(props map[string]string) GroupTimeouts {
	t := GroupTimeouts{Session: c.GroupConsumerSessionTimeout, Heartbeat: c.GroupConsumerHeartbeatInterval}
	if ms, err := groupInt(props, GroupConsumerSessionTimeoutKey); err == nil && ms > 0 {
		t.Session = time.Duration(ms) * time.Millisecond
	}
	if ms, err := groupInt(props, GroupConsumerHeartbeatIntervalKey); err == nil && ms > 0 {
		t.Heartbeat = time.Duration(ms) * time.Millisecond
	}
	return t
}

// GroupValue returns the effective value of per-group key k for a group
// whose stored configs are props, and whether the group sets it.
func (c *Config) GroupValue(props map[string]string, k GroupKey) (string, bool) {
	if v, ok := props[k.Name]; ok {
		return v, true
	}
	if isShareGroupKey(k.Name) {
		return c.shareGroupValue(props, k), false
	}
	t := c.GroupTimeouts(nil)
	switch k.Name {
	case GroupConsumerSessionTimeoutKey:
		return strconv.FormatInt(t.Session.Milliseconds(), 10), false
	default:
		return strconv.FormatInt(t.Heartbeat.Milliseconds(), 10), false
	}
}

// CheckGroupConfigs checks a group's complete set of configs as Kafka's
// GroupConfig.validate does, against this broker's bounds: every name a
// per-group key, every value an int of at least 1, each within the
// broker's group.consumer.min/max bounds, and the session timeout above
// the heartbeat interval (an unset one is the broker's value). The error
// wraps ErrGroupConfig with Kafka's message.
func (c *Config) CheckGroupConfigs(props map[string]string) error {
	for name := range props {
		if _, ok := LookupGroupKey(name); !ok {
			return fmt.Errorf("%w: Unknown group config name: %s", ErrGroupConfig, name)
		}
	}
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	hb, st := ms(c.GroupConsumerHeartbeatInterval), ms(c.GroupConsumerSessionTimeout)
	for _, k := range groupKeys {
		if isShareGroupKey(k.Name) {
			continue // checkShareGroupConfigs
		}
		v, err := groupInt(props, k.Name)
		if err != nil {
			return err
		}
		if v == 0 {
			continue // unset
		}
		if k.Name == GroupConsumerHeartbeatIntervalKey {
			hb = v
		} else {
			st = v
		}
	}
	bounds := []struct {
		key, minKey, maxKey string
		v, min, max         int64
	}{
		{GroupConsumerHeartbeatIntervalKey, "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms",
			hb, ms(c.GroupConsumerMinHeartbeatInterval), ms(c.GroupConsumerMaxHeartbeatInterval)},
		{GroupConsumerSessionTimeoutKey, "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms",
			st, ms(c.GroupConsumerMinSessionTimeout), ms(c.GroupConsumerMaxSessionTimeout)},
	}
	for _, b := range bounds {
		if b.v < b.min {
			return fmt.Errorf("%w: %s must be greater than or equal to %s", ErrGroupConfig, b.key, b.minKey)
		}
		if b.v > b.max {
			return fmt.Errorf("%w: %s must be less than or equal to %s", ErrGroupConfig, b.key, b.maxKey)
		}
	}
	if st <= hb {
		return fmt.Errorf("%w: %s must be greater than %s", ErrGroupConfig, GroupConsumerSessionTimeoutKey, GroupConsumerHeartbeatIntervalKey)
	}
	return c.checkShareGroupConfigs(props)
}

// groupInt parses props[name] as Kafka's ConfigDef INT with atLeast(1);
// 0 when unset.
func groupInt(props map[string]string, name string) (int64, error) {
	s, ok := props[name]
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: Not a number of type INT", ErrGroupConfig, s, name)
	}
	if v < 1 {
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: Value must be at least 1", ErrGroupConfig, s, name)
	}
	return v, nil
}

// LookupGroupKey returns per-group key name.
func LookupGroupKey(name string) (GroupKey, bool) {
	for _, k := range groupKeys {
		if k.Name == name {
			return k, true
		}
	}
	return GroupKey{}, false
}
