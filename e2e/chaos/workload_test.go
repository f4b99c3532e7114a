package chaos

// The workload and the checker. One idempotent franz-go producer per
// partition (acks=all) writes sequence numbers 0, 1, 2, ... as values,
// keeping at most maxInflight records outstanding; it notes every
// acknowledgement with its time. At the end a fresh consumer reads every
// partition from its start to its high watermark, and the checker compares
// what it read with what was acknowledged.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	partitions  = 3
	maxInflight = 20
	// produceEvery paces each partition's producer: up to 100 records a
	// second each.
	produceEvery = 10 * time.Millisecond
)

// producerOpts are the client settings of the producers, chosen so that a
// client notices a silent broker within seconds (Kafka's Java client
// waits 30 s, request.timeout.ms): the broker waits up to 5 s for the ISR
// (acks=all), the client up to 2 s more for the answer and up to 2 s for a
// new connection (nsDialer's timeout; franz-go keeps a partition's retried batch on its old
// broker while it redials it, so the dial timeout adds to a failover), and
// metadata is refreshed at most every 500 ms when a leader looks wrong.
func producerOpts(topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.MetadataMinAge(500 * time.Millisecond),
		kgo.MetadataMaxAge(5 * time.Second),
		kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
}

// clientLog is, with SLUICE_CHAOS_CLIENT_LOG=1, a franz-go logger at info
// level on stderr (what the clients saw, for a look at a slow recovery).
func clientLog() []kgo.Opt {
	if os.Getenv("SLUICE_CHAOS_CLIENT_LOG") != "1" {
		return nil
	}
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(os.Stderr, clientLogLevel(), func() string {
		return time.Now().Format("15:04:05.000 ")
	}))}
}

// partLog is one partition's producer record.
type partLog struct {
	mu       sync.Mutex
	attempts int64
	acked    map[int64]int64 // seq -> offset, for acknowledged records
	ackTimes []time.Time     // in callback order
	errs     map[string]int
}

// workload is the producers of one scenario.
type workload struct {
	topic  string
	parts  [partitions]*partLog
	stop   chan struct{}
	wg     sync.WaitGroup
	cls    []*kgo.Client
	closed atomic.Bool
}

// startWorkload starts one producer per partition.
func startWorkload(c *cluster, topic string) *workload {
	w := &workload{topic: topic, stop: make(chan struct{})}
	for p := int32(0); p < partitions; p++ {
		pl := &partLog{acked: map[int64]int64{}, errs: map[string]int{}}
		w.parts[p] = pl
		cl := c.client(append(producerOpts(topic), clientLog()...)...)
		w.cls = append(w.cls, cl)
		w.wg.Add(1)
		go w.produce(cl, p, pl)
	}
	return w
}

func (w *workload) produce(cl *kgo.Client, p int32, pl *partLog) {
	defer w.wg.Done()
	sem := make(chan struct{}, maxInflight)
	tick := time.NewTicker(produceEvery)
	defer tick.Stop()
	for seq := int64(0); ; seq++ {
		select {
		case <-w.stop:
			return
		case sem <- struct{}{}:
		}
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		pl.mu.Lock()
		pl.attempts++
		pl.mu.Unlock()
		r := &kgo.Record{Partition: p, Value: []byte(strconv.FormatInt(seq, 10))}
		cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			now := time.Now()
			pl.mu.Lock()
			if err == nil {
				pl.acked[seq] = r.Offset
				pl.ackTimes = append(pl.ackTimes, now)
			} else {
				pl.errs[err.Error()]++
			}
			pl.mu.Unlock()
			<-sem
		})
	}
}

// ackedSince reports whether every partition has an acknowledgement at or
// after t.
func (w *workload) ackedSince(t time.Time) bool {
	for _, pl := range w.parts {
		pl.mu.Lock()
		n := len(pl.ackTimes)
		ok := n > 0 && !pl.ackTimes[n-1].Before(t)
		pl.mu.Unlock()
		if !ok {
			return false
		}
	}
	return true
}

// finish stops producing, waits up to flushWithin for the records still
// outstanding (those not acknowledged by then are failed by Close and
// count as not acknowledged) and closes the producers.
func (w *workload) finish(flushWithin time.Duration) {
	if w.closed.Swap(true) {
		return
	}
	close(w.stop)
	w.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), flushWithin)
	defer cancel()
	var fw sync.WaitGroup
	for _, cl := range w.cls {
		fw.Add(1)
		go func() { defer fw.Done(); cl.Flush(ctx) }()
	}
	fw.Wait()
	for _, cl := range w.cls {
		cl.Close()
	}
}

