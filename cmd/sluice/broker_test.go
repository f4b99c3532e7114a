package main

import (
	"strings"
	"testing"

	"github.com/sluice/sluice/broker/brokertest"
)

// TestBrokerConfig: `sluice broker config set|describe|delete` changes a
// broker's dynamic configs and the cluster-wide default and shows them as
// kafka-configs.sh --describe does; a static key is refused with the
// broker's message.
func TestBrokerConfig(t *testing.T) {
	b := brokertest.Start(t, "memory")
	sl := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", b.Addr()), &stdout, &stderr); code != wantCode {
			t.Fatalf("sluice %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	if out, _ := sl(0, "broker", "config", "set", "--entity-default", "log.retention.ms=3600000", "message.max.bytes=500000"); !strings.Contains(out, "Completed updating default config for brokers in the cluster.") {
		t.Fatalf("set default: %s", out)
	}
	sl(0, "broker", "config", "set", "--broker", "0", "message.max.bytes=400000")
	out, _ := sl(0, "broker", "config", "describe", "--broker", "0")
	for _, want := range []string{
		"Dynamic configs for broker 0 are:\n",
		"  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000, DEFAULT_CONFIG:log.retention.ms=604800000, DEFAULT_CONFIG:log.retention.hours=168}\n",
		"  message.max.bytes=400000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:message.max.bytes=400000, DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=500000, DEFAULT_CONFIG:message.max.bytes=1048588}\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n") != 3 {
		t.Fatalf("describe shows more than the dynamic configs:\n%s", out)
	}
	sl(0, "broker", "config", "delete", "--broker", "0", "message.max.bytes")
	out, _ = sl(0, "broker", "config", "describe", "--entity-default")
	if !strings.HasPrefix(out, "Default configs for brokers in the cluster are:\n") || !strings.Contains(out, "  message.max.bytes=500000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=500000}\n") {
		t.Fatalf("describe default:\n%s", out)
	}
	if out, _ := sl(0, "broker", "config", "describe", "--broker", "0", "--all"); !strings.Contains(out, "  broker.id=0 sensitive=false synonyms={DEFAULT_CONFIG:broker.id=0}\n") {
		t.Fatalf("describe --all:\n%s", out)
	}
	if _, errOut := sl(1, "broker", "config", "set", "--broker", "0", "log.dirs=/tmp"); !strings.Contains(errOut, "Cannot update these configs dynamically: Set(log.dirs)") {
		t.Fatalf("static key: %s", errOut)
	}
	sl(2, "broker", "config", "set", "log.retention.ms=1")
}
