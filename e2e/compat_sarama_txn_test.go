package e2e

import (
	"context"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSaramaTransactions drives sarama's transactional producer
// (Producer.Transaction.ID, idempotent, one request in flight): a
// transaction copies the first half of an input topic to an output topic
// with the group's offsets of that half (AddOffsetsToTxn) and commits; a
// second copies the rest with each partition's last input message
// (AddMessageToTxn) and aborts. While the first is open, neither its
// records (the read_committed end offsets stay at 0) nor its offsets are
// visible; after the commit both are; the aborted one changes neither.
// franz-go does the reading. Version 2.4 sends TxnOffsetCommit v2 (no
// group metadata), MaxVersion v3 (KIP-447's generation and member id, here
// the "no member" defaults).
func TestSaramaTransactions(t *testing.T) {
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	slog := &saramaLog{}
	prevLogger := sarama.Logger
	sarama.Logger = log.New(slog, "[sarama] ", log.Ltime|log.Lmicroseconds)
	t.Cleanup(func() {
		sarama.Logger = prevLogger
		if t.Failed() {
			t.Logf("sarama log:\n%s", slog.String())
			t.Logf("broker log:\n%s", b.logText())
		}
	})
	for _, v := range []sarama.KafkaVersion{sarama.V2_4_0_0, sarama.MaxVersion} {
		t.Run("version="+v.String(), func(t *testing.T) { testSaramaTxn(t, b.addr, v) })
	}
}

func testSaramaTxn(t *testing.T, addr string, version sarama.KafkaVersion) {
	const n, parts = 60, 3
	in, out := "sarama-txn-in-"+version.String(), "sarama-txn-out-"+version.String()
	group := "sarama-txn-group-" + version.String()

	// The input, message i at partition i%parts, and its offsets.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopics(ctx, parts, 1, nil, in, out); err != nil {
		t.Fatalf("create topics: %v", err)
	}
	input := make([]*kgo.Record, n)
	for i := range input {
		input[i] = &kgo.Record{Topic: in, Partition: int32(i % parts), Value: fmt.Appendf(nil, "in-%d", i)}
	}
	if err := cl.ProduceSync(ctx, input...).FirstErr(); err != nil {
		t.Fatalf("produce input: %v", err)
	}

	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "sluice-e2e-sarama-txn"
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Transaction.ID = "sarama-txn-" + version.String()
	cfg.Producer.Transaction.Timeout = 30 * time.Second
	cfg.Producer.Transaction.Retry.Backoff = 200 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer p.Close()
	if !p.IsTransactional() {
		t.Fatal("producer is not transactional")
	}

	// copyOut sends the output copies of input [from, to), tagged.
	copyOut := func(from, to int, tag string) {
		t.Helper()
		msgs := make([]*sarama.ProducerMessage, 0, to-from)
		for i := from; i < to; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: out, Partition: int32(i % parts),
				Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tag, i))})
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("%s: SendMessages: %v", tag, err)
		}
	}
	// next[p] is the offset after the last of input [0, to) in partition p.
	next := func(to int) map[int32]int64 {
		m := map[int32]int64{}
		for _, r := range input[:to] {
			m[r.Partition] = max(m[r.Partition], r.Offset+1)
		}
		return m
	}

	// Transaction 1: the first half with its offsets, committed.
	if err := p.BeginTxn(); err != nil {
		t.Fatalf("BeginTxn: %v", err)
	}
	copyOut(0, n/2, "committed")
	offs := map[string][]*sarama.PartitionOffsetMetadata{}
	for part, o := range next(n / 2) {
		offs[in] = append(offs[in], &sarama.PartitionOffsetMetadata{Partition: part, Offset: o})
	}
	if err := p.AddOffsetsToTxn(offs, group); err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	if st := p.TxnStatus(); st&sarama.ProducerTxnFlagInTransaction == 0 {
		t.Fatalf("status %v inside the transaction", st)
	}
	// Open: the LSO holds read_committed at 0 and the offsets are pending.
	lso, err := adm.ListCommittedOffsets(ctx, out)
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		t.Fatalf("ListCommittedOffsets: %v", err)
	}
	lso.Each(func(o kadm.ListedOffset) {
		if o.Offset != 0 {
			t.Errorf("open transaction: read_committed end offset of partition %d is %d, want 0", o.Partition, o.Offset)
		}
	})
	if got := groupOffsets(t, addr, group, in); len(got) != 0 {
		t.Errorf("open transaction: group offsets %v visible before the commit", got)
	}
	if err := p.CommitTxn(); err != nil {
		t.Fatalf("CommitTxn: %v", err)
	}
	want := next(n / 2)
	// The commit's markers reach __consumer_offsets after EndTxn answers
	// (as in Kafka, markers are written asynchronously): wait for them,
	// bounded, before comparing.
	checkOffsets := func(when string) {
		t.Helper()
		var got map[int32]int64
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			got = groupOffsets(t, addr, group, in)
			same := true
			for part, o := range want {
				same = same && got[part] == o
			}
			if same || time.Now().After(deadline) {
				break
			}
		}
		for part, o := range want {
			if got[part] != o {
				t.Errorf("%s: group offset of %s/%d is %d, want %d", when, in, part, got[part], o)
			}
		}
	}
	checkOffsets("after the commit")

	// Transaction 2: the rest, with each partition's last input message
	// as a consumer would hand it over, aborted.
	if err := p.BeginTxn(); err != nil {
		t.Fatalf("BeginTxn 2: %v", err)
	}
	copyOut(n/2, n, "aborted")
	for _, r := range input[n-parts:] {
		msg := &sarama.ConsumerMessage{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: r.Value}
		if err := p.AddMessageToTxn(msg, group, nil); err != nil {
			t.Fatalf("AddMessageToTxn: %v", err)
		}
	}
	if err := p.AbortTxn(); err != nil {
		t.Fatalf("AbortTxn: %v", err)
	}
	if st := p.TxnStatus(); st&sarama.ProducerTxnFlagReady == 0 {
		t.Errorf("status %v after the abort, want ready", st)
	}
	checkOffsets("after the abort")

	// The aborted copies are in the log, for read_uncommitted only.
	checkTxnOutput(t, addr, out, n/2, n/2)
}
