package broker_test

// A single-node broker on SASL_SSL (SCRAM-SHA-512 and PLAIN) and SSL with
// client certificates, with ACLs on, driven by franz-go clients: the
// certificates are made by the test (package auth/certs).

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/testpki"
)

func TestSecureListenersAndACLs(t *testing.T) {
	pki := testpki.New(t, "carol")
	srvPaths, carolPaths, tcfg := pki.Broker, pki.Clients["carol"], pki.TLS
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.Listeners = []string{"SASL_SSL://127.0.0.1:0", "SSL://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0", "PLAINTEXT://127.0.0.1:0"}
		c.SASLEnabledMechanisms = []string{"SCRAM-SHA-512", "PLAIN"}
		c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
		c.SuperUsers = []string{"User:admin"}
		c.SecurityProperties = map[string]string{
			"ssl.keystore.type":                 "PEM",
			"ssl.keystore.location":             srvPaths.Keystore,
			"ssl.truststore.type":               "PEM",
			"ssl.truststore.location":           srvPaths.CA,
			"listener.name.ssl.ssl.client.auth": "required",
			"listener.name.sasl_ssl.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="admin" password="admin-secret" user_admin="admin-secret";`,
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`user_admin="admin-secret";`,
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := kgo.DialTLSConfig(tcfg)
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), dial}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	// The super user (PLAIN) creates a topic and a SCRAM user.
	adminCl := newClient(kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	admin := kadm.NewClient(adminCl)
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatalf("create topic as admin: %v", err)
	}
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "secret"); err != nil {
		t.Fatal(err)
	}
	up, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}})
	if err != nil || up.Error() != nil {
		t.Fatalf("create SCRAM user: %v %v", err, up.Error())
	}
	desc, err := admin.DescribeUserSCRAMs(ctx, "alice")
	if err != nil || len(desc["alice"].CredInfos) != 1 || desc["alice"].CredInfos[0].Iterations != 4096 {
		t.Fatalf("describe SCRAM user: %+v %v", desc, err)
	}

	alice := newClient(kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(2), kgo.UnknownTopicRetries(1))
	produce := func() error {
		return alice.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	}
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// A PREFIXED Allow lets alice write; a literal Deny wins over it.
	allow := kadm.NewACLs().Allow("User:alice").Topics("ord").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite)
	if res, err := admin.CreateACLs(ctx, allow); err != nil || res[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
	if err := produce(); err != nil {
		t.Fatalf("produce with a prefixed Allow: %v", err)
	}
	deny := kadm.NewACLs().Deny("User:alice").Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite)
	if res, err := admin.CreateACLs(ctx, deny); err != nil || res[0].Err != nil {
		t.Fatalf("create deny ACL: %v %+v", err, res)
	}
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce with a Deny: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Metadata hides what alice may not Describe (Write implies Describe).
	aliceAdm := kadm.NewClient(alice)
	topics, err := aliceAdm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("secret") || !topics.Has("orders") {
		t.Fatalf("alice sees %v", topics.Names())
	}
	// DescribeAcls shows what was created.
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	dreq.Operation, dreq.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dresp, err := dreq.RequestWith(ctx, adminCl)
	if err != nil || dresp.ErrorCode != 0 || len(dresp.Resources) != 2 {
		t.Fatalf("describe ACLs: %v %+v", err, dresp)
	}
	// alice may not manage ACLs.
	if res, err := aliceAdm.CreateACLs(ctx, allow); err == nil && (len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed)) {
		t.Fatalf("alice creating an ACL: %+v", res)
	} else if err != nil && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice creating an ACL: %v", err)
	}

	// Group offsets need Read on the group and on the topic.
	commit := func() error {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1})
		res, err := aliceAdm.CommitOffsets(ctx, "g1", os)
		if err != nil {
			return err
		}
		return res.Error()
	}
	if err := commit(); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("commit without a group ACL: %v", err)
	}
	if res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Groups("g1").Operations(kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("group ACL: %v %+v", err, res)
	}
	if err := commit(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("commit without Read on the topic: %v", err)
	}
	if res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("topic read ACL: %v %+v", err, res)
	}
	if err := commit(); err != nil {
		t.Fatalf("commit with Read on group and topic: %v", err)
	}

	// A wrong password fails authentication.
	wrong := newClient(kgo.SASL(scram.Auth{User: "alice", Pass: "guess"}.AsSha512Mechanism()))
	if _, err := kadm.NewClient(wrong).ListTopics(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v", err)
	}
	// An unknown user fails the same way.
	ghost := newClient(kgo.SASL(scram.Auth{User: "ghost", Pass: "x"}.AsSha512Mechanism()))
	if _, err := kadm.NewClient(ghost).ListTopics(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("unknown user: %v", err)
	}
	// A PLAINTEXT client on the TLS port gets nothing served.
	plainCl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer plainCl.Close()
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	if _, err := kadm.NewClient(plainCl).ListTopics(sctx); err == nil {
		t.Fatal("a PLAINTEXT client was served on the SASL_SSL port")
	}
	scancel()

	// SASL_PLAINTEXT with SCRAM and PLAIN, and PLAINTEXT (User:ANONYMOUS,
	// which has no ACL), on their own listeners.
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "ordinal"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
		want error
	}{
		{"SASL_PLAINTEXT", []kgo.Opt{kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())}, nil},
		{"SASL_PLAINTEXT", []kgo.Opt{kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())}, nil},
		{"PLAINTEXT", nil, kerr.TopicAuthorizationFailed},
	} {
		cl, err := kgo.NewClient(append(tc.opts, kgo.SeedBrokers(listenerAddr(t, b, tc.name)), kgo.DefaultProduceTopic("ordinal"),
			kgo.AllowAutoTopicCreation(), kgo.RecordRetries(3))...)
		if err != nil {
			t.Fatal(err)
		}
		err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
		cl.Close()
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Fatalf("produce on %s: %v, want %v", tc.name, err, tc.want)
		}
	}

	// mTLS on the SSL listener: carol's principal is User:CN=carol.
	sslAddr := listenerAddr(t, b, "SSL")
	cert, err := tls.LoadX509KeyPair(carolPaths.Cert, carolPaths.Key)
	if err != nil {
		t.Fatal(err)
	}
	ctcfg := tcfg.Clone()
	ctcfg.Certificates = []tls.Certificate{cert}
	carol, err := kgo.NewClient(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(ctcfg), kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	defer carol.Close()
	if err := carol.ProduceSync(ctx, &kgo.Record{Value: []byte("c")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("carol without an ACL: %v", err)
	}
	if res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:CN=carol").Topics("orders").Operations(kadm.OpWrite)); err != nil || res[0].Err != nil {
		t.Fatalf("ACL for carol: %v %+v", err, res)
	}
	if err := carol.ProduceSync(ctx, &kgo.Record{Value: []byte("c")}).FirstErr(); err != nil {
		t.Fatalf("carol with an ACL on User:CN=carol: %v", err)
	}
}

// listenerAddr returns the address of the broker's listener name.
func listenerAddr(t *testing.T, b *broker.Broker, name string) string {
	t.Helper()
	addrs := b.ListenerAddrs()
	for n, a := range addrs {
		if strings.EqualFold(n, name) {
			return a
		}
	}
	t.Fatalf("no %s listener in %v", name, addrs)
	return ""
}
