// Package quota is Sluice's client quota manager, Kafka's ClientQuotaManager
// with its DefaultQuotaCallback (KIP-13, KIP-55, KIP-124, KIP-599): limits
// per user, client id and (user, client id) pair and their defaults,
// sampled rates, and the throttle time a client over its quota must wait.
//
// Four quota types, each a key of an entity's config as Kafka names it:
//
//	producer_byte_rate        bytes/s of produce requests        (long)
//	consumer_byte_rate        bytes/s of fetch responses         (long)
//	request_percentage        % of one request thread's time/s   (double)
//	controller_mutation_rate  partitions created or deleted /s   (double)
//
// The first three are measured by a sampled rate (Kafka's Rate over
// quota.window.num samples of quota.window.size.seconds); the last by a
// token bucket (Kafka's TokenBucket, KIP-599). The manager does not store
// quotas: the broker feeds it what its Store holds (the metastore on a
// single node, ZooKeeper's /config/users and /config/clients in a cluster)
// with Set, and again on every change notification.
package quota

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Type is a quota type.
type Type int

// The quota types, in Keys order.
const (
	Produce Type = iota
	Fetch
	Request
	ControllerMutation
	NumTypes
)

// Keys are the config keys of the quota types, by Type. Kafka's names
// (QuotaConfigs): part of the stored format and the wire protocol.
var Keys = [NumTypes]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}

// integral reports whether a type's key is a LONG in Kafka (the byte
// rates): its values must be whole numbers.
var integral = [NumTypes]bool{true, true, false, false}

// TypeOf returns the type of a config key; ok is false for any other key.
func TypeOf(key string) (Type, bool) {
	for t, k := range Keys {
		if k == key {
			return Type(t), true
		}
	}
	return 0, false
}

// DefaultName is the name of a default entity in ZooKeeper
// (ZooKeeperInternals.DEFAULT_STRING); on the wire a default is a null
// name.
const DefaultName = "<default>"

// Component is one part of an entity: absent, the default, or a name.
// Kafka refuses empty names, so Name is never empty when Set && !Default.
type Component struct {
	Set     bool
	Default bool
	Name    string
}

// Named returns the component naming name.
func Named(name string) Component { return Component{Set: true, Name: name} }

// Default is the default component (<default>).
var Default = Component{Set: true, Default: true}

func (c Component) String() string {
	switch {
	case !c.Set:
		return ""
	case c.Default:
		return DefaultName
	}
	return c.Name
}

// Entity is a quota entity: a user, a client id, or both; either may be
// the default. Comparable: a map key.
type Entity struct {
	User, ClientID Component
}

func (e Entity) String() string {
	switch {
	case e.User.Set && e.ClientID.Set:
		return fmt.Sprintf("user %q client-id %q", e.User.String(), e.ClientID.String())
	case e.User.Set:
		return fmt.Sprintf("user %q", e.User.String())
	}
	return fmt.Sprintf("client-id %q", e.ClientID.String())
}

// Valid reports whether e names at least one component.
func (e Entity) Valid() bool { return e.User.Set || e.ClientID.Set }

// Values are an entity's quotas by type; 0 means none (every quota is
// greater than 0).
type Values [NumTypes]float64

// Empty reports whether v holds no quota.
func (v Values) Empty() bool { return v == Values{} }

// SortedKeys returns the keys set in v, in Keys order.
func (v Values) SortedKeys() []string {
	var ks []string
	for t, x := range v {
		if x > 0 {
			ks = append(ks, Keys[t])
		}
	}
	sort.Strings(ks)
	return ks
}

// ErrInvalid marks a quota alteration Kafka refuses with INVALID_REQUEST:
// an unknown key, a value not above 0, a fraction for a byte rate.
var ErrInvalid = errors.New("quota: invalid")

// CheckValue validates value for key as Kafka's ClientQuotaControlManager
// does (validateQuotaKeyValue).
func CheckValue(key string, value float64) error {
	t, ok := TypeOf(key)
	if !ok {
		return fmt.Errorf("%w: Invalid configuration key %s", ErrInvalid, key)
	}
	if math.IsNaN(value) || value <= 0 {
		return fmt.Errorf("%w: Quota %s must be greater than 0", ErrInvalid, key)
	}
	if math.IsInf(value, 0) {
		return fmt.Errorf("%w: Proposed value for %s is too large", ErrInvalid, key)
	}
	if integral[t] {
		if value > math.MaxInt64 {
			return fmt.Errorf("%w: Proposed value for %s is too large for a LONG.", ErrInvalid, key)
		}
		if math.Abs(value-math.Round(value)) > 1e-6 {
			return fmt.Errorf("%w: Integer quota %s must be an integer", ErrInvalid, key)
		}
	}
	return nil
}

// Apply returns v with set applied (key -> value) and remove's keys
// cleared, after checking each value with CheckValue. A key in both is
// refused.
func (v Values) Apply(set map[string]float64, remove []string) (Values, error) {
	for _, k := range remove {
		t, ok := TypeOf(k)
		if !ok {
			// Kafka removes unknown keys silently in ZooKeeper mode and
			// refuses them in KRaft; refuse, so a typo is seen.
			return v, fmt.Errorf("%w: Invalid configuration key %s", ErrInvalid, k)
		}
		v[t] = 0
	}
	for k, x := range set {
		if err := CheckValue(k, x); err != nil {
			return v, err
		}
		t, _ := TypeOf(k)
		if integral[t] {
			x = math.Round(x)
		}
		v[t] = x
	}
	return v, nil
}
