package broker_test

// ZooKeeper security (zookeeper.set.acl, zookeeper.auth.digest,
// zookeeper.ssl.*) against Debian's ZooKeeper: what an unauthenticated
// ZooKeeper client may still do to a secured cluster, and brokers that
// reach ZooKeeper over TLS.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/testpki"
	"github.com/sluice/sluice/internal/zktest"
)

// zkSession opens a plain ZooKeeper session on addr, authenticated with
// digest ("user:password") unless it is "", and closes it at Cleanup.
func zkSession(t *testing.T, addr, digest string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(30 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatal("no ZooKeeper session within 30s")
		}
	}
	if digest != "" {
		if err := c.AddAuth("digest", []byte(digest)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// roundTrip creates topic (one partition on every broker of bs), produces
// n records with acks=all and consumes them back, through franz-go.
func roundTrip(t *testing.T, bs []*broker.Broker, topic string, n int) {
	t.Helper()
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, int16(len(bs)), nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d to %s: %v", i, topic, err)
		}
	}
	var got []string
	for len(got) < n && ctx.Err() == nil {
		f := cl.PollFetches(ctx)
		f.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i := range n {
		if i >= len(got) || got[i] != fmt.Sprint(i) {
			t.Fatalf("consumed %q from %s, want 0..%d in order", got, topic, n-1)
		}
	}
}

// secureCluster is what a secured broker cluster needs: set.acl, the
// brokers' digest identity, and SCRAM plus the ACL authorizer so that
// /config/users and /kafka-acl get written (the PLAINTEXT client is the
// super user ANONYMOUS).
func secureCluster(digest string) func(*config.Config) {
	return func(c *config.Config) {
		c.ZooKeeperSetACL = true
		c.ZooKeeperAuthDigest = digest
		c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"}
		c.SASLEnabledMechanisms = []string{"SCRAM-SHA-512"}
		c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
		c.SuperUsers = []string{"User:ANONYMOUS"}
		c.ReplicaLagTimeMax = 5 * time.Second
	}
}

// writeSecurityState creates a SCRAM user (/config/users/alice) and an ACL
// (/kafka-acl/Topic/secret) through the brokers.
func writeSecurityState(t *testing.T, b *broker.Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	up, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}})
	if err != nil || up.Error() != nil {
		t.Fatalf("create SCRAM user: %v %v", err, up.Error())
	}
	allow := kadm.NewACLs().Allow("User:alice").Topics("secret").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead)
	if res, err := adm.CreateACLs(ctx, allow); err != nil || res[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
}

