package broker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/auth/certs"
	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// TestConsoleTLSPerHostCertificates: in a TLS cluster where each broker's
// certificate names only its own host (broker 1 "localhost", broker 2
// "127.0.0.1"), the HTTP API of broker 1 reaches broker 2 too: its client
// verifies each broker by the host it dials, not by broker 1's name.
func TestConsoleTLSPerHostCertificates(t *testing.T) {
	zk := zktest.Start(t)
	ca, err := certs.NewCA("sluice test CA", certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hosts := map[int32]string{1: "localhost", 2: "127.0.0.1"}
	var bs []*broker.Broker
	var caPath string
	for id := int32(1); id <= 2; id++ {
		sb, err := ca.IssueServer([]string{hosts[id]}, certs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := sb.WriteFiles(filepath.Join(dir, hosts[id]), "broker", ca)
		if err != nil {
			t.Fatal(err)
		}
		caPath = p.CA
		bs = append(bs, brokertest.Start(t, "memory", func(c *config.Config) {
			c.BrokerID = id
			c.ZooKeeperConnect = zk.Addr() + "/sluice"
			c.ControlledShutdownEnable = false
			c.OffsetsTopicReplication = 1
			c.Listeners = []string{"SSL://" + hosts[id] + ":0"}
			c.SecurityProperties = map[string]string{
				"ssl.keystore.location":   p.Keystore,
				"ssl.truststore.location": p.CA,
			}
		}))
	}
	pem, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	// A client that verifies each broker by its own host (as franz-go does
	// with no ServerName) creates a topic led by both brokers.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[1].Addr()), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Broker 1 is dialled by IP here, which its certificate does not name.
	brokertest.WaitForBrokers(t, 2, []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool})}, bs[1])
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "spread", -1, -1
	for p, leader := range []int32{1, 2} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), []int32{leader}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	for p := range int32(2) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "spread", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce to %d: %v", p, err)
		}
	}
	var td struct {
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
			EndOffset int64 `json:"endOffset"`
		} `json:"partitions"`
	}
	hresp, err := http.Get("http://" + bs[0].HTTPAddr() + "/api/topics/spread")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	if hresp.StatusCode != 200 {
		t.Fatalf("broker 1's /api/topics/spread: %d %s", hresp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &td); err != nil {
		t.Fatal(err)
	}
	if len(td.Partitions) != 2 {
		t.Fatalf("partitions: %s", body)
	}
	for _, p := range td.Partitions {
		if p.EndOffset != 1 {
			t.Errorf("partition %d (leader %d): end offset %d, want 1 (its leader unreachable from broker 1's console?) %s", p.Partition, p.Leader, p.EndOffset, body)
		}
	}
}
