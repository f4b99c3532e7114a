package e2e

// `sluice user`, `sluice acl`, `sluice topic` and `sluice perf` against a
// SASL_SSL broker with ACLs on, configured with --command-config files in
// librdkafka's names: the super user `admin` over PLAIN, a SCRAM-SHA-512
// user the test creates with the CLI, and a wrong password.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testpki"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func TestCLISecurity(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t)
	sp := pki.Broker
	b, _ := startSecureBroker(t, pki, "SASL_SSL://127.0.0.1:{port}", "", "authorizer.class.name=sluice", "super.users=User:admin")
	props := func(name, mechanism, user, pass string, extra ...string) string {
		lines := append([]string{
			"# as kcat -F reads it",
			"bootstrap.servers=" + b.addr,
			"security.protocol=SASL_SSL",
			"sasl.mechanisms=" + mechanism,
			"sasl.username=" + user,
			"sasl.password=" + pass,
			"ssl.ca.location=" + sp.CA,
		}, extra...)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	admin := props("admin.properties", "PLAIN", "admin", "admin-secret", "acks=all")
	alice := props("alice.properties", "SCRAM-SHA-512", "alice", "alice-secret")
	wrong := props("wrong.properties", "SCRAM-SHA-512", "alice", "not-her-password")

	t.Run("user create and list", func(t *testing.T) {
		r := cliWithOK(t, admin, "user", "create", "alice", "--mechanism", "SCRAM-SHA-512", "--password", "alice-secret", "--iterations", "8192")
		if !strings.Contains(r.stderr, "acks is not a client setting") {
			t.Errorf("no warning about the unknown key acks; stderr:\n%s", r.stderr)
		}
		r = cliWithOK(t, admin, "user", "list")
		rowWhere(t, table(t, r.stdout, "USER", "MECHANISM", "ITERATIONS"), "USER", "alice", "MECHANISM", "SCRAM-SHA-512", "ITERATIONS", "8192")
	})

	t.Run("topic create and list", func(t *testing.T) {
		cliWithOK(t, admin, "topic", "create", "orders", "--partitions", "2")
		r := cliWithOK(t, admin, "topic", "list")
		rowWhere(t, table(t, r.stdout, "TOPIC", "PARTITIONS", "REPLICATION-FACTOR"), "TOPIC", "orders", "PARTITIONS", "2")
	})

	t.Run("acl add and list", func(t *testing.T) {
		r := cliWithOK(t, admin, "acl", "add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders")
		if !strings.Contains(r.stdout, "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)") {
			t.Errorf("acl add printed:\n%s", r.stdout)
		}
		cliWithOK(t, admin, "acl", "add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.1",
			"--operation", "Read", "--operation", "Describe", "--group", "orders-", "--resource-pattern-type", "PREFIXED")
		r = cliWithOK(t, admin, "acl", "list")
		got, want := aclListLines(r.stdout), describeACLLines(t, b.addr, sp.CA)
		if !slices.Equal(got, want) || len(want) != 3 {
			t.Fatalf("sluice acl list:\n%s\nbindings %q\nDescribeAcls says %q", r.stdout, got, want)
		}
		r = cliWithOK(t, admin, "acl", "list", "--principal", "User:alice")
		if got := aclListLines(r.stdout); len(got) != 1 || !strings.Contains(got[0], "User:alice") {
			t.Errorf("acl list --principal User:alice: %q", got)
		}
	})

	t.Run("perf produce as alice", func(t *testing.T) {
		// Write on orders lets alice produce (idempotently: Write implies
		// IdempotentWrite, as in Kafka 2.8+).
		cliWithOK(t, alice, "perf", "produce", "--topic", "orders", "--records", "200", "--record-size", "100", "--quiet")
	})

	t.Run("wrong password", func(t *testing.T) {
		r := cliWith(t, wrong, "topic", "list", "--timeout", "20s")
		if r.code != 1 || !strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
			t.Fatalf("sluice topic list with a wrong password: exit %d\nstderr:\n%s", r.code, r.stderr)
		}
	})

	t.Run("acl remove", func(t *testing.T) {
		r := cliWithOK(t, admin, "acl", "remove", "--allow-principal", "User:alice", "--topic", "orders")
		if want := "Removed ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:\n" +
			"\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("acl remove printed:\n%s\nwant:\n%s", r.stdout, want)
		}
		r = cliWithOK(t, admin, "acl", "list")
		if got := aclListLines(r.stdout); len(got) != 2 || strings.Contains(r.stdout, "User:alice") {
			t.Errorf("after remove, acl list:\n%s", r.stdout)
		}
	})

	t.Run("user delete", func(t *testing.T) {
		cliWithOK(t, admin, "user", "delete", "alice")
		r := cliWithOK(t, admin, "user", "list")
		if strings.Contains(r.stdout, "alice") {
			t.Errorf("alice still listed:\n%s", r.stdout)
		}
	})
}

// aclListLines turns `sluice acl list` output into one "resource entry"
// line per binding, sorted.
func aclListLines(out string) []string {
	var res string
	var got []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "Current ACLs for resource `"):
			res = strings.TrimSuffix(strings.TrimPrefix(l, "Current ACLs for resource `"), "`:")
		case strings.HasPrefix(l, "\t("):
			got = append(got, res+" "+strings.TrimPrefix(l, "\t"))
		}
	}
	slices.Sort(got)
	return got
}

// describeACLLines asks the broker for every ACL with franz-go and formats
// each as aclListLines does, as kafka-acls.sh prints Kafka's
// ResourcePattern and AccessControlEntry.
func describeACLLines(t *testing.T, addr, caFile string) []string {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
		kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeAcls: %v", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("DescribeAcls: %v", err)
	}
	var lines []string
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			lines = append(lines, fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s) (principal=%s, host=%s, operation=%s, permissionType=%s)",
				r.ResourceType, r.ResourceName, r.ResourcePatternType, a.Principal, a.Host, a.Operation, a.PermissionType))
		}
	}
	slices.Sort(lines)
	return lines
}
