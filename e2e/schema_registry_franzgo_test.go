package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The schemas the client tests register, one per format.
const (
	srAvroUser  = `{"type":"record","name":"User","namespace":"sluice.e2e","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"}]}`
	srJSONUser  = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"User","type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}`
	srProtoUser = "syntax = \"proto3\";\npackage sluice.e2e;\n\nmessage User {\n  string name = 1;\n  int32 age = 2;\n}\n"
)

type srAvroRec struct {
	Name string `avro:"name"`
	Age  int32  `avro:"age"`
}

type srJSONRec struct {
	Name string `json:"name"`
	Age  int32  `json:"age"`
}

// franz-go's pkg/sr against the registry of the sluice binary: it
// registers an Avro, a JSON Schema and a Protobuf schema under
// <topic>-value of three topics that have confluent.value.schema.validation
// on, finds the same ids again (lookup, registering twice), encodes records
// with sr.Serde (Confluent's framing; Protobuf with its message index),
// produces them through the broker, which validates the ids, consumes them
// back and decodes them.
func TestSchemaRegistryFranzGoSerde(t *testing.T) {
	b, url := srBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	scl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	kcl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	adm := kadm.NewClient(kcl)
	on := "true"
	topics := map[sr.SchemaType]string{sr.TypeAvro: "fg-avro", sr.TypeJSON: "fg-json", sr.TypeProtobuf: "fg-proto"}
	texts := map[sr.SchemaType]string{sr.TypeAvro: srAvroUser, sr.TypeJSON: srJSONUser, sr.TypeProtobuf: srProtoUser}
	ids := map[sr.SchemaType]int{}
	for typ, topic := range topics {
		if r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"confluent.value.schema.validation": &on}, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
		s := sr.Schema{Schema: texts[typ], Type: typ}
		ss, err := scl.CreateSchema(ctx, topic+"-value", s)
		if err != nil {
			t.Fatalf("register %s: %v", typ, err)
		}
		again, err := scl.CreateSchema(ctx, topic+"-value", s)
		if err != nil || again.ID != ss.ID || again.Version != ss.Version {
			t.Fatalf("%s registered twice: %+v then %+v %v", typ, ss, again, err)
		}
		found, err := scl.LookupSchema(ctx, topic+"-value", s)
		if err != nil || found.ID != ss.ID || found.Version != 1 {
			t.Fatalf("lookup %s: %+v %v, want id %d version 1", typ, found, err, ss.ID)
		}
		byID, err := scl.SchemaByID(ctx, ss.ID)
		if err != nil || byID.Type != typ {
			t.Fatalf("schema %d: %+v %v", ss.ID, byID, err)
		}
		ids[typ] = ss.ID
	}
	if ids[sr.TypeAvro] == ids[sr.TypeJSON] || ids[sr.TypeJSON] == ids[sr.TypeProtobuf] || ids[sr.TypeAvro] == ids[sr.TypeProtobuf] {
		t.Fatalf("three schemas share ids: %v", ids)
	}

	// The serde: each format's encoder and decoder under its id.
	avroSchema, err := avro.Parse(srAvroUser)
	if err != nil {
		t.Fatal(err)
	}
	files, err := (&protocompile.Compiler{Resolver: &protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"user.proto": srProtoUser})}}).Compile(ctx, "user.proto")
	if err != nil {
		t.Fatal(err)
	}
	userDesc := files[0].Messages().ByName("User")
	var serde sr.Serde
	serde.Register(ids[sr.TypeAvro], srAvroRec{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(avroSchema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(avroSchema, b, v) }))
	serde.Register(ids[sr.TypeJSON], srJSONRec{},
		sr.EncodeFn(json.Marshal), sr.DecodeFn(json.Unmarshal))
	serde.Register(ids[sr.TypeProtobuf], &dynamicpb.Message{},
		sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(*dynamicpb.Message)) }),
		sr.DecodeFn(func(b []byte, v any) error { return proto.Unmarshal(b, v.(*dynamicpb.Message)) }),
		sr.GenerateFn(func() any { return dynamicpb.NewMessage(userDesc) }),
		sr.Index(0))

	const n = 50
	produceErrs := make(chan error, 3*n)
	for i := 0; i < n; i++ {
		pm := dynamicpb.NewMessage(userDesc)
		pm.Set(userDesc.Fields().ByName("name"), protoreflect.ValueOfString(fmt.Sprintf("user-%d", i)))
		pm.Set(userDesc.Fields().ByName("age"), protoreflect.ValueOfInt32(int32(i)))
		for typ, v := range map[sr.SchemaType]any{
			sr.TypeAvro:     srAvroRec{Name: fmt.Sprintf("user-%d", i), Age: int32(i)},
			sr.TypeJSON:     srJSONRec{Name: fmt.Sprintf("user-%d", i), Age: int32(i)},
			sr.TypeProtobuf: pm,
		} {
			value, err := serde.Encode(v)
			if err != nil {
				t.Fatalf("encode %s: %v", typ, err)
			}
			kcl.Produce(ctx, &kgo.Record{Topic: topics[typ], Value: value}, func(r *kgo.Record, err error) {
				if err != nil {
					produceErrs <- fmt.Errorf("%s: %w", r.Topic, err)
				}
			})
		}
	}
	if err := kcl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	close(produceErrs)
	for err := range produceErrs {
		t.Fatalf("produce (the broker validates the ids): %v", err)
	}
	for typ, topic := range topics {
		cons, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for got < n {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: consumed %d of %d records", topic, got, n)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("%s: fetch: %v", topic, err) })
			fs.EachRecord(func(r *kgo.Record) {
				want := fmt.Sprintf("user-%d/%d", got, got)
				var have string
				switch typ {
				case sr.TypeAvro:
					var v srAvroRec
					err = serde.Decode(r.Value, &v)
					have = fmt.Sprintf("%s/%d", v.Name, v.Age)
				case sr.TypeJSON:
					var v srJSONRec
					err = serde.Decode(r.Value, &v)
					have = fmt.Sprintf("%s/%d", v.Name, v.Age)
				case sr.TypeProtobuf:
					var v any
					v, err = serde.DecodeNew(r.Value)
					if m, ok := v.(*dynamicpb.Message); ok {
						have = fmt.Sprintf("%s/%d", m.Get(userDesc.Fields().ByName("name")).String(), m.Get(userDesc.Fields().ByName("age")).Int())
					}
				}
				if err != nil || have != want {
					t.Fatalf("%s record %d: decoded %q (%v), want %q", topic, got, have, err, want)
				}
				got++
			})
		}
		cons.Close()
	}
}
