package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// anonZK opens an unauthenticated ZooKeeper session, closed at Cleanup.
func anonZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for deadline := time.Now().Add(30 * time.Second); c.State() != zk.StateHasSession; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no ZooKeeper session within 30s")
		}
	}
	return c
}

// TestZkSetACLs: a cluster created without ZooKeeper ACLs, its broker then
// restarted with zookeeper.set.acl=true and a digest identity, still has
// open znodes (an unauthenticated client rewrites a topic's assignment)
// until `sluice zk set-acls --zookeeper.acl=secure` secures them in place;
// the broker keeps working, and --zookeeper.acl=unsecure opens them again.
func TestZkSetACLs(t *testing.T) {
	zks := zktest.Start(t)
	dir := t.TempDir()
	connect := zks.Addr() + "/sluice"
	base := func(c *config.Config) {
		c.ZooKeeperConnect = connect
		c.ControlledShutdownEnable = false
		c.OffsetsTopicReplication = 1
		c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"}
		c.SASLEnabledMechanisms = []string{"SCRAM-SHA-512"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := func(b *broker.Broker) (*kadm.Client, *kgo.Client) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("before"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl), cl
	}

	// An open cluster: a topic and a SCRAM user.
	b := brokertest.StartIn(t, dir, "segment", base)
	adm, _ := admin(b)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "before"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	if up, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}}); err != nil || up.Error() != nil {
		t.Fatalf("create SCRAM user: %v %v", err, up.Error())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// Restarted with an identity and set.acl: what it creates now is
	// secure, what was there stays open.
	const digest = "sluice:broker-secret"
	b = brokertest.StartIn(t, dir, "segment", base, func(c *config.Config) {
		c.ZooKeeperSetACL = true
		c.ZooKeeperAuthDigest = digest
	})
	anon := anonZK(t, zks.Addr())
	// (It writes the same bytes back: it could have written anything.)
	data, stat, err := anon.Get("/sluice/brokers/topics/before")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Set("/sluice/brokers/topics/before", data, stat.Version); err != nil {
		t.Fatalf("an open znode before set-acls: %v", err)
	}

	digestFile := filepath.Join(t.TempDir(), "zk-digest")
	if err := os.WriteFile(digestFile, []byte(digest+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"zk", "set-acls", "--zookeeper.acl=secure", "--zookeeper.connect", connect,
		"--set", "zookeeper.auth.digest.file=" + digestFile}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("sluice zk set-acls: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	t.Logf("set-acls: %s%s", stdout.String(), stderr.String())

	noAuth := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated %s after set-acls: %v, want ErrNoAuth", what, err)
		}
	}
	_, err = anon.Set("/sluice/brokers/topics/before", []byte(`{}`), -1)
	noAuth("set /brokers/topics/before", err)
	_, _, err = anon.Get("/sluice/config/users/alice")
	noAuth("read /config/users/alice", err)
	_, err = anon.Set("/sluice/config/users/alice", []byte(`{}`), -1)
	noAuth("set /config/users/alice", err)
	_, err = anon.Create("/sluice/brokers/ids/99", []byte(`{}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	noAuth("create /brokers/ids/99", err)
	_, err = anon.Set("/sluice/controller", []byte(`{}`), -1)
	noAuth("set /controller", err)
	_, err = anon.Create("/sluice/kafka-acl", nil, 0, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNoAuth) && !errors.Is(err, zk.ErrNodeExists) {
		t.Errorf("unauthenticated create /kafka-acl in the chroot: %v, want ErrNoAuth", err)
	}
	if _, _, err := anon.Get("/sluice/brokers/topics/before"); err != nil {
		t.Errorf("unauthenticated read of /brokers/topics/before: %v, want allowed", err)
	}

	// The broker still owns everything: it produces to the old topic and
	// creates a new one.
	adm, cl := admin(b)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after set-acls: %v", err)
	}
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "after"); err != nil || r.Err != nil {
		t.Fatalf("create after set-acls: %v %v", err, r.Err)
	}
	if up, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "new"}}); err != nil || up.Error() != nil {
		t.Fatalf("change a SCRAM user after set-acls: %v %v", err, up.Error())
	}

	// Without an identity the tool refuses to secure anything.
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"zk", "set-acls", "--zookeeper.acl=secure", "--zookeeper.connect", connect}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "identity") {
		t.Errorf("set-acls secure without an identity: exit %d: %s", code, stderr.String())
	}

	// Unsecure opens them again (with the identity that owns them).
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"zk", "set-acls", "--zookeeper.acl=unsecure", "--zookeeper.connect", connect,
		"--set", "zookeeper.auth.digest=" + digest}, &stdout, &stderr); code != 0 {
		t.Fatalf("sluice zk set-acls unsecure: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	if _, _, err := anon.Get("/sluice/config/users/alice"); err != nil {
		t.Errorf("unauthenticated read of /config/users/alice after unsecure: %v", err)
	}
}
