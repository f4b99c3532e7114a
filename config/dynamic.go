package config

// Dynamic broker configs (Kafka's KIP-226, DynamicBrokerConfig.scala):
// a key marked Dynamic in the table may be changed at run time with
// AlterConfigs or IncrementalAlterConfigs on a BROKER resource, for one
// broker (resource name = its id, stored at /config/brokers/<id>) or as
// the cluster-wide default (resource name "", /config/brokers/<default>).
// A broker's effective config is its static one (server.properties and
// --set) with the default layer applied and then its own layer, each key
// of a later layer replacing the key and its synonyms (log.retention.ms
// over a static log.retention.hours), as Kafka's overrideProps does.
// CheckDynamic validates a layer as Kafka's validateConfigs does, with
// Kafka's messages; WithDynamic applies the layers; Describe and Synonyms
// report the sources in Kafka's order of precedence: DYNAMIC_BROKER_CONFIG,
// DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG.
//
// Which keys are dynamic, and at which scope, is Kafka's
// (DynamicBrokerConfig.AllDynamicConfigs and its PerBrokerConfigs),
// restricted to the keys Sluice applies without a restart: the table's
// Dynamic keys, listener.name.<l>.max.connections and
// .max.connection.creation.rate (cluster-wide), and
// listener.name.<l>.ssl.keystore.location and .ssl.truststore.location
// (per broker). Kafka's other dynamic keys (listeners, SSL passwords and
// inline stores, SASL, metric reporters, ...) are static in Sluice and
// refused like any static key.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Scope is where a dynamic key may be set (Kafka's dynamicConfigUpdateModes).
type Scope int8

const (
	// Static keys change only with a restart (read_only in DescribeConfigs).
	Static Scope = iota
	// ClusterWide keys may be set per broker or as the cluster-wide default.
	ClusterWide
	// PerBroker keys may be set only per broker (Kafka: the listener and
	// SSL keys; in Sluice a listener's keystore and truststore locations).
	PerBroker
)

// String is Kafka's name of the scope ("cluster-wide", "per-broker"), ""
// for Static.
func (s Scope) String() string {
	switch s {
	case ClusterWide:
		return "cluster-wide"
	case PerBroker:
		return "per-broker"
	}
	return ""
}

// DefaultEntity is the entity name of the cluster-wide default, as Kafka
// stores it (/config/brokers/<default>; ZooKeeperInternals.DEFAULT_STRING).
const DefaultEntity = "<default>"

// listenerPrefix starts a per-listener key: listener.name.<l>.<key>.
const listenerPrefix = "listener.name."

// listenerDynamicKeys are the keys a listener prefix may carry
// dynamically at cluster level (Kafka's ClusterLevelListenerConfigs that
// Sluice applies: the listener's connection limits).
var listenerDynamicKeys = []string{"max.connections", "max.connection.creation.rate"}

// listenerSecurityKeys are the keys a listener prefix may carry
// dynamically per broker only (Kafka's DynamicSecurityConfigs that Sluice
// applies: where a TLS listener's keystore and truststore are, so that
// certificates rotate without a restart). Kafka's password-type security
// keys (ssl.key.password, the inline PEM keys) are not dynamic in Sluice:
// Kafka stores them encrypted with password.encoder.secret, which Sluice
// does not implement, and a plain copy in ZooKeeper would be a leak.
var listenerSecurityKeys = []string{"ssl.keystore.location", "ssl.truststore.location"}

// splitListenerKey returns the listener and base key of
// listener.name.<l>.<key>; ok is false for any other name.
func splitListenerKey(name string) (listener, base string, ok bool) {
	rest, ok := strings.CutPrefix(name, listenerPrefix)
	if !ok {
		return "", "", false
	}
	listener, base, ok = strings.Cut(rest, ".")
	if !ok || listener == "" || base == "" {
		return "", "", false
	}
	return listener, base, true
}

// DynamicScope returns the scope at which name may be set dynamically:
// Static for a key that may not (or that no table defines).
func DynamicScope(name string) Scope {
	if _, base, ok := splitListenerKey(name); ok {
		switch {
		case slices.Contains(listenerDynamicKeys, base):
			return ClusterWide
		case slices.Contains(listenerSecurityKeys, base):
			return PerBroker
		}
		return Static
	}
	k, ok := Lookup(name)
	if !ok || k.Name != name { // an alias is not dynamic on its own
		return Static
	}
	return k.Dynamic
}

// BrokerSynonyms returns the names that set the same value as broker key
// name, in Kafka's order of precedence (DynamicBrokerConfig.
// brokerConfigSynonyms): log.retention.ms, .minutes and .hours; log.roll.ms
// and .hours; listener.name.<l>.<key> and <key>; otherwise name alone.
func BrokerSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	if _, base, ok := splitListenerKey(name); ok {
		return []string{name, base}
	}
	return []string{name}
}

