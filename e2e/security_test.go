package e2e

// kcat (librdkafka) against the real binary over SASL_SSL with
// SCRAM-SHA-512 and with PLAIN, and over SSL with a client certificate;
// certificates made by the test. The SCRAM user is created through the
// broker (AlterUserScramCredentials) with franz-go's admin client.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testpki"
	"github.com/twmb/franz-go/pkg/kadm"
)

func TestKcatSecurity(t *testing.T) {
	t.Parallel()
	kcat := need(t, "kcat")
	pki := testpki.New(t, "kcat-client")
	sp, cp := pki.Broker, pki.Clients["kcat-client"]
	sslPort := freePort(t)
	b, adm := startSecureBroker(t, pki, "SASL_SSL://127.0.0.1:{port},SSL://127.0.0.1:"+itoa(int32(sslPort)), `user_bob="bob-secret"`,
		"listener.name.ssl.ssl.client.auth=required",
		"authorizer.class.name=sluice", "super.users=User:admin;User:bob;User:CN=kcat-client")
	createSCRAMUser(t, adm, "carol", "carol-secret", 8192)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "sec"); err != nil {
		t.Fatal(err)
	}
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:carol").Topics("sec").Operations(kadm.OpWrite, kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("ACL: %v %+v", err, res)
	}

	saslArgs := func(mech, user, pass string) []string {
		return []string{"-b", b.addr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + mech,
			"-X", "sasl.username=" + user, "-X", "sasl.password=" + pass, "-X", "ssl.ca.location=" + sp.CA}
	}
	produce := func(args []string, value string) (string, error) {
		_, stderr, err := run(t, 30*time.Second, value+"\n", kcat, append(args, "-P", "-t", "sec", "-X", "acks=all")...)
		return stderr, err
	}
	consume := func(args []string, n int) (string, string, error) {
		return run(t, 30*time.Second, "", kcat, append(args, "-C", "-t", "sec", "-o", "beginning", "-c", itoa(int32(n)), "-e")...)
	}
	if stderr, err := produce(saslArgs("SCRAM-SHA-512", "carol", "carol-secret"), "scram"); err != nil {
		t.Fatalf("kcat SCRAM-SHA-512 produce: %v\n%s\n%s", err, stderr, b.logText())
	}
	if stderr, err := produce(saslArgs("PLAIN", "bob", "bob-secret"), "plain"); err != nil {
		t.Fatalf("kcat PLAIN produce: %v\n%s", err, stderr)
	}
	sslArgs := []string{"-b", "127.0.0.1:" + itoa(int32(sslPort)), "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + cp.CA,
		"-X", "ssl.certificate.location=" + cp.Cert, "-X", "ssl.key.location=" + cp.Key}
	if stderr, err := produce(sslArgs, "mtls"); err != nil {
		t.Fatalf("kcat mTLS produce: %v\n%s", err, stderr)
	}
	out, stderr, err := consume(saslArgs("SCRAM-SHA-512", "carol", "carol-secret"), 3)
	if err != nil || !strings.Contains(out, "scram") || !strings.Contains(out, "plain") || !strings.Contains(out, "mtls") {
		t.Fatalf("kcat SCRAM consume: %q %v\n%s", out, err, stderr)
	}

	// A wrong password fails.
	_, stderr, err = run(t, 30*time.Second, "", kcat, append(saslArgs("SCRAM-SHA-512", "carol", "wrong"), "-L")...)
	if err == nil || !strings.Contains(strings.ToLower(stderr), "authentication") {
		t.Fatalf("kcat with a wrong password: %v\n%s", err, stderr)
	}
}
