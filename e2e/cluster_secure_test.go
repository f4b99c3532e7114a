package e2e

// A 3-broker cluster with SASL_SSL for clients (SCRAM-SHA-512) and a
// separate SASL_PLAINTEXT inter-broker listener (PLAIN), ACLs on: topics
// replicate, a leader fails over, the group coordinator works, a SCRAM
// user created through one broker logs in on the others, and a client that
// is not a super user cannot send controller requests or fetch as a
// follower.

import (
	"context"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testpki"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func TestClusterSecure(t *testing.T) {
	t.Parallel()
	pki := testpki.New(t)
	sp := pki.Broker
	tlsOpt := kgo.DialTLSConfig(pki.TLS)
	admin := []kgo.Opt{tlsOpt, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())}
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`
	c := startClusterWith(t, 3, admin,
		"listeners=SASL_SSL://127.0.0.1:{port},INTERNAL://127.0.0.1:{port2}",
		"listener.security.protocol.map=SASL_SSL:SASL_SSL,INTERNAL:SASL_PLAINTEXT",
		"inter.broker.listener.name=INTERNAL",
		"sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"listener.name.internal.plain.sasl.jaas.config="+jaas,
		"listener.name.sasl_ssl.plain.sasl.jaas.config="+jaas,
		"ssl.keystore.type=PEM", "ssl.keystore.location="+sp.Keystore,
		"ssl.truststore.type=PEM", "ssl.truststore.location="+sp.CA,
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:admin",
		"replica.lag.time.max.ms=3000",
	)
	c.createTopic("secure", 1, 3, nil)
	c.produceN("secure", "a", 500)
	// The followers replicate over the SASL_PLAINTEXT inter-broker
	// listener: produceN's acks=all returned only once every ISR member
	// had the 500 records, and a follower that cannot fetch leaves the
	// ISR (replica.lag.time.max.ms) without coming back, so the full ISR
	// with a high watermark of 500 means both followers hold all 500.
	c.waitISR("secure", []int32{1, 2, 3}, 30*time.Second)
	if hw := c.highWatermark("secure"); hw != 500 {
		t.Fatalf("high watermark %d after 500 records acknowledged by all replicas", hw)
	}

	// A SCRAM user created through broker 1 logs in on broker 3.
	cl1, err := kgo.NewClient(append(admin, kgo.SeedBrokers(c.brokers[1].addr))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl1.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl1)
	if res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "dave-secret"}}); err != nil || res.Error() != nil {
		t.Fatalf("create SCRAM user: %v %v", err, res.Error())
	}
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:dave").Topics("secure").Operations(kadm.OpRead, kadm.OpWrite)); err != nil || res[0].Err != nil {
		t.Fatalf("ACL: %v %+v", err, res)
	}
	dave := []kgo.Opt{tlsOpt, kgo.SASL(scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha512Mechanism())}
	var daveCl *kgo.Client
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The other brokers see the new user through /config/changes.
		daveCl, err = kgo.NewClient(append(dave, kgo.SeedBrokers(c.brokers[3].addr), kgo.DefaultProduceTopic("secure"))...)
		if err != nil {
			t.Fatal(err)
		}
		if err = daveCl.ProduceSync(ctx, &kgo.Record{Value: []byte("dave")}).FirstErr(); err == nil {
			break
		}
		daveCl.Close()
		if time.Now().After(deadline) {
			t.Fatalf("dave on broker 3: %v\n%s", err, c.logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
	defer daveCl.Close()

	// dave is not a super user: no controller request, no follower fetch.
	leader, _ := c.followersOf("secure")
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.ControllerID, req.ControllerEpoch = c.controllerID(), 1
	resp, err := req.RequestWith(ctx, daveCl)
	if err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("LeaderAndIsr from dave: %v %v", err, resp)
	}
	sr := kmsg.NewPtrStopReplicaRequest()
	if sresp, err := sr.RequestWith(ctx, daveCl); err != nil || sresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("StopReplica from dave: %v %v", err, sresp)
	}
	fr := kmsg.NewPtrFetchRequest()
	fr.ReplicaID, fr.ReplicaState.ID, fr.ReplicaState.Epoch, fr.MaxBytes = 2, 2, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "secure"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	fresp, err := fr.RequestWith(ctx, daveCl)
	if err != nil {
		t.Fatalf("follower fetch from dave: %v", err)
	}
	if len(fresp.Topics) != 1 || len(fresp.Topics[0].Partitions) != 1 {
		t.Fatalf("follower fetch from dave: answered %+v, want the one partition asked for", fresp.Topics)
	}
	// Kafka's KafkaApis answers a follower fetch without ClusterAction
	// with TOPIC_AUTHORIZATION_FAILED for each partition.
	if fp := fresp.Topics[0].Partitions[0]; fp.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(fp.RecordBatches) != 0 {
		t.Fatalf("follower fetch from dave: %v with %d bytes of records, want TOPIC_AUTHORIZATION_FAILED and none",
			kerr.ErrorForCode(fp.ErrorCode), len(fp.RecordBatches))
	}

	// Leader failover over the secured listeners; nothing acknowledged lost.
	c.brokers[leader].kill()
	c.waitFor(30*time.Second, "a new leader", func(*kadm.Client) bool {
		pd, ok := c.partition("secure", 0)
		return ok && pd.Leader >= 0 && pd.Leader != leader
	})
	c.produceN("secure", "b", 300)
	got := c.consumeAll("secure")
	if len(got) != 801 {
		t.Fatalf("consumed %d records, want 801", len(got))
	}
	c.brokers[leader].restart()
	c.waitISR("secure", []int32{1, 2, 3}, 30*time.Second)

	// The group coordinator (on __consumer_offsets, replicated over the
	// inter-broker listener) commits and serves offsets.
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "secure", Partition: 0, At: 42, LeaderEpoch: -1})
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	for {
		res, err := adm.CommitOffsets(cctx, "secure-group", os)
		if err == nil && res.Error() == nil {
			break
		}
		if cctx.Err() != nil {
			t.Fatalf("commit offsets: %v %v\n%s", err, res.Error(), c.logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
	fetched, err := adm.FetchOffsets(ctx, "secure-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("secure", 0); !ok || o.At != 42 {
		t.Fatalf("fetched offsets %+v", fetched)
	}
}
