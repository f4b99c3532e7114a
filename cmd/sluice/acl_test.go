package main

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestACLUsage checks the command lines refused before any broker is
// contacted (nothing listens at the bootstrap address given).
func TestACLUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"add without principal", []string{"add", "--topic", "t", "--operation", "Write"}},
		{"add without resource", []string{"add", "--allow-principal", "User:a"}},
		{"add bad principal", []string{"add", "--allow-principal", "alice", "--topic", "t"}},
		{"add bad operation", []string{"add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"}},
		{"add op not for group", []string{"add", "--allow-principal", "User:a", "--group", "g", "--operation", "Write"}},
		{"add pattern ANY", []string{"add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "ANY"}},
		{"add host without principal", []string{"add", "--deny-host", "1.2.3.4", "--allow-principal", "User:a", "--topic", "t"}},
		{"remove without resource", []string{"remove", "--allow-principal", "User:a"}},
		{"list bad principal", []string{"list", "--principal", "alice"}},
		{"list bad pattern", []string{"list", "--resource-pattern-type", "EXACT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append(tc.args, "--bootstrap-server", "127.0.0.1:1", "--timeout", "1s")
			if code := aclCmd(args, io.Discard, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
		})
	}
}

func TestACLFlagsEntries(t *testing.T) {
	f := aclFlags{
		allowPrincipals: stringList{"User:a", "User:b"},
		denyPrincipals:  stringList{"User:c"},
		denyHosts:       stringList{"10.0.0.1"},
		operations:      stringList{"read", "IdempotentWrite", "READ"},
	}
	ops, err := f.ops(kmsg.ACLOperationAll)
	if err != nil {
		t.Fatal(err)
	}
	es, err := f.entries(ops, "*")
	if err != nil {
		t.Fatal(err)
	}
	want := []aclEntry{
		{"User:a", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow},
		{"User:a", "*", kmsg.ACLOperationIdempotentWrite, kmsg.ACLPermissionTypeAllow},
		{"User:b", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow},
		{"User:b", "*", kmsg.ACLOperationIdempotentWrite, kmsg.ACLPermissionTypeAllow},
		{"User:c", "10.0.0.1", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeDeny},
		{"User:c", "10.0.0.1", kmsg.ACLOperationIdempotentWrite, kmsg.ACLPermissionTypeDeny},
	}
	if len(es) != len(want) {
		t.Fatalf("entries %v, want %v", es, want)
	}
	for i := range want {
		if es[i] != want[i] {
			t.Errorf("entry %d: %v, want %v", i, es[i], want[i])
		}
	}
	if _, err := (&aclFlags{operations: stringList{"any"}}).ops(kmsg.ACLOperationAll); !errors.Is(err, errUsage) {
		t.Errorf("--operation any: err %v, want a usage error", err)
	}
}

// TestACLRemoveEntries: acl remove filters on the operations given, with
// or without a principal.
func TestACLRemoveEntries(t *testing.T) {
	anyOp := []kmsg.ACLOperation{kmsg.ACLOperationAny}
	readWrite := []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite}
	for _, tc := range []struct {
		name string
		f    aclFlags
		ops  []kmsg.ACLOperation
		want []aclEntry
	}{
		{"nothing: every entry", aclFlags{}, anyOp, []aclEntry{
			{"", "", kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}}},
		{"operations only", aclFlags{}, readWrite, []aclEntry{
			{"", "", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAny},
			{"", "", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAny}}},
		{"principal, any operation", aclFlags{allowPrincipals: stringList{"User:a"}}, anyOp, []aclEntry{
			{"User:a", "", kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAllow}}},
		{"principal and operations", aclFlags{denyPrincipals: stringList{"User:a"}}, readWrite, []aclEntry{
			{"User:a", "", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeDeny},
			{"User:a", "", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeDeny}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.removeEntries(tc.ops)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("entries %v, want %v", got, tc.want)
			}
		})
	}
}

// TestACLRemoveOperation: `acl remove --operation Read` without a
// principal removes the Read entries of the resource and keeps the others.
func TestACLRemoveOperation(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
		c.SuperUsers = []string{"User:ANONYMOUS"} // the CLI, on PLAINTEXT
	})
	sl := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", b.Addr()), &stdout, &stderr); code != 0 {
			t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	sl("acl", "add", "--allow-principal", "User:alice", "--topic", "orders", "--operation", "Read", "--operation", "Write")
	sl("acl", "add", "--deny-principal", "User:bob", "--topic", "orders", "--operation", "Read")
	sl("acl", "add", "--allow-principal", "User:bob", "--topic", "orders", "--operation", "Describe")

	out := sl("acl", "remove", "--topic", "orders", "--operation", "Read")
	for _, want := range []string{"principal=User:alice, host=*, operation=READ, permissionType=ALLOW", "principal=User:bob, host=*, operation=READ, permissionType=DENY"} {
		if !strings.Contains(out, want) {
			t.Errorf("remove output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "WRITE") || strings.Contains(out, "DESCRIBE") {
		t.Errorf("remove --operation Read removed other operations:\n%s", out)
	}
	left := sl("acl", "list", "--topic", "orders")
	for _, want := range []string{"operation=WRITE", "operation=DESCRIBE"} {
		if !strings.Contains(left, want) {
			t.Errorf("after remove, list lacks %q:\n%s", want, left)
		}
	}
	if strings.Contains(left, "operation=READ") {
		t.Errorf("after remove, a READ entry is left:\n%s", left)
	}
}

// TestACLPrintBindings pins kafka-acls.sh's output format.
func TestACLPrintBindings(t *testing.T) {
	bs := []aclBinding{
		{kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypePrefixed,
			aclEntry{"User:a", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow}},
		{kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral,
			aclEntry{"User:b", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeDeny}},
		{kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral,
			aclEntry{"User:a", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow}},
	}
	var out bytes.Buffer
	printBindings(&out, "Current ACLs", bs)
	const want = "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:\n" +
		"\t(principal=User:a, host=*, operation=WRITE, permissionType=ALLOW)\n" +
		"\t(principal=User:b, host=*, operation=WRITE, permissionType=DENY)\n" +
		"\n" +
		"Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=g, patternType=PREFIXED)`:\n" +
		"\t(principal=User:a, host=*, operation=READ, permissionType=ALLOW)\n" +
		"\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
