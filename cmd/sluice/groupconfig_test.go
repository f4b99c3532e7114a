package main

import (
	"strings"
	"testing"

	"github.com/sluice/sluice/broker/brokertest"
)

// TestGroupConfig: `sluice group config set|describe|delete --group G`
// changes a consumer group's configs and shows them as kafka-configs.sh
// --describe does; a value outside the broker's bounds is refused with
// the broker's message.
func TestGroupConfig(t *testing.T) {
	b := brokertest.Start(t, "memory")
	sl := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", b.Addr()), &stdout, &stderr); code != wantCode {
			t.Fatalf("sluice %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	if out, _ := sl(0, "group", "config", "set", "--group", "g1", "consumer.heartbeat.interval.ms=6000"); !strings.Contains(out, "Completed updating config for group g1.") {
		t.Fatalf("set: %s", out)
	}
	out, _ := sl(0, "group", "config", "describe", "--group", "g1")
	want := "Dynamic configs for group g1 are:\n  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={GROUP_CONFIG:consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}\n"
	if out != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", out, want)
	}
	if out, _ := sl(0, "group", "config", "describe", "--group", "g1", "--all"); !strings.Contains(out, "  consumer.session.timeout.ms=45000 sensitive=false synonyms={DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}\n") {
		t.Fatalf("describe --all: %s", out)
	}
	if _, errOut := sl(1, "group", "config", "set", "--group", "g1", "consumer.session.timeout.ms=1000"); !strings.Contains(errOut, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms") {
		t.Fatalf("out of bounds: %s", errOut)
	}
	sl(0, "group", "config", "delete", "--group", "g1", "consumer.heartbeat.interval.ms")
	if out, _ := sl(0, "group", "config", "describe", "--group", "g1"); out != "Dynamic configs for group g1 are:\n" {
		t.Fatalf("describe after delete: %q", out)
	}
	sl(2, "group", "config", "set", "consumer.heartbeat.interval.ms=6000")
}
