package e2e

// kafka-python and kafkajs over SASL_SSL with SCRAM-SHA-512 against the
// real binary (certificates made by the test; the SCRAM user created
// through the broker with franz-go's admin client).

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testpki"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// startSecureBroker starts a broker whose listeners (the first one
// SASL_SSL on {port}) use pki's certificates, SCRAM-SHA-512 and PLAIN with
// the admin user and the PLAIN users given as JAAS options
// (user_bob="bob-secret"), plus sets; it returns the broker and an admin
// client (PLAIN, over TLS), closed at cleanup.
func startSecureBroker(t *testing.T, pki testpki.PKI, listeners, plainUsers string, sets ...string) (*brokerProc, *kadm.Client) {
	t.Helper()
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" ` + plainUsers + `;`
	all := append([]string{"listeners=" + listeners,
		"sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config=" + jaas,
	}, pki.BrokerSets()...)
	b := startBroker(t, filepath.Join(t.TempDir(), "data"), append(all, sets...)...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DialTLSConfig(pki.TLS),
		kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return b, kadm.NewClient(cl)
}

// createSCRAMUser creates a SCRAM-SHA-512 user through the broker.
func createSCRAMUser(t *testing.T, adm *kadm.Client, user, pass string, iterations int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: iterations, Password: pass}})
	if err != nil || res.Error() != nil {
		t.Fatalf("create SCRAM user %s: %v %v", user, err, res.Error())
	}
}

// startSASLSSLBroker starts a SASL_SSL broker with the SCRAM user erin and
// returns it and the CA file clients trust.
func startSASLSSLBroker(t *testing.T) (*brokerProc, string) {
	t.Helper()
	pki := testpki.New(t)
	b, adm := startSecureBroker(t, pki, "SASL_SSL://127.0.0.1:{port}", "", "num.partitions=1", "group.initial.rebalance.delay.ms=0")
	createSCRAMUser(t, adm, "erin", "erin-secret", 4096)
	return b, pki.Broker.CA
}

const kafkaPythonSecure = `
import logging, sys
from kafka import KafkaProducer, KafkaConsumer
logging.basicConfig(level=logging.ERROR)  # kafka-python's errors to stderr
addr, cafile, api, topic = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
kw = dict(bootstrap_servers=addr, security_protocol="SASL_SSL", ssl_cafile=cafile, ssl_check_hostname=False,
          sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="erin", sasl_plain_password=sys.argv[5])
if api != "auto":
    kw["api_version"] = tuple(int(x) for x in api.split("."))
p = KafkaProducer(acks="all", **kw)
for i in range(50):
    p.send(topic, value=b"v%d" % i)
p.flush()
p.close()
c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000, **kw)
got = []
for m in c:
    got.append(m.value)
    if len(got) == 50:
        break
c.close()
assert len(got) == 50, "consumed %d" % len(got)
print("ok", len(got))
`

func TestKafkaPythonSASLSSL(t *testing.T) {
	t.Parallel()
	py := needKafkaPython(t)
	b, caFile := startSASLSSLBroker(t)
	script := filepath.Join(t.TempDir(), "secure.py")
	if err := os.WriteFile(script, []byte(kafkaPythonSecure), 0o644); err != nil {
		t.Fatal(err)
	}
	// "0.11.0" authenticates with SaslHandshake v0 and raw tokens; "auto"
	// probes and uses SaslAuthenticate.
	for _, api := range []string{"0.11.0", "auto"} {
		start := time.Now()
		topic := "py-sec-" + strings.ReplaceAll(api, ".", "")
		out, stderr, err := run(t, 90*time.Second, "", py, script, b.addr, caFile, api, topic, "erin-secret")
		if err != nil || !strings.Contains(out, "ok 50") {
			t.Fatalf("kafka-python %s over SASL_SSL/SCRAM: %v\n%s\n%s", api, err, out, stderr)
		}
		t.Logf("kafka-python %s: %v", api, time.Since(start))
	}
	// A wrong password fails authentication (kafka-python retries until it
	// gives up or the run's bound kills it; either way nothing is
	// produced). kafka-python 2.0.2 sends raw SASL tokens (SaslHandshake
	// v0), so the broker refuses by closing the connection and the client
	// sees only that, in its SASL exchange; the broker's log says why.
	refusals := func() (n int) {
		for _, l := range lines(b.logText()) {
			if strings.Contains(l, `msg="server: SASL authentication failed"`) && strings.Contains(l, "mechanism=SCRAM-SHA-512") &&
				strings.Contains(l, "invalid credentials") {
				n++
			}
		}
		return n
	}
	before := refusals()
	out, stderr, err := run(t, 8*time.Second, "", py, script, b.addr, caFile, "0.11.0", "py-sec-wrong", "wrong")
	if err == nil || strings.Contains(out, "ok") {
		t.Fatalf("kafka-python with a wrong password: %v %s", err, out)
	}
	if !strings.Contains(stderr, "Error receiving reply from server") {
		t.Errorf("kafka-python with a wrong password did not fail in its SASL exchange; stderr:\n%s", stderr)
	}
	if refusals() <= before {
		t.Errorf("kafka-python with a wrong password: the broker logged no SCRAM authentication failure\nstderr:\n%s\nbroker log:\n%s", stderr, b.logText())
	}
}

// TestKafkaJSSASLSSL runs the kafkajs compatibility script (admin,
// idempotent producer, consumer group with resume) over SASL_SSL with
// SCRAM-SHA-512.
func TestKafkaJSSASLSSL(t *testing.T) {
	t.Parallel()
	node, script := needKafkaJS(t)
	b, caFile := startSASLSSLBroker(t)
	stdout, stderr, err := run(t, 120*time.Second, "", node, script,
		"--brokers", b.addr, "--topic", "kafkajs-sec", "--group", "kafkajs-sec-group",
		"--n", "500", "--m", "100", "--timeout", "110",
		"--ca", caFile, "--user", "erin", "--password", "erin-secret")
	if err != nil {
		t.Fatalf("compat.js over SASL_SSL: %v\nstdout:\n%s\nstderr:\n%s\nbroker log:\n%s", err, stdout, stderr, b.logText())
	}
	ls := lines(stdout)
	if len(ls) == 0 || !strings.Contains(ls[len(ls)-1], `"ok":true`) {
		t.Fatalf("compat.js over SASL_SSL: no ok summary\n%s\n%s", stdout, stderr)
	}
	t.Logf("kafkajs over SASL_SSL/SCRAM-SHA-512: %s", ls[len(ls)-1])
}
