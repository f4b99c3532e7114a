package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The definition table, in the spirit of Kafka's ConfigDef: every broker
// key (brokerKeys, keys.go) and every topic key (topicKeys, topickeys.go)
// once, with its type, default, validation, importance, documentation and
// flags. It drives Load and Set (a key's set function is its parser and
// validator), Default (each key's Default applied in turn),
// DescribeConfigs for the broker and for topics (server, through Keys,
// TopicKeys and Describe) and README's configuration tables (MarkdownTable,
// written by `go run ./config/cmd/configdoc` and checked by
// TestReadmeMatchesTable).

// Type is a config's type, numbered as DescribeConfigs v3+ carries it
// (config_type; Kafka's ConfigDef.Type).
type Type int8

// Part of the DescribeConfigs wire format: do not renumber.
const (
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "boolean"
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeShort:
		return "short"
	case TypeLong:
		return "long"
	case TypeDouble:
		return "double"
	case TypeList:
		return "list"
	case TypeClass:
		return "class"
	case TypePassword:
		return "password"
	}
	return "unknown"
}

// Importance is Kafka's ConfigDef.Importance: how likely an operator is to
// need to change the key.
type Importance int8

const (
	High Importance = iota
	Medium
	Low
)

func (i Importance) String() string {
	switch i {
	case High:
		return "high"
	case Medium:
		return "medium"
	}
	return "low"
}

// Source is where a described value comes from, numbered as
// DescribeConfigs v1+ carries it (config_source).
type Source int8

// Part of the DescribeConfigs wire format: do not renumber.
const (
	SourceDynamicTopic Source = 1 // DYNAMIC_TOPIC_CONFIG: a topic's override
	// DYNAMIC_BROKER_CONFIG: this broker's dynamic config
	// (/config/brokers/<id>).
	SourceDynamicBroker Source = 2
	// DYNAMIC_DEFAULT_BROKER_CONFIG: the cluster-wide dynamic default
	// (/config/brokers/<default>).
	SourceDynamicDefaultBroker Source = 3
	SourceStaticBroker         Source = 4 // STATIC_BROKER_CONFIG: server.properties or --set
	SourceDefaultConfig        Source = 5 // DEFAULT_CONFIG: the key's default
)

// Key defines one broker key. The table (brokerKeys) is read-only.
type Key struct {
	Name string
	// Aliases are other names Load accepts for the key (log.dir for
	// log.dirs); they are not described on their own.
	Aliases    []string
	Type       Type
	Importance Importance
	// Default is the value when the key is not set, as it is described
	// and as README shows it; Default() applies it through set. NoDefault:
	// the key has none (described with a null value; Kafka's null default).
	Default   string
	NoDefault bool
	// Dynamic says whether AlterConfigs and IncrementalAlterConfigs on a
	// BROKER resource may change the key at run time, and where (Kafka's
	// DynamicBrokerConfig; see dynamic.go): Static keys are described
	// read_only and refused. Only keys Sluice applies without a restart
	// are marked, with Kafka's scope.
	Dynamic Scope
	// Sensitive keys (passwords, private keys, JAAS lines) are described
	// with is_sensitive and never with their value.
	Sensitive bool
	// Topic is the topic-level key this key is the broker-wide default of
	// (log.retention.ms for retention.ms); "" when there is none.
	Topic string
	Doc   string

	codec // how the key is parsed, validated and read back
}

// codec is how a broker key's value is parsed into a Config and read back.
type codec struct {
	// set parses v and applies it to s.c: the key's validator. The error
	// wraps ErrConfig and names the key.
	set func(s *setter, key, v string) error
	// get renders the key's effective value from a Config, as set would
	// read it back; nil for keys Config keeps no field for (accepted for
	// compatibility, or shadowed by a precedence rule), which are described
	// as given.
	get func(c *Config) string
}

// TopicKey defines one topic-level key. A topic stores only its overrides;
// every other value is the broker's value of the broker key whose Topic
// names it (its synonym), or Default when no broker key does.
type TopicKey struct {
	Name       string
	Type       Type
	Importance Importance
	Default    string // only for a topic key without a broker synonym
	Doc        string
	// check validates an override; the error does not name the key
	// (callers add it with their own error class).
	check func(v string) error
}

// Keys returns the broker keys, sorted by name. The slice is the caller's;
// the Keys are shared and read-only.
func Keys() []Key {
	idx := index()
	return append([]Key(nil), idx.sorted...)
}

// Lookup finds a broker key by its name or an alias.
func Lookup(name string) (Key, bool) {
	i, ok := index().byName[name]
	if !ok {
		return Key{}, false
	}
	return brokerKeys[i], true
}

// TopicKeys returns the topic keys, sorted by name.
func TopicKeys() []TopicKey { return append([]TopicKey(nil), topicKeys...) }

// LookupTopic finds a topic key.
func LookupTopic(name string) (TopicKey, bool) {
	for _, k := range topicKeys {
		if k.Name == name {
			return k, true
		}
	}
	return TopicKey{}, false
}