// DynamicError is a dynamic layer Kafka would refuse, with Kafka's message
// (the server answers it as INVALID_REQUEST, as Kafka's ConfigAdminManager
// does). It matches ErrConfig.
type DynamicError struct{ Msg string }

func (e *DynamicError) Error() string { return e.Msg }

// Is makes a DynamicError an ErrConfig.
func (e *DynamicError) Is(target error) bool { return target == ErrConfig }

// scalaSet renders names as Scala's Set.toString does for the few names
// an error lists ("Set(a, b)"), sorted so that the message is stable.
func scalaSet(names []string) string {
	slices.Sort(names)
	return "Set(" + strings.Join(names, ", ") + ")"
}

// CheckDynamic validates props as a complete dynamic layer: the
// cluster-wide default (perBroker false) or one broker's. The checks and
// messages are Kafka's (DynamicBrokerConfig.validateConfigs): a key that
// is not dynamic (unknown keys included: Sluice has no plugins that could
// read them) "Cannot update these configs dynamically: Set(...)", a value
// its key's validator refuses "Invalid value V for configuration K: why",
// and at the default level a per-broker key "Cannot update these configs
// at default cluster level, broker id must be specified: Set(...)"; more
// than MaxDynamicEntries keys are refused too. Values echoed in a message
// are cut to 128 bytes. The error is a *DynamicError.
func CheckDynamic(props map[string]string, perBroker bool) error {
	if len(props) > MaxDynamicEntries {
		return &DynamicError{fmt.Sprintf("Too many dynamic configs: %d, at most %d", len(props), MaxDynamicEntries)}
	}
	var static, unprefixed, brokerOnly []string
	for name := range props {
		switch DynamicScope(name) {
		case Static:
			if slices.Contains(listenerSecurityKeys, name) {
				unprefixed = append(unprefixed, name)
			} else {
				static = append(static, name)
			}
		case PerBroker:
			brokerOnly = append(brokerOnly, name)
		}
	}
	if len(static) > 0 {
		return &DynamicError{"Cannot update these configs dynamically: " + scalaSet(static)}
	}
	if len(unprefixed) > 0 {
		return &DynamicError{"These security configs can be dynamically updated only per-listener using the listener prefix: " + scalaSet(unprefixed)}
	}
	names := slices.Sorted(maps.Keys(props))
	for _, name := range names {
		if err := validateDynamicValue(name, props[name]); err != nil {
			return &DynamicError{fmt.Sprintf("Invalid value %s for configuration %s: %v", clip(props[name]), name, clipErr(err))}
		}
	}
	if !perBroker && len(brokerOnly) > 0 {
		return &DynamicError{"Cannot update these configs at default cluster level, broker id must be specified: " + scalaSet(brokerOnly)}
	}
	return nil
}

// MaxDynamicEntries bounds the keys of one dynamic layer (Sluice's own
// bound; Kafka has none): the table's dynamic keys are a few dozen, and
// only listener.name.<l>.* keys, one pair per listener, add to them, so
// this refuses only a client filling the store with made-up listeners.
const MaxDynamicEntries = 1000

// clip shortens a value echoed in an error: a hostile megabyte of digits
// is not sent back whole.
func clip(v string) string {
	const max = 128
	if len(v) <= max {
		return v
	}
	return v[:max] + "..."
}

func clipErr(err error) string { return clip(err.Error()) }

// validateDynamicValue checks v with the validator of name's key (a
// listener-prefixed key's base key, as Kafka's validateConfigTypes). The
// error does not name the key.
func validateDynamicValue(name, v string) error {
	base := name
	if _, b, ok := splitListenerKey(name); ok {
		base = b
	}
	k, ok := Lookup(base)
	if !ok {
		return errors.New("unknown config")
	}
	err := k.Validate(v)
	if err == nil {
		return nil
	}
	// keyError's "config: <key>: why": keep why.
	msg := strings.TrimPrefix(err.Error(), ErrConfig.Error()+": ")
	msg = strings.TrimPrefix(msg, base+": ")
	return errors.New(msg)
}

// WithDynamic returns c, a static config, with the dynamic layers applied:
// def (the cluster-wide default) and then broker (this broker's), each key
// replacing its synonyms of lower layers. An entry CheckDynamic would
// refuse on its own (not dynamic, a bad value, per-broker at the default
// level) is skipped, as Kafka ignores it with an error log, and named in
// the error, which is for logging; the rest apply. c is not changed; the
// maps are copied. The result is not Validated: callers that need the
// relations between keys checked call Validate.
func (c *Config) WithDynamic(def, broker map[string]string) (Config, error) {
	nc := *c
	nc.SecurityProperties = maps.Clone(c.SecurityProperties)
	static := c.explicit
	var errs []error
	apply := func(layer map[string]string, perBroker bool) map[string]string {
		kept := map[string]string{}
		s := newSetter(&nc)
		for _, name := range slices.Sorted(maps.Keys(layer)) {
			v := layer[name]
			if err := CheckDynamic(map[string]string{name: v}, perBroker); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := s.set(name, v); err != nil { // checked above: not expected
				errs = append(errs, err)
				continue
			}
			kept[name] = v
		}
		s.finish()
		return kept
	}
	nc.dynDefault = apply(def, false)
	nc.dynBroker = apply(broker, true)
	nc.explicit = static
	return nc, errors.Join(errs...)
}

