package schemareg_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice/sluice/record"
)

// framed is Confluent's wire framing: magic byte 0, the schema id, body.
func framed(id int, body string) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, body...)
}

// TestBrokerSchemaValidation: with confluent.value.schema.validation (and
// .key.) on, records framed with an id registered under <topic>-value
// (-key) are appended, compressed or not; a value without the magic byte,
// with an unknown id or with the id of another subject is INVALID_RECORD,
// the message and (Produce v8+) the record errors naming the record's
// index. A topic without validation takes anything; an unknown subject
// name strategy is INVALID_CONFIG.
func TestBrokerSchemaValidation(t *testing.T) {
	b, scl := startRegistry(t, t.TempDir())
	c := ctx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	on := "true"
	create := func(topic string, cfg map[string]*string) error {
		t.Helper()
		r, err := adm.CreateTopic(c, 1, 1, cfg, topic)
		if err != nil {
			return err
		}
		return r.Err
	}
	if err := create("sv", map[string]*string{"confluent.value.schema.validation": &on}); err != nil {
		t.Fatal(err)
	}
	if err := create("svk", map[string]*string{"confluent.key.schema.validation": &on}); err != nil {
		t.Fatal(err)
	}
	if err := create("plain", nil); err != nil {
		t.Fatal(err)
	}
	bad := "com.example.MyStrategy"
	if err := create("rns", map[string]*string{"confluent.value.schema.validation": &on, "confluent.value.subject.name.strategy": &bad}); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("an unknown subject name strategy: %v, want INVALID_CONFIG", err)
	}

	mine, err := scl.CreateSchema(c, "sv-value", sr.Schema{Schema: avroV1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := scl.CreateSchema(c, "other-value", sr.Schema{Schema: `"string"`})
	if err != nil {
		t.Fatal(err)
	}
	keyS, err := scl.CreateSchema(c, "svk-key", sr.Schema{Schema: `"long"`})
	if err != nil {
		t.Fatal(err)
	}
	if mine.ID == other.ID {
		t.Fatalf("two schemas share id %d", mine.ID)
	}

	produce := func(recs ...*kgo.Record) error {
		t.Helper()
		return cl.ProduceSync(c, recs...).FirstErr()
	}
	// Valid: several records in one (zstd-compressed) batch.
	if err := produce(&kgo.Record{Topic: "sv", Value: framed(mine.ID, "a")}, &kgo.Record{Topic: "sv", Value: framed(mine.ID, "b")}); err != nil {
		t.Fatalf("valid records: %v", err)
	}
	for name, v := range map[string][]byte{
		"no magic byte":     []byte("plain text value"),
		"too short":         {0, 0, 1},
		"null":              nil,
		"unknown id":        framed(99999, "x"),
		"another subject's": framed(other.ID, "x"),
	} {
		if err := produce(&kgo.Record{Topic: "sv", Value: v}); !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: %v, want INVALID_RECORD", name, err)
		}
	}
	// Key validation looks at keys only.
	if err := produce(&kgo.Record{Topic: "svk", Key: framed(keyS.ID, "k"), Value: []byte("anything")}); err != nil {
		t.Fatalf("valid key: %v", err)
	}
	if err := produce(&kgo.Record{Topic: "svk", Key: framed(mine.ID, "k")}); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("key of another subject: %v, want INVALID_RECORD", err)
	}
	// No validation: anything goes.
	if err := produce(&kgo.Record{Topic: "plain", Value: []byte("no framing")}, &kgo.Record{Topic: "plain", Value: framed(99999, "x")}); err != nil {
		t.Fatalf("topic without validation: %v", err)
	}

	// Turned on later (IncrementalAlterConfigs), it applies to the next batch.
	if r, err := adm.AlterTopicConfigs(c, []kadm.AlterConfig{{Name: "confluent.value.schema.validation", Value: &on}}, "plain"); err != nil || r[0].Err != nil {
		t.Fatal(err, r)
	}
	if err := produce(&kgo.Record{Topic: "plain", Value: []byte("no framing")}); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("plain after turning validation on: %v, want INVALID_RECORD", err)
	}

	// The raw response: record 2 of 3 (uncompressed and gzip) is named.
	for _, codec := range []int{record.CodecNone, record.CodecGzip} {
		recs := []record.BuildRecord{{Value: framed(mine.ID, "0")}, {Value: framed(mine.ID, "1")}, {Value: framed(other.ID, "2")}}
		batch := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}, recs)
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "sv"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(c, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidRecord.Code || p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "record 2") || !strings.Contains(*p.ErrorMessage, "sv-value") {
			t.Fatalf("codec %d: error %d %v, want INVALID_RECORD naming record 2 and sv-value", codec, p.ErrorCode, p.ErrorMessage)
		}
		if resp.Version < 8 {
			t.Fatalf("Produce v%d: want v8+ (record errors)", resp.Version)
		}
		if len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 2 {
			t.Fatalf("codec %d: record errors %+v, want batch index 2", codec, p.ErrorRecords)
		}
	}

	// Only the valid records are in the log.
	o, err := adm.ListEndOffsets(c, "sv")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := o.Lookup("sv", 0); end.Offset != 2 {
		t.Fatalf("sv ends at %d, want 2 (the two valid records)", end.Offset)
	}
}

