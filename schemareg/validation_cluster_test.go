package schemareg_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// BenchmarkClusterProduceSchemaValidation produces 100-byte framed values
// (lz4, acks=all, one franz-go client, records in flight up to its
// defaults) to a topic of three in-process brokers (segment backend,
// three partitions, replication factor 3, min.insync.replicas 2) with
// confluent.value.schema.validation on, and to one without, so every
// broker validates as a partition leader (BENCHMARKS.md, "Schema
// validation in a cluster").
func BenchmarkClusterProduceSchemaValidation(b *testing.B) {
	zk := zktest.Start(b) // NeedsProcess
	bs := brokertest.StartCluster(b, 3, "segment", zk.Addr(), withRegistry, func(c *config.Config) {
		c.DefaultReplicationFactor = 3
	})
	c, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var seeds []string
	for _, br := range bs {
		seeds = append(seeds, br.Addr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	on, two := "true", "2"
	for topic, cfg := range map[string]map[string]*string{
		"validation=off": {"min.insync.replicas": &two},
		"validation=on":  {"min.insync.replicas": &two, "confluent.value.schema.validation": &on},
	} {
		if r, err := adm.CreateTopic(c, 3, 3, cfg, topicOf(topic)); err != nil || r.Err != nil {
			b.Fatal(err, r.Err)
		}
	}
	scl, err := sr.NewClient(sr.URLs("http://" + bs[0].SchemaRegistry().Addr()))
	if err != nil {
		b.Fatal(err)
	}
	s, err := scl.CreateSchema(c, topicOf("validation=on")+"-value", sr.Schema{Schema: avroV1})
	if err != nil {
		b.Fatal(err)
	}
	waitEveryView(b, c, bs, topicOf("validation=on")+"-value", s.ID)
	value := framed(s.ID, strings.Repeat("v", 95))
	// Warm both topics up (metadata, connections, leaders' first
	// segments) outside the timing, and make sure "on" validates.
	for _, name := range []string{"validation=off", "validation=on"} {
		recs := make([]*kgo.Record, 1000)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topicOf(name), Value: value}
		}
		if err := cl.ProduceSync(c, recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	if err := cl.ProduceSync(c, &kgo.Record{Topic: topicOf("validation=on"), Value: []byte("unframed")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		b.Fatalf("an unframed value to the validating topic: %v, want INVALID_RECORD", err)
	}
	for _, name := range []string{"validation=off", "validation=on"} {
		topic := topicOf(name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			var failed error
			errs := make(chan error, 1)
			for i := 0; i < b.N; i++ {
				cl.Produce(c, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				})
			}
			if err := cl.Flush(c); err != nil {
				b.Fatal(err)
			}
			select {
			case failed = <-errs:
			default:
			}
			if failed != nil {
				b.Fatal(failed)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// topicOf names the benchmark's topic of a sub-benchmark.
func topicOf(name string) string { return "bench-" + strings.TrimPrefix(name, "validation=") }

// waitEveryView waits (bounded by c) until every broker's registry lists
// id under subject, so that no leader refuses the first records while its
// view catches up.
func waitEveryView(tb testing.TB, c context.Context, bs []*broker.Broker, subject string, id int) {
	tb.Helper()
	for i, br := range bs {
		for {
			vs, err := br.SchemaRegistry().SubjectVersions(c, subject)
			if err == nil && len(vs) > 0 && vs[len(vs)-1].ID == id {
				break
			}
			if c.Err() != nil {
				tb.Fatal(fmt.Errorf("broker %d: %s id %d not in its view: %w", i+1, subject, id, errors.Join(err, c.Err())))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
