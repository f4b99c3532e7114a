package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluice/sluice/broker/brokertest"
)

// TestQuotaCommand: set, describe and remove quotas of users, client ids,
// pairs and defaults against a broker, kafka-configs.sh's flags included;
// usage mistakes exit 2 before any broker is contacted, and the broker's
// refusals (an unknown key) exit 1 with its message.
func TestQuotaCommand(t *testing.T) {
	b := brokertest.Start(t, "memory")
	sluice := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append(args, "--bootstrap-server", b.Addr()), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	for _, args := range [][]string{
		{"quota", "set", "--user", "alice", "--add-config", "producer_byte_rate=1048576,request_percentage=50"},
		{"quota", "set", "--user-default", "--client-id", "etl", "--add-config", "controller_mutation_rate=2.5"},
		{"quota", "set", "--entity-type", "clients", "--entity-default", "--add-config", "consumer_byte_rate=2048"},
	} {
		if code, out, errOut := sluice(args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	code, out, errOut := sluice("quota", "describe")
	if code != 0 {
		t.Fatalf("describe: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"user=alice", "producer_byte_rate=1048576,request_percentage=50",
		"user=<default>,client-id=etl", "controller_mutation_rate=2.5",
		"client-id=<default>", "consumer_byte_rate=2048",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ := sluice("quota", "describe", "--user", "alice"); strings.Contains(out, "etl") || !strings.Contains(out, "user=alice") {
		t.Errorf("describe --user alice:\n%s", out)
	}
	if code, _, _ := sluice("quota", "remove", "--user", "alice", "--delete-config", "request_percentage"); code != 0 {
		t.Fatal("remove one key failed")
	}
	if _, out, _ := sluice("quota", "describe", "--user", "alice"); strings.Contains(out, "request_percentage") || !strings.Contains(out, "producer_byte_rate") {
		t.Errorf("after removing request_percentage:\n%s", out)
	}
	if code, _, _ := sluice("quota", "remove", "--user", "alice"); code != 0 {
		t.Fatal("remove all failed")
	}
	if _, out, _ := sluice("quota", "describe", "--user", "alice"); strings.Contains(out, "alice") {
		t.Errorf("after removing alice's quotas:\n%s", out)
	}
	// ip entities, as kafka-configs.sh --entity-type ips.
	for _, args := range [][]string{
		{"quota", "set", "--entity-type", "ips", "--entity-name", "10.0.0.1", "--add-config", "connection_creation_rate=5"},
		{"quota", "set", "--entity-type", "ips", "--entity-default", "--add-config", "connection_creation_rate=100"},
		{"quota", "set", "--ip", "2001:db8::1", "--add-config", "connection_creation_rate=7"},
	} {
		if code, out, errOut := sluice(args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if _, out, _ := sluice("quota", "describe"); !strings.Contains(out, "ip=10.0.0.1") || !strings.Contains(out, "connection_creation_rate=5") ||
		!strings.Contains(out, "ip=<default>") || !strings.Contains(out, "ip=2001:db8::1") {
		t.Errorf("describe lacks the ip entities:\n%s", out)
	}
	if _, out, _ := sluice("quota", "describe", "--ip-default"); !strings.Contains(out, "connection_creation_rate=100") || strings.Contains(out, "10.0.0.1") {
		t.Errorf("describe --ip-default:\n%s", out)
	}
	if code, _, errOut := sluice("quota", "remove", "--entity-type", "ips", "--entity-name", "10.0.0.1"); code != 0 {
		t.Fatalf("remove ip: %s", errOut)
	}
	if _, out, _ := sluice("quota", "describe", "--ip", "10.0.0.1"); strings.Contains(out, "10.0.0.1") {
		t.Errorf("after removing 10.0.0.1:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"quota", "set", "--add-config", "producer_byte_rate=1"}, 2, "name an entity"},
		{[]string{"quota", "set", "--user", "a"}, 2, "--add-config is required"},
		{[]string{"quota", "set", "--user", "a", "--user-default", "--add-config", "producer_byte_rate=1"}, 2, "not both"},
		{[]string{"quota", "set", "--user", "a", "--add-config", "producer_byte_rate"}, 2, "key=value"},
		{[]string{"quota", "set", "--user", "a", "--add-config", "producer_byte_rate=fast"}, 2, "not a number"},
		{[]string{"quota", "set", "--entity-type", "topics", "--entity-name", "t", "--add-config", "producer_byte_rate=1"}, 2, "users, clients or ips"},
		{[]string{"quota", "set", "--ip", "10.0.0.1", "--user", "u", "--add-config", "connection_creation_rate=1"}, 2, "does not combine"},
		{[]string{"quota", "set", "--ip", "not-an-ip", "--add-config", "connection_creation_rate=1"}, 1, "not-an-ip is not a valid IP or resolvable host."},
		{[]string{"quota", "set", "--ip", "10.0.0.1", "--add-config", "producer_byte_rate=1"}, 1, "Invalid configuration key producer_byte_rate"},
		{[]string{"quota", "set", "--user", "a", "--add-config", "producer_byte_rat=1"}, 1, "Invalid configuration key"},
		{[]string{"quota", "set", "--user", "a", "--add-config", "producer_byte_rate=-1"}, 1, "must be greater than 0"},
	} {
		code, _, errOut := sluice(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}
