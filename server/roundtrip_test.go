package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
)

// forEachBackend runs fn once per registered storage backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, backend string)) {
	for _, be := range brokertest.Backends() {
		t.Run("backend="+be, func(t *testing.T) { fn(t, be) })
	}
}

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func createTopic(t testing.TB, adm *kadm.Client, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
}

func TestSmokeRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be string) {
		b := brokertest.Start(t, be)
		cl := newClient(t, b.Addr())
		adm := kadm.NewClient(cl)
		createTopic(t, adm, "smoke", 3, nil)
		ctx := testCtx(t, 30*time.Second)
		const n = 1000
		for i := 0; i < n; i++ {
			cl.Produce(ctx, &kgo.Record{Topic: "smoke", Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprint(i))}, func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cons := newClient(t, b.Addr(), kgo.ConsumeTopics("smoke"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := 0
		for got < n {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("timed out after %d records", got)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s-%d: %v", topic, p, err) })
			got += fs.NumRecords()
		}
		if got != n {
			t.Fatalf("got %d records, want %d", got, n)
		}
	})
}
