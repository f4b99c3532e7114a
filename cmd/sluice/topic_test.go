package main

import (
	"strings"
	"testing"

	"github.com/sluice/sluice/broker/brokertest"
)

// TestTopicDescribeCleanupPolicy: `sluice topic describe` shows each
// topic's cleanup.policy and where it comes from, and follows a live
// alter-config.
func TestTopicDescribeCleanupPolicy(t *testing.T) {
	b := brokertest.Start(t, "memory")
	sl := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", b.Addr()), &stdout, &stderr); code != 0 {
			t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	sl("topic", "create", "plain")
	sl("topic", "create", "kv", "--config", "cleanup.policy=compact")
	out := sl("topic", "describe", "plain", "kv")
	for _, want := range []string{
		"Configs: \n  CleanupPolicy: delete (default)\n",
		"Configs: cleanup.policy=compact\n  CleanupPolicy: compact (topic)  DirtyRatio: 0.00  LastCleaned: never (since the brokers started)\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe output lacks %q:\n%s", want, out)
		}
	}
	sl("topic", "alter-config", "kv", "--set", "cleanup.policy=compact,delete")
	if out := sl("topic", "describe", "kv"); !strings.Contains(out, "  CleanupPolicy: compact,delete (topic)  DirtyRatio: ") {
		t.Fatalf("describe after alter-config:\n%s", out)
	}
}