// DynamicLayers returns the dynamic layers WithDynamic applied to c, as
// given (nil maps when none): the caller must not modify them.
func (c *Config) DynamicLayers() (def, broker map[string]string) { return c.dynDefault, c.dynBroker }

// Synonym is one entry of a described config's synonyms: a name that sets
// its value, the value there (nil: none, or sensitive) and its source.
type Synonym struct {
	Name   string
	Value  *string
	Source Source
}

// Synonyms returns the synonyms of broker key k on c in Kafka's order
// (ConfigHelper.configSynonyms): every source in precedence order,
// DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG, DEFAULT_CONFIG, and within each source the
// synonyms of BrokerSynonyms in order; entries before k's own name are
// dropped (a listener override when the base key is described). With
// perBroker false (the cluster-wide default described) only the
// DYNAMIC_DEFAULT_BROKER_CONFIG entries are kept.
func (c *Config) Synonyms(k Key, perBroker bool) []Synonym {
	names := BrokerSynonyms(k.Name)
	var out []Synonym
	add := func(name, v string, src Source) {
		var vp *string
		if !k.Sensitive {
			vp = &v
		}
		out = append(out, Synonym{Name: name, Value: vp, Source: src})
	}
	for _, n := range names {
		if v, ok := c.dynBroker[n]; ok {
			add(n, v, SourceDynamicBroker)
		}
	}
	for _, n := range names {
		if v, ok := c.dynDefault[n]; ok {
			add(n, v, SourceDynamicDefaultBroker)
		}
	}
	for _, n := range names {
		if v, ok := c.explicit[n]; ok {
			add(n, v, SourceStaticBroker)
		} else if dv, src := c.Describe(k); n == k.Name && src == SourceStaticBroker && dv != nil {
			add(n, *dv, SourceStaticBroker) // a field changed without Set
		}
	}
	for _, n := range names {
		if dk, ok := Lookup(n); ok && dk.Name == n && !dk.NoDefault {
			add(n, dk.Default, SourceDefaultConfig)
		}
	}
	if !perBroker {
		out = slices.DeleteFunc(out, func(s Synonym) bool { return s.Source != SourceDynamicDefaultBroker })
	}
	for len(out) > 0 && out[0].Name != k.Name {
		out = out[1:]
	}
	return out
}

// threadKeys are the dynamic thread counts whose changes Kafka bounds
// (DynamicThreadPool, DataPlaneAcceptor and LogCleaner's
// validateReconfiguration): at least 1, at least half and at most double
// the current value, so that one alter cannot start millions of threads.
var threadKeys = []string{"log.cleaner.threads", "num.io.threads", "num.network.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir"}

// CheckReconfiguration checks the change from the effective config cur to
// next as Kafka's reconfigurables validate theirs: a thread count that
// changes must stay within [max(1, cur/2), cur*2]. The message is Kafka's
// cause, which the caller prefixes as Kafka does ("Invalid dynamic
// configuration").
func CheckReconfiguration(cur, next *Config) error {
	for _, name := range threadKeys {
		k, _ := Lookup(name)
		ov, _ := cur.Describe(k)
		nv, _ := next.Describe(k)
		if ov == nil || nv == nil || *ov == *nv {
			continue
		}
		o, err1 := strconv.ParseInt(*ov, 10, 64)
		n, err2 := strconv.ParseInt(*nv, 10, 64)
		if err1 != nil || err2 != nil {
			continue // validated by the table; not expected
		}
		if name == "log.cleaner.threads" {
			switch {
			case n < 1:
				return errors.New("Log cleaner threads should be at least 1")
			case n < o/2:
				return fmt.Errorf("Log cleaner threads cannot be reduced to less than half the current value %d", o)
			case n > o*2:
				return fmt.Errorf("Log cleaner threads cannot be increased to more than double the current value %d", o)
			}
			continue
		}
		prefix := fmt.Sprintf("Dynamic thread count update validation failed for %s=%d", name, n)
		switch {
		case n <= 0:
			return errors.New(prefix + ", value should be at least 1")
		case n < o/2:
			return fmt.Errorf("%s, value should be at least half the current value %d", prefix, o)
		case n > o*2:
			return fmt.Errorf("%s, value should not be greater than double the current value %d", prefix, o)
		}
	}
	return nil
}
