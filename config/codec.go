package config

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Codecs of the common key shapes. Each takes an accessor for the Config
// field and the bounds of the value; set assigns the parsed value even
// when it is refused (Load discards the Config then).

func int64Key(f func(*Config) *int64, lo, hi int64) codec {
	return codec{
		set: func(s *setter, key, v string) (err error) { *f(s.c), err = parseInt64(key, v, lo, hi); return err },
		get: func(c *Config) string { return strconv.FormatInt(*f(c), 10) },
	}
}

func int32Key(f func(*Config) *int32, lo, hi int32) codec {
	return codec{
		set: func(s *setter, key, v string) (err error) { *f(s.c), err = parseInt32(key, v, lo, hi); return err },
		get: func(c *Config) string { return strconv.FormatInt(int64(*f(c)), 10) },
	}
}

func int16Key(f func(*Config) *int16, lo, hi int16) codec {
	return codec{
		set: func(s *setter, key, v string) error {
			n, err := parseInt32(key, v, int32(lo), int32(hi))
			*f(s.c) = int16(n)
			return err
		},
		get: func(c *Config) string { return strconv.FormatInt(int64(*f(c)), 10) },
	}
}

func intKey(f func(*Config) *int, lo, hi int64) codec {
	return codec{
		set: func(s *setter, key, v string) error {
			n, err := parseInt64(key, v, lo, hi)
			*f(s.c) = int(n)
			return err
		},
		get: func(c *Config) string { return strconv.Itoa(*f(c)) },
	}
}

func boolKey(f func(*Config) *bool) codec {
	return codec{
		set: func(s *setter, key, v string) (err error) { *f(s.c), err = parseBool(key, v); return err },
		get: func(c *Config) string { return strconv.FormatBool(*f(c)) },
	}
}

func floatKey(f func(*Config) *float64, lo, hi float64) codec {
	return codec{
		set: func(s *setter, key, v string) (err error) { *f(s.c), err = parseFloat(key, v, lo, hi); return err },
		get: func(c *Config) string { return JavaDouble(*f(c)) },
	}
}

// durationKey is an integer count of unit, at least min; -1 (when min is
// -1) is unlimited and kept as a negative Duration.
func durationKey(f func(*Config) *time.Duration, unit time.Duration, min int64) codec {
	return codec{
		set: func(s *setter, key, v string) (err error) {
			*f(s.c), err = parseDuration(key, v, unit, min)
			return err
		},
		get: func(c *Config) string { return durationString(*f(c), unit) },
	}
}

// durationString renders d as a count of unit; a negative d is -1
// (unlimited), and math.MaxInt64 (a saturated count) is Long.MAX_VALUE.
func durationString(d, unit time.Duration) string {
	switch {
	case d < 0:
		return "-1"
	case d == math.MaxInt64:
		return strconv.FormatInt(math.MaxInt64, 10)
	}
	return strconv.FormatInt(int64(d/unit), 10)
}

// stringKey keeps the value as given; upper: trimmed and upper-cased, as
// Kafka reads listener names, protocols and mechanisms.
func stringKey(f func(*Config) *string, upper bool) codec {
	return codec{
		set: func(s *setter, key, v string) error {
			if upper {
				v = strings.ToUpper(strings.TrimSpace(v))
			}
			*f(s.c) = v
			return nil
		},
		get: func(c *Config) string { return *f(c) },
	}
}

// listString renders a list as Kafka does: comma-separated.
func listString(f func(*Config) []string) func(*Config) string {
	return func(c *Config) string { return strings.Join(f(c), ",") }
}

// securityKey is an ssl.* or sasl.* key kept as given in
// SecurityProperties and checked where the listeners are built
// (ListenerProperty), as every such key is.
func securityKey() codec {
	return codec{
		set: func(s *setter, key, v string) error {
			s.c.setSecurityProperty(key, v)
			return nil
		},
		get: nil,
	}
}

// ignoredKey is a Kafka key accepted for compatibility with Kafka's
// server.properties whose value Sluice does not use; it must still be an
// integer.
func ignoredKey() codec {
	return codec{
		set: func(s *setter, key, v string) error {
			_, err := parseInt64(key, v, math.MinInt64, math.MaxInt64)
			return err
		},
	}
}

// mapString renders a map as "key<sep>value" entries, sorted, joined by
// commas.
func mapString[V any](m map[string]V, sep string, value func(V) string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + sep + value(m[k])
	}
	return strings.Join(keys, ",")
}