// Validate checks v as a value of k, as Load would, without keeping it.
func (k Key) Validate(v string) error {
	c := *defaults()
	return newSetter(&c).set(k.Name, v)
}

// Validate checks v as an override of k. The error does not name the key.
func (k TopicKey) Validate(v string) error { return k.check(v) }

// Synonym returns the broker key whose value is k's default, or false for
// a topic key without one (its default is k.Default).
func (k TopicKey) Synonym() (Key, bool) {
	i, ok := index().topicSynonym[k.Name]
	if !ok {
		return Key{}, false
	}
	return brokerKeys[i], true
}

// keyIndex is built once from the tables.
type keyIndex struct {
	byName       map[string]int // name or alias -> index in brokerKeys
	topicSynonym map[string]int // topic key -> index of its broker synonym
	sorted       []Key
}

var index = sync.OnceValue(func() *keyIndex {
	idx := &keyIndex{byName: map[string]int{}, topicSynonym: map[string]int{}}
	for i, k := range brokerKeys {
		for _, n := range append([]string{k.Name}, k.Aliases...) {
			if _, dup := idx.byName[n]; dup {
				panic("config: key " + n + " defined twice") // a table error, caught by every test
			}
			idx.byName[n] = i
		}
		if k.Topic != "" {
			idx.topicSynonym[k.Topic] = i
		}
	}
	idx.sorted = append([]Key(nil), brokerKeys...)
	sort.Slice(idx.sorted, func(i, j int) bool { return idx.sorted[i].Name < idx.sorted[j].Name })
	return idx
})

// defaults is Default() built once, never handed out: what Describe
// compares a value with.
var defaults = sync.OnceValue(func() *Config {
	c := buildDefault()
	return &c
})

// buildDefault applies every key's Default to a zero Config.
func buildDefault() Config {
	var c Config
	s := newSetter(&c)
	for _, k := range brokerKeys {
		if k.NoDefault {
			continue
		}
		if err := k.set(s, k.Name, k.Default); err != nil {
			panic(fmt.Sprintf("config: default of %s: %v", k.Name, err)) // a table error, caught by every test
		}
	}
	s.finish()
	c.explicit = nil
	return c
}

// Describe returns broker key k's value on c as DescribeConfigs shows it:
// nil when the key has no value or is sensitive, and its source:
// DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG when a dynamic
// layer set it (WithDynamic), STATIC_BROKER_CONFIG when it was set (in
// the file, by --set or Set, or a field changed from its default), else
// DEFAULT_CONFIG.
func (c *Config) Describe(k Key) (*string, Source) {
	if src, raw, ok := c.dynamicSource(k.Name); ok {
		v := raw
		if k.get != nil {
			v = k.get(c)
		}
		if k.Sensitive {
			return nil, src
		}
		return &v, src
	}
	raw, set := c.explicit[k.Name]
	var v string
	var has bool
	switch {
	case k.get != nil:
		v = k.get(c)
		if !set && v != k.get(defaults()) {
			set = true // a field changed from its default without Set
		}
		has = set || !k.NoDefault
	case set:
		v, has = raw, true
	case !k.NoDefault:
		v, has = k.Default, true
	}
	src := SourceDefaultConfig
	if set {
		src = SourceStaticBroker
	}
	if !has || k.Sensitive {
		return nil, src
	}
	return &v, src
}

// TopicDefault returns the value a topic without an override of k has on
// a broker configured by c, and its source (the broker key's, see
// Describe), with the broker key it comes
// from (k's own name when it has no broker synonym).
func (c *Config) TopicDefault(k TopicKey) (v string, src Source, synonym string) {
	bk, ok := k.Synonym()
	if !ok {
		return k.Default, SourceDefaultConfig, k.Name
	}
	p, src := c.Describe(bk)
	if p == nil {
		return "", src, bk.Name
	}
	return *p, src, bk.Name
}

// dynamicSource returns the dynamic layer that set name on c, with the
// value as given; ok is false when none did.
func (c *Config) dynamicSource(name string) (src Source, raw string, ok bool) {
	if v, ok := c.dynBroker[name]; ok {
		return SourceDynamicBroker, v, true
	}
	if v, ok := c.dynDefault[name]; ok {
		return SourceDynamicDefaultBroker, v, true
	}
	return 0, "", false
}

// TopicDefaultOf is TopicDefault under Kafka's defaults (config.Default()):
// the DEFAULT_CONFIG synonym of a topic key.
func TopicDefaultOf(k TopicKey) (v string, synonym string) {
	v, _, synonym = defaults().TopicDefault(k)
	return v, synonym
}

// JavaDouble formats f as Java's Double.toString does for the values
// configs hold ("0.5", "1.0", "1.7976931348623157E308"), so that a
// described double reads as Kafka's.
func JavaDouble(f float64) string {
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
