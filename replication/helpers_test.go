package replication

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/record"
	_ "github.com/sluice/sluice/segment"
)

// backends are the storage backends every test runs over.
var backends = []string{"memory", "segment"}

// forEachBackend runs body once per backend as a subtest.
func forEachBackend(t *testing.T, body func(t *testing.T, backend string)) {
	for _, name := range backends {
		t.Run("backend="+name, func(t *testing.T) { body(t, name) })
	}
}

var testID = engine.PartitionID{Topic: "t", Partition: 0}

// openStore opens a store of backend in a temp dir, closed at cleanup.
func openStore(t testing.TB, backend string) engine.Store {
	t.Helper()
	st, err := engine.Open(backend, engine.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newPartition creates the test log in st and a partition over it, wrapped
// in a countingLog; the partition is closed at cleanup.
func newPartition(t testing.TB, st engine.Store, cfg engine.LogConfig, opts Options) (*Partition, *countingLog) {
	t.Helper()
	l, err := st.CreateLog(testID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingLog{Log: l}
	p, err := NewPartition(cl, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, cl
}

// countingLog wraps an engine.Log, counting Append and Flush calls and
// letting a test hold an append (gate) or look around inside it (during).
type countingLog struct {
	engine.Log
	appends, flushes atomic.Int64

	mu      sync.Mutex
	gate    chan struct{} // when set, the next Append blocks until it is closed
	during  func()        // when set, runs after the inner Append succeeded
	onFlush func()
	panics  int // the next panics Appends panic (a bug in a backend)
}

func (c *countingLog) Append(b []byte, o engine.AppendOptions) (engine.AppendInfo, error) {
	c.appends.Add(1)
	c.mu.Lock()
	gate, during := c.gate, c.during
	c.gate = nil
	boom := c.panics > 0
	if boom {
		c.panics--
	}
	c.mu.Unlock()
	if boom {
		panic("countingLog: injected panic")
	}
	if gate != nil {
		<-gate
	}
	info, err := c.Log.Append(b, o)
	if err == nil && during != nil {
		during()
	}
	return info, err
}

func (c *countingLog) Flush() error {
	c.flushes.Add(1)
	c.mu.Lock()
	f := c.onFlush
	c.mu.Unlock()
	if f != nil {
		f()
	}
	return c.Log.Flush()
}

// batch builds one uncompressed batch of n records.
func batch(pid int64, epoch int16, seq int32, n int) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: []byte("v"), Timestamp: 1000 + int64(i)}
	}
	return record.AppendBatch(nil, record.BatchOptions{
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
	}, recs)
}

// setSequence rewrites a built batch's baseSequence and CRC (benchmarks
// reuse one buffer).
func setSequence(b []byte, seq int32) {
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], record.Batch(b).ComputeCRC())
}

// queued returns how many requests wait for the next round.
func (p *Partition) queued() int {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if p.q == nil {
		return 0
	}
	return len(p.q.queue)
}

// readAll returns every batch of the log (all of it, below the HW or not).
func readAll(t testing.TB, p *Partition) []record.Batch {
	t.Helper()
	out, err := tryReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryReadAll is readAll returning its error: a log being truncated while it
// is read (a follower converging) can fail a read, which a wait retries.
func tryReadAll(p *Partition) ([]record.Batch, error) {
	var out []record.Batch
	for off, i := p.LogStartOffset(), 0; off < p.LogEndOffset() && i < 1_000_000; i++ {
		sl, err := p.ReadReplica(off, 1<<20)
		if err != nil {
			return nil, err
		}
		buf, err := sl.AppendTo(nil)
		sl.Release()
		if err != nil {
			return nil, err
		}
		if len(buf) == 0 {
			return nil, fmt.Errorf("empty read at %d below end %d", off, p.LogEndOffset())
		}
		for pos := 0; pos < len(buf); {
			n, err := record.Validate(buf[pos:])
			if err != nil {
				return nil, fmt.Errorf("batch at %d: %v", pos, err)
			}
			b := record.Batch(buf[pos : pos+n])
			pos += n
			if b.NextOffset() <= off {
				continue
			}
			out = append(out, b)
			off = b.NextOffset()
		}
	}
	return out, nil
}

// recordBatch views a built batch.
func recordBatch(b []byte) record.Batch { return record.Batch(b) }
