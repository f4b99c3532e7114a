package main

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
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
