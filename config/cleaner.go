package config

import (
	"fmt"
	"strings"
)

// CleanupPolicy is a parsed cleanup.policy (topic) or log.cleanup.policy
// (broker): Kafka's list of "delete" and "compact", in any order, repeats
// allowed, at least one. Delete: old segments go by retention.ms and
// retention.bytes. Compact: the log cleaner keeps the latest record per key.
// Both: compacted, and old segments still go by retention.
type CleanupPolicy struct {
	Compact, Delete bool
}

// ParseCleanupPolicy parses a cleanup.policy list. An unknown item or an
// empty list is an error (without the key; callers add it).
func ParseCleanupPolicy(v string) (CleanupPolicy, error) {
	var p CleanupPolicy
	for _, item := range strings.Split(v, ",") {
		switch item = strings.TrimSpace(item); item {
		case "delete":
			p.Delete = true
		case "compact":
			p.Compact = true
		case "":
		default:
			return CleanupPolicy{}, fmt.Errorf("%q is not delete or compact", item)
		}
	}
	if !p.Compact && !p.Delete {
		return CleanupPolicy{}, fmt.Errorf("%q: want delete, compact or both", v)
	}
	return p, nil
}

// String is the canonical list: "delete", "compact" or "compact,delete"
// ("" for the zero value, which is not a valid policy).
func (p CleanupPolicy) String() string {
	switch {
	case p.Compact && p.Delete:
		return "compact,delete"
	case p.Compact:
		return "compact"
	case p.Delete:
		return "delete"
	}
	return ""
}
