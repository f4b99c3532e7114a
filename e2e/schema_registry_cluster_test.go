package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// srAvro is a distinct compact Avro schema per (worker, index): the
// registry stores compact text as given, so a read returns it unchanged.
func srAvro(w, i int) string {
	return fmt.Sprintf(`{"type":"record","name":"r%d_%d","fields":[{"name":"f","type":"string"}]}`, w, i)
}

// srWaitSchema polls /schemas/ids/id on base until it answers (a broker's
// view follows the topic: another broker's write shows after a moment),
// bounded by within, and returns the schema.
func srWaitSchema(t *testing.T, base string, id int, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s, found, err := srSchemaByID(base, id)
		if err == nil && found {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: schema id %d not readable within %v (last error %v)", base, id, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// srWriter is the id of the broker that leads _schemas-0: the registry's
// writer.
func (c *srCluster) srWriter() int32 {
	c.t.Helper()
	var leader int32 = -1
	c.waitFor(30*time.Second, "_schemas-0 has a leader", func(*kadm.Client) bool {
		pd, ok := c.partition("_schemas", 0)
		if ok && pd.Leader >= 0 {
			leader = pd.Leader
		}
		return leader >= 0
	})
	return leader
}

// A three-broker cluster: schemas registered through broker 1 are read
// back at once through broker 1 (read-your-writes) and from brokers 2 and
// 3 (their views follow the topic). Then the writer, the leader of
// _schemas-0, is SIGKILLed while bounded concurrent registrations go
// through every broker: afterwards, with the killed broker restarted,
// every registration that returned an id is readable with that id, and
// the same schema, from every broker, and no two schemas share an id in
// any broker's view.
func TestSchemaRegistryClusterWriterKill(t *testing.T) {
	t.Parallel()
	c := startSRCluster(t, 3, "default.replication.factor=3", "min.insync.replicas=2")

	// Read-your-writes: a schema registered through one broker is read at
	// once, by id, as its subject's latest version and by lookup, through
	// every broker (a broker whose view has not applied it yet catches up before
	// it answers 404). Many rounds: before that catch-up, a read through
	// another broker right after the write missed about one time in ten.
	first := map[int]string{}
	for i := 0; i < 30; i++ {
		s := srAvro(0, i)
		subject := fmt.Sprintf("ryw-%d", i)
		via := int32(i%3 + 1)
		id, err := srRegister(c.urls[via], subject, s)
		if err != nil {
			t.Fatalf("register through broker %d: %v\n%s", via, err, c.logs())
		}
		// First a lookup (POST /subjects/{s}, as a serializer that does
		// not register makes) through the next broker.
		var lk struct {
			ID int `json:"id"`
		}
		next := via%3 + 1
		if st, raw, err := srCall(c.urls[next], "POST", "/subjects/"+subject, map[string]string{"schema": s}, &lk); err != nil || st != 200 || lk.ID != id {
			t.Fatalf("broker %d: lookup in %s at once: %d %s %v, want id %d", next, subject, st, raw, err, id)
		}
		for b := int32(1); b <= 3; b++ {
			got, found, err := srSchemaByID(c.urls[b], id)
			if err != nil || !found || got != s {
				t.Fatalf("broker %d does not read schema %d, registered through broker %d, at once: %q %v %v", b, id, via, got, found, err)
			}
			var v struct {
				ID int `json:"id"`
			}
			if st, raw, err := srCall(c.urls[(b%3)+1], "GET", "/subjects/"+subject+"/versions/latest", nil, &v); err != nil || st != 200 || v.ID != id {
				t.Fatalf("broker %d: latest of %s: %d %s %v, want id %d", (b%3)+1, subject, st, raw, err, id)
			}
		}
		first[id] = s
	}
	if len(first) != 30 {
		t.Fatalf("30 distinct schemas got %d ids", len(first))
	}

	writer := c.srWriter()
	t.Logf("the registry's writer is broker %d", writer)

	// Bounded concurrent registrations through every broker in turn; the
	// writer is SIGKILLed once killAfter of them have succeeded.
	const workers, perWorker, attempts, killAfter = 8, 25, 1000, 12
	type result struct {
		id     int
		schema string
		via    int32
	}
	var (
		mu        sync.Mutex
		succeeded []result
		failures  int
		killOnce  sync.Once
		killed    = make(chan struct{})
	)
	kill := func() {
		killOnce.Do(func() {
			t.Logf("SIGKILL broker %d, the writer, after %d registrations", writer, killAfter)
			c.brokers[writer].kill()
			close(killed)
		})
	}
	var wg sync.WaitGroup
	for w := 1; w <= workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				s := srAvro(w, i)
				subject := fmt.Sprintf("kill-%d-%d", w, i)
				for a := 0; a < attempts; a++ {
					via := int32((w+i+a)%3 + 1)
					id, err := srRegister(c.urls[via], subject, s)
					if err != nil {
						mu.Lock()
						failures++
						mu.Unlock()
						time.Sleep(20 * time.Millisecond)
						continue
					}
					mu.Lock()
					succeeded = append(succeeded, result{id, s, via})
					n := len(succeeded)
					mu.Unlock()
					if n == killAfter {
						kill()
					}
					break
				}
			}
		}(w)
	}
	wg.Wait()
	kill() // in case fewer than killAfter succeeded
	<-killed
	t.Logf("%d registrations returned an id, %d attempts failed", len(succeeded), failures)
	if len(succeeded) <= killAfter {
		t.Fatalf("no registration succeeded after the writer was killed (%d in all)\n%s", len(succeeded), c.logs())
	}

	// No two registrations got one id; restart the killed broker and read
	// every id back from every broker.
	byID := map[int]string{}
	for id, s := range first {
		byID[id] = s
	}
	for _, r := range succeeded {
		if prev, ok := byID[r.id]; ok && prev != r.schema {
			t.Fatalf("id %d handed out twice: %q and %q (the second through broker %d)", r.id, prev, r.schema, r.via)
		}
		byID[r.id] = r.schema
	}
	c.brokers[writer].restart()
	c.waitBrokers(3, 60*time.Second)
	waitListening(t, c.urls[writer])
	for b := int32(1); b <= 3; b++ {
		for id, s := range byID {
			if got := srWaitSchema(t, c.urls[b], id, 60*time.Second); got != s {
				t.Fatalf("broker %d: schema id %d is %q, want %q (id reused or schema lost)\n%s", b, id, got, s, c.logs())
			}
		}
	}

	// Every broker's whole view: one schema per id.
	for b := int32(1); b <= 3; b++ {
		var subjects []string
		if st, raw, err := srCall(c.urls[b], "GET", "/subjects", nil, &subjects); err != nil || st != 200 {
			t.Fatalf("broker %d: GET /subjects: %d %s %v", b, st, raw, err)
		}
		seen := map[int]string{}
		for _, s := range subjects {
			var v struct {
				ID     int    `json:"id"`
				Schema string `json:"schema"`
			}
			if st, raw, err := srCall(c.urls[b], "GET", "/subjects/"+s+"/versions/latest", nil, &v); err != nil || st != 200 {
				t.Fatalf("broker %d: latest of %s: %d %s %v", b, s, st, raw, err)
			}
			if prev, ok := seen[v.ID]; ok && prev != v.Schema {
				t.Fatalf("broker %d: id %d names two schemas: %q and %q", b, v.ID, prev, v.Schema)
			}
			seen[v.ID] = v.Schema
		}
		if len(seen) < len(byID) {
			t.Fatalf("broker %d: %d ids in its view, %d registrations returned one", b, len(seen), len(byID))
		}
	}
}
