package load

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producer is one independent client and the latency it saw.
type producer struct {
	r    *run
	cl   *kgo.Client
	pool sync.Pool // *kgo.Record with a value of RecordSize bytes, back from their promise

	// hist holds produce latencies, Produce call to ack. Only the promise
	// runs Record: kgo calls one client's promises serially.
	hist Histogram

	promise func(*kgo.Record, error) // p.onAck, bound once so Produce allocates no closure

	// With a transactional id: txn says so, and commits holds the time of
	// each commit (flush plus EndTransaction) and counts them. Only the
	// producer's send goroutine touches them.
	txn     bool
	commits Histogram
}

// newProducer returns producer i of the run.
func (r *run) newProducer(i int) (*producer, error) {
	popts, err := r.cfg.producerOpts()
	if err != nil {
		return nil, err
	}
	id := r.cfg.transactionalID(i)
	if id != "" {
		popts = append(popts, kgo.TransactionalID(id))
	}
	cl, err := kgo.NewClient(append(r.cfg.clientOpts(), popts...)...)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	p := &producer{r: r, cl: cl, txn: id != ""}
	p.pool.New = func() any {
		rec := &kgo.Record{Topic: r.cfg.Topic, Value: append([]byte(nil), r.payload...)}
		if r.cfg.Keys > 0 {
			rec.Key = make([]byte, 8)
		}
		return rec
	}
	p.promise = p.onAck
	return p, nil
}

// onAck is every record's promise.
func (p *producer) onAck(rec *kgo.Record, err error) {
	now := p.r.now()
	if err != nil {
		p.r.fail(err)
	} else {
		p.hist.Record(now - int64(binary.BigEndian.Uint64(rec.Value[8:])))
		p.r.acked.Add(1)
		p.r.ackedBytes.Add(int64(len(rec.Key) + len(rec.Value)))
		for {
			last := p.r.lastAck.Load()
			if now <= last || p.r.lastAck.CompareAndSwap(last, now) {
				break
			}
		}
	}
	*rec = kgo.Record{Topic: p.r.cfg.Topic, Key: rec.Key, Value: rec.Value}
	p.pool.Put(rec)
}

// send produces n records (0: no limit) at rate records/s (0: no limit)
// from start until stop is done, then waits for the acks until the hard
// cap. It reports whether all n were sent. A transactional producer
// commits every TransactionInterval and at the end; the interval is checked
// before each record, so with a low rate a transaction can last until the
// next record is due.
func (p *producer) send(stop context.Context, n int64, rate float64, start time.Time) bool {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var txnStart time.Time
	if p.txn {
		if err := p.cl.BeginTransaction(); err != nil {
			p.r.fail(err)
			return false
		}
		txnStart = time.Now()
	}
	var i int64
loop:
	for ; n == 0 || i < n; i++ {
		if stop.Err() != nil {
			break
		}
		if p.txn && time.Since(txnStart) >= p.r.cfg.TransactionInterval {
			if !p.commit() {
				return false
			}
			if err := p.cl.BeginTransaction(); err != nil {
				p.r.fail(err)
				return false
			}
			txnStart = time.Now()
		}
		if rate > 0 {
			due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			// A record due at or after the deadline is never sent, even
			// when its timer and the deadline's fire together and select
			// picks the timer.
			if dl, ok := stop.Deadline(); ok && !due.Before(dl) {
				break
			}
			if d := time.Until(due); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-stop.Done():
					break loop
				}
			}
		}
		rec := p.pool.Get().(*kgo.Record)
		binary.BigEndian.PutUint64(rec.Value[8:], uint64(p.r.now()))
		if k := p.r.cfg.Keys; k > 0 {
			binary.BigEndian.PutUint64(rec.Key, uint64(p.r.keySeq.Add(1)%k))
		}
		p.r.sent.Add(1)
		// The hard cap, not stop, bounds each record: records sent before
		// the duration ended still get their ack.
		p.cl.Produce(p.r.hardCtx, rec, p.promise)
	}
	if p.txn {
		return p.commit() && n > 0 && i == n
	}
	p.flush()
	return n > 0 && i == n
}

