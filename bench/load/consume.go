package load

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consumer reads the topic from given offsets on a client of its own,
// without a group.
type consumer struct {
	r  *run
	cl *kgo.Client
}

func (r *run) newConsumer(from map[int32]int64) (*consumer, error) {
	offsets := make(map[int32]kgo.Offset, len(from))
	for p, o := range from {
		offsets[p] = kgo.NewOffset().At(o)
	}
	// Control records (transaction markers) are kept so that a partition
	// whose last offset is a marker is seen to reach its end; poll's
	// callers skip them.
	cl, err := kgo.NewClient(append(r.cfg.clientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.cfg.Topic: offsets}),
		kgo.FetchIsolationLevel(r.cfg.isolation()), kgo.KeepControlRecords())...)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	return &consumer{r: r, cl: cl}, nil
}

// poll runs each on every record polled until ctx is done or each returns
// false. Fetch errors other than ctx's are counted; kgo retries them.
func (c *consumer) poll(ctx context.Context, each func(*kgo.Record) bool) {
	for ctx.Err() == nil {
		fetches := c.cl.PollFetches(ctx)
		if fetches.IsClientClosed() {
			return
		}
		fetches.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				c.r.fail(err)
			}
		})
		for it := fetches.RecordIter(); !it.Done(); {
			if !each(it.Next()) {
				return
			}
		}
	}
}

// consume is the consume mode: from the log start offsets up to the high
// watermarks found at start (read_committed: the last stable offsets), or
// until cfg.Records have been read.
func (r *run) consume(res *Result) error {
	admCl, adm, err := r.admin()
	if err != nil {
		return err
	}
	starts, err := r.listOffsets(adm, true, false, existingTopicPatience)
	var ends map[int32]int64
	if err == nil {
		ends, err = r.listOffsets(adm, false, r.cfg.Isolation == "read_committed", existingTopicPatience)
	}
	admCl.Close()
	if err != nil {
		return err
	}
	res.Partitions = int32(len(ends))

	// remaining[p] is how far partition p still has to go; only used when
	// bounded by the high watermarks (Records == 0).
	remaining := make(map[int32]int64, len(ends))
	for p, end := range ends {
		if end > starts[p] {
			remaining[p] = end
		}
	}
	start := time.Now()
	if r.cfg.Records == 0 && len(remaining) == 0 {
		res.StoppedBy = "end"
		return nil
	}
	c, err := r.newConsumer(starts)
	if err != nil {
		return err
	}
	defer c.cl.Close()
	stop := r.hardCtx
	if r.cfg.Duration > 0 {
		var cancel context.CancelFunc
		stop, cancel = context.WithDeadline(r.hardCtx, start.Add(r.cfg.Duration))
		defer cancel()
	}

	var mu sync.Mutex // guards the counts the progress goroutine samples
	var records, bytes int64
	last := start
	stopProgress := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go r.progress(stopProgress, &bg, func() (int64, int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		return records, bytes, 0
	})
	stoppedBy := ""
	c.poll(stop, func(rec *kgo.Record) bool {
		if r.cfg.Records == 0 {
			end, ok := remaining[rec.Partition]
			if !ok || rec.Offset >= end {
				return true // past the high watermark at start
			}
			if rec.Offset+1 >= end {
				delete(remaining, rec.Partition)
			}
		}
		if rec.Attrs.IsControl() {
			if r.cfg.Records == 0 && len(remaining) == 0 {
				stoppedBy = "end"
				return false
			}
			return true
		}
		mu.Lock()
		records++
		bytes += int64(len(rec.Key) + len(rec.Value))
		mu.Unlock()
		last = time.Now()
		switch {
		case r.cfg.Records > 0 && records >= r.cfg.Records:
			stoppedBy = "records"
		case r.cfg.Records == 0 && len(remaining) == 0:
			stoppedBy = "end"
		default:
			return true
		}
		return false
	})
	close(stopProgress)
	bg.Wait()
	if stoppedBy == "" {
		if stoppedBy = r.stopReason(); stoppedBy == "" {
			stoppedBy = "duration"
		}
	}
	res.StoppedBy = stoppedBy
	res.Records, res.Bytes = records, bytes
	res.setThroughput(last.Sub(start))
	return nil
}

// e2e is the e2e mode: producers at the target rate, and a consumer from
// the end offsets at start that measures each of the run's records from
// the produce time in its value to its arrival.
func (r *run) e2e(res *Result) error {
	ends, err := r.ensureTopic()
	if err != nil {
		return err
	}
	res.Partitions = int32(len(ends))
	c, err := r.newConsumer(ends)
	if err != nil {
		return err
	}
	defer c.cl.Close()

	// consumed is written by the consumer goroutine only; the others read it.
	var consumed atomic.Int64
	var hist Histogram // the consumer goroutine's until it is done
	consCtx, stopConsumer := context.WithCancel(r.hardCtx)
	defer stopConsumer()
	consDone := make(chan struct{})
	go func() {
		defer close(consDone)
		c.poll(consCtx, func(rec *kgo.Record) bool {
			if rec.Attrs.IsControl() || len(rec.Value) < headerSize || binary.BigEndian.Uint64(rec.Value) != r.runID {
				return true // another run's record
			}
			hist.Record(r.now() - int64(binary.BigEndian.Uint64(rec.Value[8:])))
			consumed.Add(1)
			return true
		})
	}()

	start := time.Now()
	stopProgress := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go r.progress(stopProgress, &bg, func() (int64, int64, int64) {
		acked := r.acked.Load()
		return acked, r.ackedBytes.Load(), r.sent.Load() - r.errs.Load() - consumed.Load()
	})
	ps, allSent, err := r.producers(start)
	if err != nil {
		close(stopProgress)
		bg.Wait()
		return err
	}

	// Drain: wait until the consumer has every acked record, or has seen
	// nothing new for idleAfterProduce, or the hard cap.
	drain := "drained"
	tick := time.NewTicker(10 * time.Millisecond)
	lastCount, lastChange := consumed.Load(), time.Now()
	for consumed.Load() < r.acked.Load() {
		if n := consumed.Load(); n != lastCount {
			lastCount, lastChange = n, time.Now()
		} else if time.Since(lastChange) > idleAfterProduce {
			drain = "idle"
			break
		}
		select {
		case <-r.hardCtx.Done():
		case <-tick.C:
			continue
		}
		break
	}
	tick.Stop()
	stopConsumer()
	<-consDone
	close(stopProgress)
	bg.Wait()

	r.produceSummary(res, ps, allSent, start)
	if res.StoppedBy != "canceled" && res.StoppedBy != "timeout" {
		if reason := r.stopReason(); reason != "" {
			res.StoppedBy = reason
		} else if drain == "idle" {
			res.StoppedBy = drain
		}
	}
	res.Consumed = consumed.Load()
	res.E2ELatency = latencyOf(&hist)
	return nil
}