// checkLockedOut asserts what an unauthenticated ZooKeeper client can no
// longer do to the cluster under /sluice: rewrite ACLs, credentials,
// broker registrations or the controller, or read credentials; it may
// still read what Kafka lets everyone read.
func checkLockedOut(t *testing.T, anon *zk.Conn, topic string) {
	t.Helper()
	noAuth := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated %s: %v, want ErrNoAuth", what, err)
		}
	}
	_, err := anon.Set("/sluice/kafka-acl/Topic/secret", []byte(`{"version":1,"acls":[]}`), -1)
	noAuth("set /kafka-acl/Topic/secret", err)
	_, err = anon.Create("/sluice/kafka-acl/Topic/evil", []byte(`{"version":1,"acls":[]}`), 0, zk.WorldACL(zk.PermAll))
	noAuth("create under /kafka-acl/Topic", err)
	_, err = anon.Create("/sluice/kafka-acl-changes/acl_changes_", []byte("Topic:secret"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	noAuth("create under /kafka-acl-changes", err)
	_, _, err = anon.Get("/sluice/config/users/alice")
	noAuth("read /config/users/alice", err)
	_, err = anon.Set("/sluice/config/users/alice", []byte(`{"version":1,"config":{}}`), -1)
	noAuth("set /config/users/alice", err)
	_, err = anon.Create("/sluice/config/users/mallory", []byte(`{"version":1,"config":{}}`), 0, zk.WorldACL(zk.PermAll))
	noAuth("create under /config/users", err)
	_, err = anon.Create("/sluice/brokers/ids/99", []byte(`{}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	noAuth("create /brokers/ids/99", err)
	_, err = anon.Set("/sluice/brokers/topics/"+topic, []byte(`{}`), -1)
	noAuth("set /brokers/topics/"+topic, err)
	_, err = anon.Set("/sluice/controller", []byte(`{"version":1,"brokerid":99,"timestamp":"0"}`), -1)
	noAuth("set /controller", err)
	noAuth("delete /controller", anon.Delete("/sluice/controller", -1))
	_, err = anon.Set("/sluice/controller_epoch", []byte("999"), -1)
	noAuth("set /controller_epoch", err)
	// Everyone may still read what Kafka leaves readable.
	for _, p := range []string{"/sluice/brokers/topics/" + topic, "/sluice/controller", "/sluice/kafka-acl/Topic/secret"} {
		if _, _, err := anon.Get(p); err != nil {
			t.Errorf("unauthenticated read of %s: %v, want allowed", p, err)
		}
	}
}

// TestZooKeeperSetACL: brokers with zookeeper.set.acl=true and a digest
// identity work end to end, and an unauthenticated ZooKeeper client can no
// longer change /kafka-acl, /config/users, /brokers or /controller, nor
// read /config/users, while the brokers' identity can.
func TestZooKeeperSetACL(t *testing.T) {
	zks := zktest.Start(t)
	const digest = "sluice:broker-secret"
	bs := brokertest.StartCluster(t, 2, "memory", zks.Addr(), secureCluster(digest))
	roundTrip(t, bs, "acl-on", 20)
	writeSecurityState(t, bs[0])

	checkLockedOut(t, zkSession(t, zks.Addr(), ""), "acl-on")

	// Another identity is locked out just the same.
	other := zkSession(t, zks.Addr(), "mallory:guess")
	if _, _, err := other.Get("/sluice/config/users/alice"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("read /config/users/alice as another digest user: %v, want ErrNoAuth", err)
	}
	// The brokers' identity reads the credentials.
	own := zkSession(t, zks.Addr(), digest)
	if b, _, err := own.Get("/sluice/config/users/alice"); err != nil || !strings.Contains(string(b), "SCRAM-SHA-512") {
		t.Errorf("read /config/users/alice as the brokers: %q %v", b, err)
	}
	acls, _, err := own.GetACL("/sluice/config/users/alice")
	if err != nil || len(acls) != 1 || acls[0].Scheme != "digest" || !strings.HasPrefix(acls[0].ID, "sluice:") || acls[0].Perms != zk.PermAll {
		t.Errorf("ACL of /config/users/alice: %+v %v, want only digest:sluice:... with all rights", acls, err)
	}
}

// TestZooKeeperTLS: brokers reach ZooKeeper only through its TLS
// secureClientPort (with a client certificate, ssl.clientAuth=need, and
// the host name verified) and the cluster works, with zookeeper.set.acl
// owning the znodes by the certificate's identity; a broker that does not
// trust ZooKeeper's CA fails to start, saying why.
func TestZooKeeperTLS(t *testing.T) {
	pki := testpki.New(t, "broker-zk")
	zks := zktest.StartWith(t, zktest.Options{TLS: &zktest.TLSOptions{Keystore: pki.Broker.Keystore, Truststore: pki.Broker.CA}})
	overTLS := func(ca string) func(*config.Config) {
		return func(c *config.Config) {
			c.ZooKeeperConnect = zks.SecureAddr() + "/sluice"
			c.ZooKeeperSSLClientEnable = true
			c.ZooKeeperSSLKeystoreLocation = pki.Clients["broker-zk"].Keystore
			c.ZooKeeperSSLKeystoreType = "PEM"
			c.ZooKeeperSSLTruststoreLocation = ca
			c.ZooKeeperSSLTruststoreType = "PEM"
			c.ZooKeeperSSLEndpointIdentification = "HTTPS"
			// The certificate is the brokers' identity
			// (x509:CN=broker-zk): no digest.
			c.ZooKeeperSetACL = true
			c.ReplicaLagTimeMax = 5 * time.Second
		}
	}
	var bs []*broker.Broker
	for id := int32(1); id <= 2; id++ {
		bs = append(bs, brokertest.Start(t, "memory", func(c *config.Config) {
			c.BrokerID = id
			c.ControlledShutdownEnable = false
			c.OffsetsTopicReplication = 1
		}, overTLS(pki.Broker.CA)))
	}
	brokertest.WaitForBrokers(t, 2, nil, bs...)
	roundTrip(t, bs, "over-tls", 20)

	// The brokers' znodes are there, seen through the plain port.
	plain := zkSession(t, zks.Addr(), "")
	if ids, _, err := plain.Children("/sluice/brokers/ids"); err != nil || len(ids) != 2 {
		t.Fatalf("/sluice/brokers/ids: %v %v, want both brokers", ids, err)
	}
	// ... and owned by the certificate's identity.
	if _, err := plain.Set("/sluice/controller", []byte(`{}`), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated set /controller: %v, want ErrNoAuth", err)
	}
	if acls, _, err := plain.GetACL("/sluice/brokers/topics/over-tls"); err != nil || len(acls) != 2 || acls[0].Scheme != "x509" || !strings.Contains(acls[0].ID, "CN=broker-zk") {
		t.Errorf("ACL of /brokers/topics/over-tls: %+v %v, want x509:CN=broker-zk with all rights and world read", acls, err)
	}

	// A truststore with another CA: the broker refuses ZooKeeper's
	// certificate and says so.
	wrong := testpki.New(t)
	cfg := brokertest.Config(t.TempDir(), "memory", func(c *config.Config) {
		c.BrokerID = 3
		c.ZooKeeperSessionTimeout = 3 * time.Second
	}, overTLS(wrong.Broker.CA))
	b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t)})
	if err == nil {
		b.Close()
		t.Fatal("a broker that does not trust ZooKeeper's CA started")
	}
	if !strings.Contains(err.Error(), "certificate signed by unknown authority") || !strings.Contains(err.Error(), zks.SecureAddr()) {
		t.Fatalf("err %v, want one naming the untrusted certificate and the server", err)
	}
	t.Logf("refused as it should be: %v", err)
}
