package load

import (
	"fmt"
	"io"
	"time"
)

// Result is the summary of one run. Throughput is over Seconds, the time
// from the first record sent (consume: the run's start) to the last ack
// (consume: the last record read). 1 MB = 10^6 bytes.
type Result struct {
	Mode       Mode    `json:"mode"`
	Topic      string  `json:"topic"`
	Partitions int32   `json:"partitions"`
	RecordSize int     `json:"record_size"`
	Producers  int     `json:"producers,omitempty"`
	TargetRate float64 `json:"target_rate,omitempty"` // records/s; 0: unlimited

	// Records and Bytes are what was produced and acknowledged (produce,
	// e2e) or read (consume); bytes count keys and values.
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`

	// Consumed is, for e2e, how many of the run's own records the
	// consumer read.
	Consumed int64 `json:"consumed,omitempty"`

	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`

	// StoppedBy says what ended the run: "records", "duration", "end" (the
	// high watermarks at start, consume), "timeout" (the hard cap), "idle"
	// (e2e: the consumer saw nothing new for 5s after producing stopped,
	// short of the acked count) or "canceled". An e2e run that ends with
	// "records" or "duration" has also consumed every acked record.
	StoppedBy string `json:"stopped_by"`

	// Transactions is how many transactions the producers committed
	// (with a transactional id); CommitLatency is the time of each commit,
	// from the flush of its last records to EndTransaction's answer.
	Transactions  int64    `json:"transactions,omitempty"`
	CommitLatency *Latency `json:"commit_latency_ms,omitempty"`

	ProduceLatency *Latency `json:"produce_latency_ms,omitempty"`
	E2ELatency     *Latency `json:"e2e_latency_ms,omitempty"`
}

// Latency is a latency distribution in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

func latencyOf(h *Histogram) *Latency {
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	return &Latency{
		Count: int64(h.Count()),
		Min:   ms(h.Min()),
		Mean:  h.Mean() / 1e6,
		P50:   ms(h.Quantile(0.50)),
		P99:   ms(h.Quantile(0.99)),
		P999:  ms(h.Quantile(0.999)),
		Max:   ms(h.Max()),
	}
}

// setThroughput fills Seconds and the rates from the elapsed time.
func (r *Result) setThroughput(elapsed time.Duration) {
	r.Seconds = elapsed.Seconds()
	if r.Seconds > 0 {
		r.RecordsPerSec = float64(r.Records) / r.Seconds
		r.MBPerSec = float64(r.Bytes) / 1e6 / r.Seconds
	}
}

// WriteText writes r as the few lines kafka-*-perf-test users expect.
func (r *Result) WriteText(w io.Writer) {
	verb := "sent"
	if r.Mode == ModeConsume {
		verb = "read"
	}
	fmt.Fprintf(w, "%s %s: %d records %s in %.2fs, %.1f records/s (%.2f MB/s), stopped by %s\n",
		r.Mode, r.Topic, r.Records, verb, r.Seconds, r.RecordsPerSec, r.MBPerSec, r.StoppedBy)
	if r.Mode == ModeE2E {
		fmt.Fprintf(w, "e2e: %d of the run's records consumed\n", r.Consumed)
	}
	if r.Transactions > 0 {
		fmt.Fprintf(w, "transactions: %d committed\n", r.Transactions)
	}
	if r.Errors > 0 {
		fmt.Fprintf(w, "errors: %d, first: %s\n", r.Errors, r.FirstError)
	}
	for _, l := range []struct {
		name string
		lat  *Latency
	}{{"produce latency", r.ProduceLatency}, {"commit latency", r.CommitLatency}, {"end-to-end latency", r.E2ELatency}} {
		if l.lat == nil || l.lat.Count == 0 {
			continue
		}
		fmt.Fprintf(w, "%s ms: p50 %.3f, p99 %.3f, p99.9 %.3f, max %.3f (mean %.3f, %d samples)\n",
			l.name, l.lat.P50, l.lat.P99, l.lat.P999, l.lat.Max, l.lat.Mean, l.lat.Count)
	}
}