// result is one scenario's outcome.
type result struct {
	scenario     string
	attempted    int64
	acked        int64
	lost         int64 // acknowledged, not read back
	duplicated   int64 // read back more than once
	reordered    int64 // read back after a later record of the same producer
	unacked      int64 // not acknowledged but read back (allowed)
	gapDuring    time.Duration
	gapAfter     time.Duration
	errs         map[string]int
	lostExamples []string
	perPartition []string // each partition's longest gaps during/after
}

// check reads every partition back and compares it with the workload's
// acknowledgements. window is the fault's start and end: the longest time
// without an acknowledgement on any partition is measured inside
// [faultStart, faultEnd] and inside [faultEnd, stopped].
func (w *workload) check(c *cluster, name string, faultStart, faultEnd, stopped time.Time) result {
	t := c.t
	t.Helper()
	res := result{scenario: name, errs: map[string]int{}}
	var ends map[int32]int64
	deadline := time.Now().Add(60 * time.Second)
	for {
		ends = endOffsets(c, w.topic)
		if len(ends) == partitions {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no end offsets for %s\n%s", name, w.topic, c.logTails())
		}
		time.Sleep(500 * time.Millisecond)
	}
	offsets := map[int32]kgo.Offset{}
	for p := range ends {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))
	defer cons.Close()
	seen := make([]map[int64]int, partitions)
	maxSeq := make([]int64, partitions)
	next := map[int32]int64{}
	for p := range seen {
		seen[p], maxSeq[p] = map[int64]int{}, -1
	}
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: reading %s back: at %v of %v after 60s", name, w.topic, next, ends)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cons.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next[r.Partition] {
				return
			}
			next[r.Partition] = r.Offset + 1
			seq, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				t.Errorf("%s: %s-%d offset %d holds %q", name, w.topic, r.Partition, r.Offset, r.Value)
				return
			}
			p := r.Partition
			seen[p][seq]++
			switch {
			case seen[p][seq] > 1:
				res.duplicated++
			case seq < maxSeq[p]:
				res.reordered++
			}
			maxSeq[p] = max(maxSeq[p], seq)
		})
	}
	var during, after time.Duration
	for p, pl := range w.parts {
		pl.mu.Lock()
		res.attempted += pl.attempts
		res.acked += int64(len(pl.acked))
		for seq := range pl.acked {
			if seen[p][seq] == 0 {
				res.lost++
				if len(res.lostExamples) < 10 {
					res.lostExamples = append(res.lostExamples, fmt.Sprintf("p%d seq %d (acked at offset %d)", p, seq, pl.acked[seq]))
				}
			}
		}
		for seq := range seen[p] {
			if _, ok := pl.acked[seq]; !ok {
				res.unacked++
			}
		}
		for e, n := range pl.errs {
			res.errs[e] += n
		}
		times := slices.Clone(pl.ackTimes)
		pl.mu.Unlock()
		d, dAt := longestGapAt(times, faultStart, faultEnd)
		a := longestGap(times, faultEnd, stopped)
		during, after = max(during, d), max(after, a)
		res.perPartition = append(res.perPartition, fmt.Sprintf("p%d: %v from +%v/%v", p, d.Round(100*time.Millisecond),
			dAt.Sub(faultStart).Round(100*time.Millisecond), a.Round(100*time.Millisecond)))
	}
	res.gapDuring, res.gapAfter = during, after
	return res
}

// longestGap is the longest stretch of [from, to] in which no time of
// acks falls: the longest interval between consecutive acknowledgements
// (and from `from` to the first, and from the last to `to`), clipped to
// the window. It sorts acks.
func longestGap(acks []time.Time, from, to time.Time) time.Duration {
	d, _ := longestGapAt(acks, from, to)
	return d
}

// longestGapAt is longestGap with the gap's start.
func longestGapAt(acks []time.Time, from, to time.Time) (time.Duration, time.Time) {
	if !to.After(from) {
		return 0, from
	}
	slices.SortFunc(acks, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	at, prev := from, from
	for _, a := range acks {
		if a.Before(from) {
			continue
		}
		if a.After(to) {
			break
		}
		if a.Sub(prev) > longest {
			longest, at = a.Sub(prev), prev
		}
		prev = a
	}
	if to.Sub(prev) > longest {
		longest, at = to.Sub(prev), prev
	}
	return longest, at
}

// endOffsets returns topic's high watermarks, or nil when a partition's
// leader did not answer.
func endOffsets(c *cluster, topic string) map[int32]int64 {
	cl := c.client()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil
	}
	out := map[int32]int64{}
	for p, lo := range listed[topic] {
		if lo.Err != nil {
			return nil
		}
		out[p] = lo.Offset
	}
	return out
}

func clientLogLevel() kgo.LogLevel {
	if os.Getenv("SLUICE_CHAOS_CLIENT_DEBUG") == "1" {
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelInfo
}
