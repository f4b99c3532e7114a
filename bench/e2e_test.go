package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
)

// Loopback produce and consume through a real client (franz-go kgo, its
// defaults: acks=all, idempotent, 1 MB batches, 1 MiB per partition per
// fetch; compression off) against an in-process broker per storage
// backend, and against franz-go's kfake cluster in the same binary as the
// baseline (an in-memory fake with no storage engine of its own to speak
// of, so it is the cost of the protocol path alone):
//
//	go test -run '^$' -bench 'Produce|Consume' -benchtime 2000x ./bench/
//
// One op moves e2eChunk records of e2eValue bytes (about 1 MB) to one
// partition and waits for them: Produce until every ack is back (Flush),
// Consume until that many records are polled. Clients are created, connected
// and warmed with one chunk before the timer starts. Every e2eTrimEvery
// chunks, with the timer stopped, DeleteRecords drops what was moved
// (segments are 64 MiB) so that a long run keeps neither the memory backend
// nor kfake growing; Consume refills the topic at the same time. Allocs/op
// are the client's and the broker's together.
const (
	e2eTopic     = "bench"
	e2eChunk     = 1000
	e2eValue     = 1024
	e2eTrimEvery = 64
)

// e2eBackends are the brokers measured: every registered backend, then
// kfake.
func e2eBackends() []string { return append(engine.Names(), "kfake") }

// e2eTarget is a running broker with the one-partition topic e2eTopic.
type e2eTarget struct {
	addr  string
	ctx   context.Context // bounds every wait, so a stuck broker fails the benchmark
	admCl *kgo.Client
	adm   *kadm.Client
}

func startTarget(b *testing.B, backend string) *e2eTarget {
	b.Helper()
	t := &e2eTarget{}
	if backend == "kfake" {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			b.Fatalf("kfake: %v", err)
		}
		b.Cleanup(c.Close)
		t.addr = c.ListenAddrs()[0]
	} else {
		br := brokertest.Start(b, backend, func(c *config.Config) { c.LogSegmentBytes = 64 << 20 })
		t.addr = br.Addr()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	b.Cleanup(cancel)
	t.ctx = ctx
	var err error
	if t.admCl, err = kgo.NewClient(kgo.SeedBrokers(t.addr)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(t.admCl.Close)
	t.adm = kadm.NewClient(t.admCl)
	if _, err := t.adm.CreateTopic(ctx, 1, 1, nil, e2eTopic); err != nil {
		b.Fatalf("%s: create topic: %v", backend, err)
	}
	return t
}

// trim deletes the records below offset (-1: all of them).
func (t *e2eTarget) trim(b *testing.B, offset int64) {
	b.Helper()
	var os kadm.Offsets
	os.AddOffset(e2eTopic, 0, offset, -1)
	resp, err := t.adm.DeleteRecords(t.ctx, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		b.Fatalf("delete records below %d: %v", offset, err)
	}
}

// e2eProducer produces chunks of e2eChunk records and waits for their acks.
type e2eProducer struct {
	cl     *kgo.Client
	recs   []kgo.Record
	failed atomic.Pointer[error]
	// promise is bound once so Produce allocates no closure per record.
	promise func(*kgo.Record, error)
}

func newE2EProducer(b *testing.B, t *e2eTarget) *e2eProducer {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(t.addr), kgo.DefaultProduceTopic(e2eTopic),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	value := make([]byte, e2eValue)
	for i := range value {
		value[i] = 'A' + byte(i*7%26)
	}
	p := &e2eProducer{cl: cl, recs: make([]kgo.Record, e2eChunk)}
	for i := range p.recs {
		p.recs[i].Value = value // kgo never writes a value: all records share it
	}
	p.promise = func(_ *kgo.Record, err error) {
		if err != nil {
			p.failed.CompareAndSwap(nil, &err)
		}
	}
	return p
}

// chunk produces one chunk and waits for every ack.
func (p *e2eProducer) chunk(b *testing.B, ctx context.Context) {
	for i := range p.recs {
		r := &p.recs[i]
		r.Timestamp = time.Time{} // set to now by Produce, as for a fresh record
		p.cl.Produce(ctx, r, p.promise)
	}
	if err := p.cl.Flush(ctx); err != nil {
		b.Fatalf("flush: %v", err)
	}
	if err := p.failed.Load(); err != nil {
		b.Fatalf("produce: %v", *err)
	}
}

func BenchmarkProduce(b *testing.B) {
	for _, backend := range e2eBackends() {
		b.Run(fmt.Sprintf("backend=%s/size=1KiB", backend), func(b *testing.B) {
			t := startTarget(b, backend)
			p := newE2EProducer(b, t)
			p.chunk(b, t.ctx) // connections, metadata, producer id
			b.SetBytes(e2eChunk * e2eValue)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p.chunk(b, t.ctx)
				if (i+1)%e2eTrimEvery == 0 {
					b.StopTimer()
					t.trim(b, -1)
					b.StartTimer()
				}
			}
		})
	}
}

func BenchmarkConsume(b *testing.B) {
	for _, backend := range e2eBackends() {
		b.Run(fmt.Sprintf("backend=%s/size=1KiB", backend), func(b *testing.B) {
			t := startTarget(b, backend)
			p := newE2EProducer(b, t)
			cl, err := kgo.NewClient(kgo.SeedBrokers(t.addr), kgo.ConsumePartitions(
				map[string]map[int32]kgo.Offset{e2eTopic: {0: kgo.NewOffset().AtStart()}}))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			// produced and consumed count records; the topic's one
			// partition starts at offset 0 and has no gaps, so they are
			// offsets too.
			var produced, consumed int64
			consume := func(n int64) {
				target := consumed + n
				for consumed < target {
					fetches := cl.PollFetches(t.ctx)
					if err := fetches.Err(); err != nil {
						if errors.Is(err, context.DeadlineExceeded) {
							b.Fatalf("consume: stuck at %d of %d produced", consumed, produced)
						}
						b.Fatalf("consume: %v", err)
					}
					consumed += int64(fetches.NumRecords())
				}
			}
			p.chunk(b, t.ctx)
			produced += e2eChunk
			consume(e2eChunk) // connections, metadata, the fetch session
			b.SetBytes(e2eChunk * e2eValue)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if produced-consumed < e2eChunk {
					b.StopTimer()
					t.trim(b, consumed)
					for range min(e2eTrimEvery, b.N-i) {
						p.chunk(b, t.ctx)
						produced += e2eChunk
					}
					b.StartTimer()
				}
				consume(e2eChunk)
			}
		})
	}
}