// flush waits for every buffered record's ack until the hard cap, and
// reports whether it got them.
func (p *producer) flush() bool {
	if err := p.cl.Flush(p.r.hardCtx); err != nil {
		// The hard cap: fail what is still buffered so that every
		// promise runs before the histogram is read.
		p.cl.PurgeTopicsFromClient(p.r.cfg.Topic)
		return false
	}
	return true
}

// commit flushes the open transaction and commits it, timing both. A
// failed commit counts as an error and ends the producer's run: the
// transaction's acked records are counted but were aborted.
func (p *producer) commit() bool {
	t0 := time.Now()
	if !p.flush() {
		p.r.fail(fmt.Errorf("load: transaction not flushed: %w", p.r.hardCtx.Err()))
		return false
	}
	if err := p.cl.EndTransaction(p.r.hardCtx, kgo.TryCommit); err != nil {
		p.r.fail(fmt.Errorf("load: commit: %w", err))
		return false
	}
	p.commits.Record(int64(time.Since(t0)))
	return true
}

// producers runs cfg.Producers producers over the topic until they are
// done and returns them (closed) with whether every one sent its share of
// cfg.Records.
func (r *run) producers(start time.Time) ([]*producer, bool, error) {
	ps := make([]*producer, r.cfg.Producers)
	for i := range ps {
		p, err := r.newProducer(i)
		if err != nil {
			for _, p := range ps[:i] {
				p.cl.Close()
			}
			return nil, false, err
		}
		ps[i] = p
	}
	stop := r.hardCtx
	if r.cfg.Duration > 0 {
		var cancel context.CancelFunc
		stop, cancel = context.WithDeadline(r.hardCtx, start.Add(r.cfg.Duration))
		defer cancel()
	}
	var wg sync.WaitGroup
	allSent := make([]bool, len(ps))
	for i, p := range ps {
		n := int64(0)
		if r.cfg.Records > 0 {
			n = r.cfg.Records / int64(len(ps))
			if int64(i) < r.cfg.Records%int64(len(ps)) {
				n++
			}
			if n == 0 {
				allSent[i] = true
				continue
			}
		}
		rate := r.cfg.TargetRate / float64(len(ps))
		wg.Go(func() { allSent[i] = p.send(stop, n, rate, start) })
	}
	wg.Wait()
	all := true
	for i, p := range ps {
		p.cl.Close()
		all = all && allSent[i]
	}
	return ps, all, nil
}

// produceSummary fills res with what the producers sent and how long the
// acks took.
func (r *run) produceSummary(res *Result, ps []*producer, allSent bool, start time.Time) {
	res.Producers = len(ps)
	res.TargetRate = r.cfg.TargetRate
	res.Records = r.acked.Load()
	res.Bytes = r.ackedBytes.Load()
	elapsed := time.Since(start)
	// A transactional run's records count once committed: its time runs
	// to the last commit, which is now.
	if last := r.lastAck.Load(); last > 0 && r.cfg.TransactionalID == "" {
		elapsed = r.base.Add(time.Duration(last)).Sub(start)
	}
	res.setThroughput(elapsed)
	var h Histogram
	for _, p := range ps {
		h.Merge(&p.hist)
	}
	res.ProduceLatency = latencyOf(&h)
	if r.cfg.TransactionalID != "" {
		var c Histogram
		for _, p := range ps {
			c.Merge(&p.commits)
		}
		res.Transactions = int64(c.Count())
		res.CommitLatency = latencyOf(&c)
	}
	res.StoppedBy = r.stopReason()
	if res.StoppedBy == "" {
		res.StoppedBy = "duration"
		if allSent {
			res.StoppedBy = "records"
		}
	}
}

// produce is the produce mode.
func (r *run) produce(res *Result) error {
	ends, err := r.ensureTopic()
	if err != nil {
		return err
	}
	res.Partitions = int32(len(ends))
	start := time.Now()
	stopProgress := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go r.progress(stopProgress, &bg, func() (int64, int64, int64) {
		acked := r.acked.Load()
		return acked, r.ackedBytes.Load(), r.sent.Load() - acked - r.errs.Load()
	})
	ps, allSent, err := r.producers(start)
	close(stopProgress)
	bg.Wait()
	if err != nil {
		return err
	}
	r.produceSummary(res, ps, allSent, start)
	return nil
}