// BenchmarkProduceSchemaValidation produces 100-byte framed values
// (lz4, acks=all, one partition) to a topic with
// confluent.value.schema.validation on and to one without
// (BENCHMARKS.md, "Schema validation").
func BenchmarkProduceSchemaValidation(b *testing.B) {
	br, scl := startRegistry(b, b.TempDir())
	c := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	on := "true"
	for topic, cfg := range map[string]map[string]*string{"off": nil, "on": {"confluent.value.schema.validation": &on}} {
		if r, err := adm.CreateTopic(c, 1, 1, cfg, topic); err != nil || r.Err != nil {
			b.Fatal(err, r.Err)
		}
	}
	s, err := scl.CreateSchema(c, "on-value", sr.Schema{Schema: avroV1})
	if err != nil {
		b.Fatal(err)
	}
	value := framed(s.ID, strings.Repeat("v", 95))
	for _, topic := range []string{"off", "on"} {
		b.Run(topic, func(b *testing.B) {
			b.SetBytes(int64(len(value)))
			const chunk = 1000
			recs := make([]*kgo.Record, 0, chunk)
			for i := 0; i < b.N; {
				recs = recs[:0]
				for ; len(recs) < chunk && i < b.N; i++ {
					recs = append(recs, &kgo.Record{Topic: topic, Value: value})
				}
				if err := cl.ProduceSync(c, recs...).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// TestBrokerSchemaValidationRecordStrategies: under RecordNameStrategy a
// record's id must be registered under the record name of the schema it
// names (Avro's full name, JSON Schema's title, the Protobuf message its
// message indexes select), and under TopicRecordNameStrategy under
// <topic>-<record name>, as Confluent's serializers register them; an id
// registered only under <topic>-value, a JSON Schema without a title, or
// message indexes naming no message are INVALID_RECORD.
func TestBrokerSchemaValidationRecordStrategies(t *testing.T) {
	b, scl := startRegistry(t, t.TempDir())
	c := ctx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	on := "true"
	rns, trns := "io.confluent.kafka.serializers.subject.RecordNameStrategy", "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
	for topic, strategy := range map[string]*string{"rn": &rns, "trn": &trns} {
		r, err := adm.CreateTopic(c, 1, 1, map[string]*string{"confluent.value.schema.validation": &on, "confluent.value.subject.name.strategy": strategy}, topic)
		if err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	register := func(subject string, s sr.Schema) int {
		t.Helper()
		ss, err := scl.CreateSchema(c, subject, s)
		if err != nil {
			t.Fatalf("register %s: %v", subject, err)
		}
		return ss.ID
	}
	const order = `{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"}]}`
	const proto = `syntax = "proto3"; package shop; message Order { int64 id = 1; message Line { string sku = 1; } } message Refund { int64 id = 1; }`
	const jsonTitled = `{"title":"Payment","type":"object","properties":{"amount":{"type":"number"}}}`
	const jsonUntitled = `{"type":"object","properties":{"x":{"type":"number"}}}`
	avroRN := register("com.example.Order", sr.Schema{Schema: order})
	jsonRN := register("Payment", sr.Schema{Schema: jsonTitled, Type: sr.TypeJSON})
	untitled := register("rn-value", sr.Schema{Schema: jsonUntitled, Type: sr.TypeJSON})
	protoRN := register("shop.Refund", sr.Schema{Schema: proto, Type: sr.TypeProtobuf})
	register("shop.Order.Line", sr.Schema{Schema: proto, Type: sr.TypeProtobuf}) // the same schema, the same id
	protoTRN := register("trn-shop.Order", sr.Schema{Schema: proto, Type: sr.TypeProtobuf})
	onlyTopic := register("trn-value", sr.Schema{Schema: `{"type":"record","name":"Other","fields":[]}`})

	// Confluent's Protobuf framing after the id: zigzag varint count,
	// then the indexes; a single 0 is the first message.
	protoFramed := func(id int, indexes ...int64) []byte {
		b := framed(id, "")
		if len(indexes) == 0 {
			b = append(b, 0)
		} else {
			b = binary.AppendVarint(b, int64(len(indexes)))
			for _, i := range indexes {
				b = binary.AppendVarint(b, i)
			}
		}
		return append(b, "body"...)
	}
	for _, tc := range []struct {
		name  string
		topic string
		value []byte
		ok    bool
	}{
		{"avro under its full name", "rn", framed(avroRN, "x"), true},
		{"json under its title", "rn", framed(jsonRN, "x"), true},
		{"json without a title", "rn", framed(untitled, "x"), false},
		{"protobuf second message (Refund)", "rn", protoFramed(protoRN, 1), true},
		{"protobuf nested message (Order.Line)", "rn", protoFramed(protoRN, 0, 0), true},
		{"protobuf first message (Order), not registered under shop.Order", "rn", protoFramed(protoRN), false},
		{"protobuf index naming no message", "rn", protoFramed(protoRN, 7), false},
		{"protobuf without indexes", "rn", framed(protoRN, ""), false},
		{"unknown id", "rn", framed(99999, "x"), false},
		{"topic-record: <topic>-shop.Order", "trn", protoFramed(protoTRN), true},
		{"topic-record: Refund not under trn-shop.Refund", "trn", protoFramed(protoTRN, 1), false},
		{"topic-record: registered only under <topic>-value", "trn", framed(onlyTopic, "x"), false},
	} {
		// Twice: the second answer comes from the cache.
		for range 2 {
			err := cl.ProduceSync(c, &kgo.Record{Topic: tc.topic, Value: tc.value}).FirstErr()
			if tc.ok && err != nil {
				t.Errorf("%s: %v, want appended", tc.name, err)
			}
			if !tc.ok && !errors.Is(err, kerr.InvalidRecord) {
				t.Errorf("%s: %v, want INVALID_RECORD", tc.name, err)
			}
		}
	}
}
