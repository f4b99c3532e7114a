package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/record"
)

// srFramed is Confluent's wire framing: magic byte 0, the big-endian
// schema id, then the body.
func srFramed(id int, body string) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, body...)
}

// srProduceTo sends one Produce of one record with value, acks=all, to
// broker id for topic-partition and returns the partition's error code
// and message. It keeps one client per broker (c.kcl), so that a produce
// right after a registration goes out at once.
func (c *srCluster) srProduceTo(id int32, topic string, partition int32, value []byte) (int16, string) {
	c.t.Helper()
	cl := c.kcl[id]
	if cl == nil {
		var err error
		if cl, err = c.newClient(kgo.SeedBrokers(c.brokers[id].addr)); err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(cl.Close)
		c.kcl[id] = cl
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Value: value, Timestamp: time.Now().UnixMilli()}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.Broker(int(id)).RetriableRequest(ctx, req)
	if err != nil {
		c.t.Fatalf("produce to broker %d: %v", id, err)
	}
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	msg := ""
	if p.ErrorMessage != nil {
		msg = *p.ErrorMessage
	}
	return p.ErrorCode, msg
}

// srLeaders creates topic (partitions, replication factor 3, configs)
// and returns, for each broker, a partition it leads; the test fails if a
// broker leads none.
func (c *srCluster) srLeaders(topic string, partitions int32, configs map[string]*string) map[int32]int32 {
	c.t.Helper()
	c.createTopic(topic, partitions, 3, configs)
	led := map[int32]int32{}
	for p := partitions - 1; p >= 0; p-- {
		pd, ok := c.partition(topic, p)
		if !ok {
			c.t.Fatalf("%s-%d: no metadata", topic, p)
		}
		led[pd.Leader] = p
	}
	for id := range c.brokers {
		if _, ok := led[id]; !ok {
			c.t.Fatalf("broker %d leads no partition of %s: %v", id, topic, led)
		}
	}
	return led
}

// srExtraFields is round optional fields, one schema per round that
// stays backward compatible with the ones before.
func srExtraFields(round int) string {
	var b strings.Builder
	for i := 0; i < round; i++ {
		fmt.Fprintf(&b, `,{"name":"b%d","type":"int","default":0}`, i)
	}
	return b.String()
}

// With confluent.value.schema.validation=true on a topic of a
// three-broker cluster, every broker, as the leader of one of its
// partitions, appends a record framed with an id registered under
// <topic>-value (registered through another broker a moment before) and
// refuses with INVALID_RECORD, naming the subject, a record without the
// magic byte, one with an id registered nowhere and one with the id of
// another subject; a topic without validation takes them all.
// (The plain topic gets a warm-up record per broker first.)
func TestSchemaRegistryClusterValidation(t *testing.T) {
	t.Parallel()
	c := startSRCluster(t, 3, "default.replication.factor=3", "min.insync.replicas=2")
	on := "true"
	led := c.srLeaders("sv", 6, map[string]*string{"confluent.value.schema.validation": &on})
	plain := c.srLeaders("plain", 6, nil)

	// Many rounds: a broker whose view had not applied the registration
	// yet refused such a record in about one produce in twelve before
	// validation caught its view up on a miss.
	const rounds = 30
	for b := int32(1); b <= 3; b++ { // connect the clients first
		c.srProduceTo(b, "plain", plain[b], []byte("warm-up"))
	}
	other, err := srRegister(c.urls[3], "other-value", `"string"`)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < rounds; round++ {
		// A new schema each round, registered through one broker and
		// produced at once to every broker: each validates against its
		// own registry's view.
		via := int32(round%3 + 1)
		id, err := srRegister(c.urls[via], "sv-value", fmt.Sprintf(`{"type":"record","name":"v","fields":[{"name":"a","type":"string"}%s]}`,
			srExtraFields(round)))
		if err != nil {
			t.Fatal(err)
		}
		for b := int32(1); b <= 3; b++ {
			if code, msg := c.srProduceTo(b, "sv", led[b], srFramed(id, "ok")); code != 0 {
				t.Fatalf("round %d: broker %d refused a record with id %d, registered through broker %d: %v %s", round, b, id, via, kerr.ErrorForCode(code), msg)
			}
		}
	}
	for b := int32(1); b <= 3; b++ {
		for name, v := range map[string][]byte{
			"no magic byte":            []byte("plain text value"),
			"an id registered nowhere": srFramed(99999, "x"),
			"another subject's id":     srFramed(other, "x"),
		} {
			code, msg := c.srProduceTo(b, "sv", led[b], v)
			want := "sv-value" // the subject the id is not registered under
			if name == "no magic byte" {
				want = "record 0"
			}
			if code != kerr.InvalidRecord.Code || !strings.Contains(msg, want) {
				t.Errorf("broker %d, %s: %v %q, want INVALID_RECORD naming %s", b, name, kerr.ErrorForCode(code), msg, want)
			}
			if code, msg := c.srProduceTo(b, "plain", plain[b], v); code != 0 {
				t.Errorf("broker %d, %s to a topic without validation: %v %s", b, name, kerr.ErrorForCode(code), msg)
			}
		}
	}
	// Only the valid records are in sv's log.
	adm, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "sv")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != int64(3*rounds) {
		t.Fatalf("sv holds %d records, want %d (a valid one per round and broker)", total, 3*rounds)
	}
}
