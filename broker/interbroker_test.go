package broker_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/testpki"
	"github.com/sluice/sluice/internal/zktest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestInterBrokerKeystoreError: a keystore the inter-broker connections
// cannot use fails Start, naming the inter-broker listener, instead of
// dialing the other brokers without a certificate.
func TestInterBrokerKeystoreError(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := brokertest.Config(t.TempDir(), "memory", func(c *config.Config) {
		c.ZooKeeperConnect = "127.0.0.1:1" // never dialed: Start fails first
		c.Listeners = []string{"SSL://127.0.0.1:0"}
		c.SecurityProperties = map[string]string{"ssl.keystore.location": garbage}
	})
	b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t)})
	if err == nil {
		b.Close()
		t.Fatal("started")
	}
	if !strings.Contains(err.Error(), "inter-broker listener SSL") || !strings.Contains(err.Error(), "ssl.keystore.location") {
		t.Fatalf("err %v, want one naming the inter-broker listener's keystore", err)
	}
}

// TestInterBrokerMutualTLS: two brokers whose only listener is SSL with
// ssl.client.auth=required replicate to each other, the followers
// presenting the keystore of the listener's own settings.
func TestInterBrokerMutualTLS(t *testing.T) {
	zk := zktest.Start(t)
	pki := testpki.New(t)
	var bs []*broker.Broker
	for id := int32(1); id <= 2; id++ {
		bs = append(bs, brokertest.Start(t, "memory", func(c *config.Config) {
			c.BrokerID = id
			c.ZooKeeperConnect = zk.Addr() + "/sluice"
			c.ControlledShutdownEnable = false
			c.ReplicaLagTimeMax = 2 * time.Second
			c.Listeners = []string{"SSL://127.0.0.1:0"}
			c.SecurityProperties = map[string]string{
				"ssl.keystore.location":   pki.Broker.Keystore,
				"ssl.truststore.location": pki.Broker.CA,
				"ssl.client.auth":         "required",
			}
		}))
	}
	cert, err := tls.LoadX509KeyPair(pki.Broker.Keystore, pki.Broker.Keystore)
	if err != nil {
		t.Fatal(err)
	}
	tcfg := pki.TLS.Clone()
	tcfg.Certificates = []tls.Certificate{cert}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[0].Addr(), bs[1].Addr()), kgo.DialTLSConfig(tcfg),
		kgo.DefaultProduceTopic("replicated"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokertest.WaitForBrokers(t, 2, []kgo.Opt{kgo.DialTLSConfig(tcfg)}, bs...)
	if r, err := adm.CreateTopic(ctx, 1, 2, nil, "replicated"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	for i := range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	// The follower has the records: with the leader gone it takes over
	// (only an in-sync replica can) and serves all 50.
	md, err := adm.Metadata(ctx, "replicated")
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics["replicated"].Partitions[0].Leader
	if leader != 1 && leader != 2 {
		t.Fatalf("leader %d", leader)
	}
	if err := bs[leader-1].Close(); err != nil {
		t.Fatal(err)
	}
	other := bs[2-leader]
	cons, err := kgo.NewClient(kgo.SeedBrokers(other.Addr()), kgo.DialTLSConfig(tcfg),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"replicated": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got int
	for got < 50 && ctx.Err() == nil {
		got += cons.PollFetches(ctx).NumRecords()
	}
	if got != 50 {
		t.Fatalf("consumed %d of 50 records from the former follower", got)
	}
}
