package config

import (
	"strings"
	"testing"
)

// TestThrottledReplicas: the topic configs naming throttled replicas are
// checked as Kafka's ThrottledReplicaListValidator, and parsed per broker.
func TestThrottledReplicas(t *testing.T) {
	for _, v := range []string{"", "*", " * ", "0:1", "0:1, 1:2,,2:3", "2147483647:1"} {
		if err := CheckThrottledReplicas(v); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
	for _, v := range []string{"x", "0", "0:", ":1", "-1:2", "0:1:2", "*,0:1", "0:+1", "2147483648:1", "0:1;1:2", "a:b"} {
		if err := CheckThrottledReplicas(v); err == nil {
			t.Errorf("%q accepted", v)
		}
		for _, name := range []string{LeaderThrottledReplicas, FollowerThrottledReplicas} {
			tk, ok := LookupTopic(name)
			if !ok {
				t.Fatalf("no topic key %s", name)
			}
			if tk.Validate(v) == nil {
				t.Errorf("%s accepts %q", name, v)
			}
		}
	}
	parts, all, err := ThrottledPartitions("0:1,1:2,3:1", 1)
	if err != nil || all || len(parts) != 2 || parts[0] != 0 || parts[1] != 3 {
		t.Fatalf("parsed %v %v %v", parts, all, err)
	}
}

// FuzzThrottledReplicas: any value is accepted or refused without a
// panic; an accepted value parses for every broker, "*" only as the
// whole value, and the partitions named for a broker are a subset of
// the pairs in the value.
func FuzzThrottledReplicas(f *testing.F) {
	for _, s := range []string{"", "*", "0:1,1:2", " 3:4 ,,", "x", "0:", "99999999999:1", "*,0:1"} {
		f.Add(s, int32(1))
	}
	f.Fuzz(func(t *testing.T, v string, broker int32) {
		err := CheckThrottledReplicas(v)
		parts, all, perr := ThrottledPartitions(v, broker)
		if (err == nil) != (perr == nil) {
			t.Fatalf("check %v, parse %v", err, perr)
		}
		if err != nil {
			return
		}
		if all != (strings.TrimSpace(v) == "*") {
			t.Fatalf("%q: all=%v", v, all)
		}
		if len(parts) > strings.Count(v, ":") {
			t.Fatalf("%q: %d partitions from %d pairs", v, len(parts), strings.Count(v, ":"))
		}
	})
}
