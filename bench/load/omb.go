package load

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The OpenMessaging Benchmark's workload shape (its
// workloads/1-topic-100-partitions-1kb.yaml, scaled to a small machine):
// one topic of Partitions partitions, RecordSize-byte keyed records,
// Producers producer clients and Consumers consumer clients in one
// consumer group, all in this process. A run is a sequence of phases:
//
//	warm-up   unlimited rate for Warmup; nothing reported but its rate
//	probe     unlimited rate for Probe: the maximum rate, acked records/s
//	rate-N    N% of that maximum (Fractions) for Duration each
//
// Each phase reports the publish latency (Produce call to ack), the
// end-to-end latency (the produce time stamped in the value to its
// arrival at a consumer of the group), the produce and consume rates,
// and, given a broker pid, the broker's CPU time per GB produced. OMB
// runs each rate for 15 minutes after a 1 minute warm-up on 3-broker
// clusters; the default here is 60 s per rate on one broker.

// OMBConfig describes one OMB-shaped run. Zero values take the defaults
// documented on each field.
type OMBConfig struct {
	Brokers    []string // seed brokers; empty: localhost:9092
	Topic      string   // empty: "omb-<random>" (a fresh topic per run)
	Partitions int32    // 0: 100
	RecordSize int      // value bytes; 0: 1024
	Producers  int      // 0: 4
	Consumers  int      // 0: 4, one group
	Acks       string   // "": all
	Linger     time.Duration
	// Compression of the producers' batches: none, gzip, snappy, lz4
	// or zstd; "": none. OMB's Kafka driver (driver-kafka/kafka.yaml
	// and kafka-throughput.yaml) sets no compression.type, so its Java
	// producers send uncompressed batches; franz-go's own default,
	// snappy, would have the broker decompress every batch to validate
	// it (as Kafka's LogValidator does) and the load generator compress
	// and decompress each, and measure that instead.
	Compression string
	// TopicConfigs are the configs of the topic when it is created (nil:
	// the broker's defaults). A long run at hundreds of MB/s needs a
	// retention.bytes to fit the disk (scripts/bench-report-omb.sh).
	TopicConfigs map[string]*string

	Warmup   time.Duration // 0: 10s; < 0: none
	Probe    time.Duration // 0: 30s
	Duration time.Duration // per rate; 0: 60s

	// MaxRate skips the probe and takes this records/s as the maximum.
	MaxRate float64
	// Fractions of the maximum rate to run at; nil: 0.25, 0.5, 0.75, 1;
	// empty, not nil: none (a probe-only run, whose maximum a caller
	// then gives several brokers as MaxRate, so that they all run at the
	// same rates).
	Fractions []float64
	// Search is the number of bisection steps run after the fixed rates,
	// between the highest rate the broker kept (OMBPhase.Kept) and the
	// lowest above it that it did not: each halves the interval in which
	// the maximum sustained rate lies, so that it is measured rather than
	// read off the grid of Fractions. 0: none; none either when every
	// fixed rate was kept (the maximum then lies above the grid).
	Search int
	// SearchDuration is each search step's length; 0: Duration.
	SearchDuration time.Duration

	// BrokerPID, when > 0, is the broker process whose CPU time
	// (/proc/PID/stat utime+stime) each phase reports.
	BrokerPID int

	Progress   io.Writer // one line per phase; nil: none
	ClientOpts []kgo.Opt
}

// DefaultOMBFractions are the rates of an OMB run, as fractions of the
// maximum found by the probe.
var DefaultOMBFractions = []float64{0.25, 0.5, 0.75, 1}

func (c OMBConfig) withDefaults() (OMBConfig, error) {
	if len(c.Brokers) == 0 {
		c.Brokers = []string{"localhost:9092"}
	}
	if c.Topic == "" {
		var b [4]byte
		rand.Read(b[:])
		c.Topic = fmt.Sprintf("omb-%x", b)
	}
	if c.Partitions == 0 {
		c.Partitions = 100
	}
	if c.RecordSize == 0 {
		c.RecordSize = 1024
	}
	if c.Producers == 0 {
		c.Producers = 4
	}
	if c.Consumers == 0 {
		c.Consumers = 4
	}
	if c.Warmup == 0 {
		c.Warmup = 10 * time.Second
	}
	if c.Probe == 0 {
		c.Probe = 30 * time.Second
	}
	if c.Duration == 0 {
		c.Duration = 60 * time.Second
	}
	if c.Fractions == nil {
		c.Fractions = DefaultOMBFractions
	}
	if c.SearchDuration == 0 {
		c.SearchDuration = c.Duration
	}
	if c.Compression == "" {
		c.Compression = "none"
	}
	if _, err := CompressionCodec(c.Compression); err != nil {
		return c, fmt.Errorf("load: omb: %w", err)
	}
	switch {
	case c.Partitions < 1:
		return c, fmt.Errorf("load: omb: %d partitions", c.Partitions)
	case c.RecordSize < headerSize:
		return c, fmt.Errorf("load: omb: record size %d: at least %d bytes", c.RecordSize, headerSize)
	case c.Producers < 1 || c.Consumers < 1:
		return c, errors.New("load: omb: producers and consumers must be >= 1")
	case c.Probe < 0 || c.Duration < 0 || c.MaxRate < 0 || c.Linger < 0 || c.SearchDuration < 0:
		return c, errors.New("load: omb: negative probe, duration, rate or linger")
	case c.Search < 0 || c.Search > 10:
		return c, fmt.Errorf("load: omb: %d search steps: want 0-10", c.Search)
	case c.MaxRate > 0 && len(c.Fractions) == 0:
		return c, errors.New("load: omb: a maximum rate given and no rates to run: nothing to measure")
	}
	for _, f := range c.Fractions {
		if !(f > 0 && f <= 10) {
			return c, fmt.Errorf("load: omb: rate fraction %v: want (0, 10]", f)
		}
	}
	return c, nil
}

// ParseFractions parses rates given as percentages of the maximum,
// "25,50,75,100", into fractions; "none" is no fixed rate (an empty,
// non-nil slice: the run ends after its probe).
func ParseFractions(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "none" {
		return []float64{}, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSuffix(strings.TrimSpace(f), "%")
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0 && v <= 1000) {
			return nil, fmt.Errorf("rate %q: want a percentage in (0, 1000]", f)
		}
		out = append(out, v/100)
	}
	return out, nil
}

// OMBPhase is one phase's figures. Rates are over the phase's seconds;
// 1 MB = 10^6 bytes, 1 GB = 10^9 bytes.
type OMBPhase struct {
	Name       string  `json:"name"`
	TargetRate float64 `json:"target_rate"` // records/s; 0: unlimited
	Seconds    float64 `json:"seconds"`

	Produced    int64   `json:"produced"` // records acked in the phase
	Consumed    int64   `json:"consumed"` // records of the run read in the phase
	ProduceRate float64 `json:"produce_rate"`
	ConsumeRate float64 `json:"consume_rate"`
	ProduceMBps float64 `json:"produce_mb_per_sec"`
	ConsumeMBps float64 `json:"consume_mb_per_sec"`

	Publish *Latency `json:"publish_latency_ms"`
	E2E     *Latency `json:"e2e_latency_ms"`

	// BrokerCPU is the broker's CPU seconds in the phase, CPUPerGB those
	// per GB produced; both 0 without a broker pid. ClientCPU is this
	// process's (every producer and consumer's) CPU seconds in the
	// phase: with the clients pinned to one core, a ClientCPU near
	// Seconds says the load generator, not the broker, set the rate.
	BrokerCPU float64 `json:"broker_cpu_seconds,omitempty"`
	CPUPerGB  float64 `json:"broker_cpu_seconds_per_gb,omitempty"`
	ClientCPU float64 `json:"client_cpu_seconds,omitempty"`

	Errors int64 `json:"errors"`
}

// Kept reports whether a fixed-rate phase's acked rate came within 5% of
// its target: the broker sustained that rate. Failed records are not
// acked, so they count against it.
func (p *OMBPhase) Kept() bool {
	return p.TargetRate > 0 && p.ProduceRate >= 0.95*p.TargetRate
}

// BrokerCPUPercent and ClientCPUPercent are the broker's and the load
// generator's CPU over the phase, in percent of one core; 0 when not
// measured.
func (p *OMBPhase) BrokerCPUPercent() float64 { return pct(p.BrokerCPU, p.Seconds) }
func (p *OMBPhase) ClientCPUPercent() float64 { return pct(p.ClientCPU, p.Seconds) }

func pct(cpu, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return 100 * cpu / secs
}

// OMBResult is a whole run.
type OMBResult struct {
	Target     string `json:"target,omitempty"` // a label given by the caller
	Topic      string `json:"topic"`
	Partitions int32  `json:"partitions"`
	RecordSize int    `json:"record_size"`
	Producers  int    `json:"producers"`
	Consumers  int    `json:"consumers"`
	// Compression is the producers' codec; "" in results written before
	// the flag existed, when it was franz-go's default, snappy.
	Compression string     `json:"compression,omitempty"`
	MaxRate     float64    `json:"max_rate"` // records/s, from the probe or given
	Phases      []OMBPhase `json:"phases"`
	FirstError  string     `json:"first_error,omitempty"`
}

// ombRun is the state of a run shared by its clients.
type ombRun struct {
	cfg      OMBConfig
	base     time.Time // stamps are nanoseconds since base
	runID    uint64
	payload  []byte
	keySeq   atomic.Int64
	assigned atomic.Int64 // partitions the group's consumers hold
	acked    atomic.Int64 // records acked, whole run
	read     atomic.Int64 // the run's records consumed, whole run
	errs     atomic.Int64
	errMu    sync.Mutex
	first    error
}

func (r *ombRun) now() int64 { return int64(time.Since(r.base)) }

func (r *ombRun) fail(err error) {
	r.errs.Add(1)
	r.errMu.Lock()
	if r.first == nil {
		r.first = err
	}
	r.errMu.Unlock()
}

// counted is a histogram and counts that one client fills and the
// orchestrator takes at the end of each phase.
type counted struct {
	mu    sync.Mutex
	hist  Histogram
	n     int64
	bytes int64
}

func (c *counted) record(lat, bytes int64) {
	c.mu.Lock()
	c.hist.Record(max(lat, 0))
	c.n++
	c.bytes += bytes
	c.mu.Unlock()
}

// take merges c into h and returns and resets its counts.
func (c *counted) take(h *Histogram) (n, bytes int64) {
	c.mu.Lock()
	h.Merge(&c.hist)
	c.hist = Histogram{}
	n, bytes = c.n, c.bytes
	c.n, c.bytes = 0, 0
	c.mu.Unlock()
	return n, bytes
}

// RunOMB runs the OMB-shaped workload and returns its phases. The topic is
// created (a fresh one per run unless cfg.Topic names one). Every phase is
// bounded by its duration; acks still missing 30 s after a phase ends are
// counted as errors.
func RunOMB(ctx context.Context, cfg OMBConfig) (*OMBResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &ombRun{cfg: cfg, base: time.Now(), payload: make([]byte, cfg.RecordSize)}
	var id [8]byte
	rand.Read(id[:])
	r.runID = binary.BigEndian.Uint64(id[:])
	binary.BigEndian.PutUint64(r.payload, r.runID)
	for i := headerSize; i < len(r.payload); i++ {
		r.payload[i] = 'A' + byte(i%26) // filler, as Kafka's perf tool sends
	}
	if err := r.createTopic(ctx); err != nil {
		return nil, err
	}

	prods := make([]*kgo.Client, cfg.Producers)
	pstats := make([]*counted, cfg.Producers)
	codec, _ := CompressionCodec(cfg.Compression) // checked by withDefaults
	popts := []kgo.Opt{kgo.ProducerLinger(cfg.Linger), kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil))}
	switch strings.ToLower(cfg.Acks) {
	case "", "all", "-1":
		popts = append(popts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		popts = append(popts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("load: omb: acks %q: want 1 or all", cfg.Acks)
	}
	closeAll := func(cls []*kgo.Client) {
		for _, cl := range cls {
			if cl != nil {
				cl.Close()
			}
		}
	}
	for i := range prods {
		cl, err := kgo.NewClient(append(r.clientOpts(), popts...)...)
		if err != nil {
			closeAll(prods)
			return nil, fmt.Errorf("load: omb: %w", err)
		}
		prods[i], pstats[i] = cl, &counted{}
	}
	defer closeAll(prods)

	// Consumers join one group from the end of the (new) topic before
	// anything is produced; a record of another run is skipped.
	group := fmt.Sprintf("%s-group-%x", cfg.Topic, r.runID&0xffffff)
	cons := make([]*kgo.Client, cfg.Consumers)
	cstats := make([]*counted, cfg.Consumers)
	for i := range cons {
		cl, err := kgo.NewClient(append(r.clientOpts(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(cfg.Topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(100*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.assigned.Add(int64(len(m[cfg.Topic]))) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				r.assigned.Add(-int64(len(m[cfg.Topic])))
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				r.assigned.Add(-int64(len(m[cfg.Topic])))
			}),
		)...)
		if err != nil {
			closeAll(cons)
			return nil, fmt.Errorf("load: omb: %w", err)
		}
		cons[i], cstats[i] = cl, &counted{}
	}
	cctx, stopConsumers := context.WithCancel(ctx)
	var cwg sync.WaitGroup
	for i, cl := range cons {
		cwg.Go(func() { r.consume(cctx, cl, cstats[i]) })
	}
	defer func() {
		stopConsumers()
		cwg.Wait()
		closeAll(cons)
	}()
	// Wait, bounded, for the group to own every partition, so that the
	// first phase's records are not read late by a rebalance.
	r.waitAssigned(ctx)

	res := &OMBResult{Topic: cfg.Topic, Partitions: cfg.Partitions, RecordSize: cfg.RecordSize,
		Producers: cfg.Producers, Consumers: cfg.Consumers, Compression: cfg.Compression}
	phase := func(name string, rate float64, d time.Duration) (OMBPhase, error) {
		p := r.phase(ctx, name, rate, d, prods, pstats, cstats)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "omb %s: %.0f records/s produced (target %.0f), %.0f consumed, publish p99 %.3f ms, e2e p99 %.3f ms\n",
				p.Name, p.ProduceRate, p.TargetRate, p.ConsumeRate, p.Publish.P99, p.E2E.P99)
		}
		return p, ctx.Err()
	}
	if cfg.Warmup > 0 {
		if _, err := phase("warm-up", 0, cfg.Warmup); err != nil {
			return res, err
		}
	}
	res.MaxRate = cfg.MaxRate
	if res.MaxRate == 0 {
		p, err := phase("probe", 0, cfg.Probe)
		res.Phases = append(res.Phases, p)
		if err != nil {
			return res, err
		}
		res.MaxRate = p.ProduceRate
		if res.MaxRate <= 0 {
			return res, fmt.Errorf("load: omb: the probe acked nothing (%d errors, first: %v)", p.Errors, r.first)
		}
	}
	for _, f := range cfg.Fractions {
		p, err := phase(fmt.Sprintf("rate-%g%%", f*100), f*res.MaxRate, cfg.Duration)
		res.Phases = append(res.Phases, p)
		if err != nil {
			return res, err
		}
	}
	err = searchSustained(res, cfg.Search, func(f float64) (OMBPhase, error) {
		return phase(fmt.Sprintf("search-%.4g%%", f*100), f*res.MaxRate, cfg.SearchDuration)
	})
	if err != nil {
		return res, err
	}
	if r.first != nil {
		res.FirstError = r.first.Error()
	}
	return res, nil
}

// searchSustained appends to res up to steps phases run by run at
// fractions of res.MaxRate, bisecting the interval of searchBounds: a
// step kept raises its low end, one not kept lowers its high end.
func searchSustained(res *OMBResult, steps int, run func(fraction float64) (OMBPhase, error)) error {
	lo, hi, ok := searchBounds(res.Phases, res.MaxRate)
	for i := 0; ok && i < steps; i++ {
		mid := (lo + hi) / 2
		p, err := run(mid)
		res.Phases = append(res.Phases, p)
		if err != nil {
			return err
		}
		if p.Kept() {
			lo = mid
		} else {
			hi = mid
		}
	}
	return nil
}

// searchBounds returns the interval, as fractions of maxRate, that a
// search of the maximum sustained rate bisects: lo is the highest fixed
// rate of phases kept (0 when none was), hi the lowest rate above lo not
// kept. ok is false when there is no such hi: every rate was kept, or
// there were none.
func searchBounds(phases []OMBPhase, maxRate float64) (lo, hi float64, ok bool) {
	if maxRate <= 0 {
		return 0, 0, false
	}
	for _, p := range phases {
		if p.Kept() {
			lo = max(lo, p.TargetRate/maxRate)
		}
	}
	hi = math.Inf(1)
	for _, p := range phases {
		if f := p.TargetRate / maxRate; p.TargetRate > 0 && !p.Kept() && f > lo {
			hi = min(hi, f)
		}
	}
	return lo, hi, !math.IsInf(hi, 1)
}

func (r *ombRun) clientOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(r.cfg.Brokers...), kgo.ClientID("sluice-perf-omb")}, r.cfg.ClientOpts...)
}

func (r *ombRun) createTopic(ctx context.Context) error {
	cl, err := kgo.NewClient(r.clientOpts()...)
	if err != nil {
		return fmt.Errorf("load: omb: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(cctx, r.cfg.Partitions, -1, r.cfg.TopicConfigs, r.cfg.Topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("load: omb: create %s: %w", r.cfg.Topic, err)
	}
	if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("load: omb: create %s: %w", r.cfg.Topic, resp.Err)
	}
	return nil
}

// waitAssigned waits up to 30 s for the group's consumers to hold every
// partition between them.
func (r *ombRun) waitAssigned(ctx context.Context) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil && r.assigned.Load() < int64(r.cfg.Partitions) {
		time.Sleep(50 * time.Millisecond)
	}
}

// consume reads the group's records until ctx ends, recording the
// end-to-end latency of the run's own records.
func (r *ombRun) consume(ctx context.Context, cl *kgo.Client, st *counted) {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		now := r.now()
		fs.EachRecord(func(rec *kgo.Record) {
			if len(rec.Value) < headerSize || binary.BigEndian.Uint64(rec.Value) != r.runID {
				return
			}
			st.record(now-int64(binary.BigEndian.Uint64(rec.Value[8:])), int64(len(rec.Key)+len(rec.Value)))
			r.read.Add(1)
		})
	}
}

// phase produces at rate records/s over all producers (0: unlimited) for
// d and returns what the phase measured.
func (r *ombRun) phase(ctx context.Context, name string, rate float64, d time.Duration, prods []*kgo.Client, pstats, cstats []*counted) OMBPhase {
	var h Histogram
	for _, c := range append(append([]*counted(nil), pstats...), cstats...) {
		c.take(&h) // drop what arrived between phases
	}
	errs0 := r.errs.Load()
	cpu0, _ := procCPU(r.cfg.BrokerPID)
	self0, _ := procCPU(os.Getpid())
	start := time.Now()
	stop, cancel := context.WithDeadline(ctx, start.Add(d))
	hard, hardCancel := context.WithDeadline(ctx, start.Add(d+30*time.Second))
	defer hardCancel()
	var wg sync.WaitGroup
	for i, cl := range prods {
		wg.Go(func() { r.produce(stop, hard, cl, pstats[i], rate/float64(len(prods)), start) })
	}
	wg.Wait()
	cancel()
	// The acks of records sent before the end, bounded by the hard cap.
	for _, cl := range prods {
		if err := cl.Flush(hard); err != nil {
			r.fail(fmt.Errorf("load: omb: flush after %s: %w", name, err))
			cl.PurgeTopicsFromClient(r.cfg.Topic)
		}
	}
	elapsed := time.Since(start)
	cpu1, _ := procCPU(r.cfg.BrokerPID)
	self1, _ := procCPU(os.Getpid())
	p := OMBPhase{Name: name, TargetRate: rate, Seconds: elapsed.Seconds(), Errors: r.errs.Load() - errs0, ClientCPU: self1 - self0}
	var ph, ch Histogram
	var pb, cb int64
	for _, c := range pstats {
		n, b := c.take(&ph)
		p.Produced += n
		pb += b
	}
	for _, c := range cstats {
		n, b := c.take(&ch)
		p.Consumed += n
		cb += b
	}
	p.Publish, p.E2E = latencyOf(&ph), latencyOf(&ch)
	p.setRates(pb, cb, cpu1-cpu0)
	// The next phase starts with the consumers caught up (bounded): a
	// backlog left by the probe would count in its consume rate and CPU.
	for wait := time.Now().Add(30 * time.Second); r.read.Load() < r.acked.Load() && time.Now().Before(wait) && ctx.Err() == nil; {
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// setRates fills the rates from the phase's counts and seconds, and the
// broker CPU per GB from cpu seconds.
func (p *OMBPhase) setRates(producedBytes, consumedBytes int64, cpu float64) {
	if p.Seconds > 0 {
		p.ProduceRate = float64(p.Produced) / p.Seconds
		p.ConsumeRate = float64(p.Consumed) / p.Seconds
		p.ProduceMBps = float64(producedBytes) / 1e6 / p.Seconds
		p.ConsumeMBps = float64(consumedBytes) / 1e6 / p.Seconds
	}
	p.BrokerCPU = cpu
	if cpu > 0 && producedBytes > 0 {
		p.CPUPerGB = cpu / (float64(producedBytes) / 1e9)
	}
}

// produce sends keyed records from one client at rate records/s (0: as
// fast as the client takes them) until stop ends; hard bounds each
// record's wait for room and for its ack.
func (r *ombRun) produce(stop, hard context.Context, cl *kgo.Client, st *counted, rate float64, start time.Time) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var pool sync.Pool
	pool.New = func() any {
		return &kgo.Record{Topic: r.cfg.Topic, Key: make([]byte, 8), Value: append([]byte(nil), r.payload...)}
	}
	promise := func(rec *kgo.Record, err error) {
		if err != nil {
			if stop.Err() == nil || !errors.Is(err, context.Canceled) {
				r.fail(err)
			}
		} else {
			st.record(r.now()-int64(binary.BigEndian.Uint64(rec.Value[8:])), int64(len(rec.Key)+len(rec.Value)))
			r.acked.Add(1)
		}
		*rec = kgo.Record{Topic: r.cfg.Topic, Key: rec.Key, Value: rec.Value}
		pool.Put(rec)
	}
	for i := int64(0); stop.Err() == nil; i++ {
		if rate > 0 {
			due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-stop.Done():
					return
				}
			}
		}
		rec := pool.Get().(*kgo.Record)
		binary.BigEndian.PutUint64(rec.Value[8:], uint64(r.now()))
		binary.BigEndian.PutUint64(rec.Key, uint64(r.keySeq.Add(1)))
		// Not stop: records sent before the end still get their ack.
		cl.Produce(hard, rec, promise)
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go runs on (the kernel fixes it for user space).
const clockTicks = 100

// procCPU returns the CPU seconds (user + system) process pid has used,
// from /proc/PID/stat; 0 and no error for pid <= 0.
func procCPU(pid int) (float64, error) {
	if pid <= 0 {
		return 0, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(string(b))
}

// parseProcStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line, in seconds. The command name (field 2) is in
// parentheses and may hold spaces and parentheses: fields are counted
// after its last ')'.
func parseProcStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("load: /proc stat: no command name")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, f[11].
	if len(f) < 13 {
		return 0, fmt.Errorf("load: /proc stat: %d fields after the name", len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("load: /proc stat: %w", err)
	}
	return float64(u+s) / clockTicks, nil
}

// WriteTable writes the phases as a Markdown table.
func (res *OMBResult) WriteTable(w io.Writer) {
	comp := res.Compression
	if comp == "" {
		comp = "snappy"
	}
	fmt.Fprintf(w, "omb %s%s: %d partitions, %d B records, %d producers, %d consumers, compression %s; max rate %.0f records/s\n\n",
		res.Topic, labelSuffix(res.Target), res.Partitions, res.RecordSize, res.Producers, res.Consumers, comp, res.MaxRate)
	fmt.Fprintln(w, "| phase | target rec/s | produced rec/s | consumed rec/s | MB/s | publish p50 / p99 / p99.9 / max ms | e2e p50 / p99 / p99.9 / max ms | broker CPU s/GB | broker / client CPU % | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|---|---:|---:|---:|")
	for _, p := range res.Phases {
		target := "max"
		if p.TargetRate > 0 {
			target = fmt.Sprintf("%.0f", p.TargetRate)
		}
		cpu := "-"
		if p.CPUPerGB > 0 {
			cpu = fmt.Sprintf("%.2f", p.CPUPerGB)
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.1f | %s | %s | %s | %s | %d |\n", p.Name, target, p.ProduceRate, p.ConsumeRate,
			p.ProduceMBps, latencyCells(p.Publish), latencyCells(p.E2E), cpu, CPUPercents(&p), p.Errors)
	}
	if res.FirstError != "" {
		fmt.Fprintf(w, "\nfirst error: %s\n", res.FirstError)
	}
}

// CPUPercents is the "broker / client CPU %" cell: "-" for a side not
// measured (results written before client CPU was recorded have none).
func CPUPercents(p *OMBPhase) string {
	cell := func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", v)
	}
	return cell(p.BrokerCPUPercent()) + " / " + cell(p.ClientCPUPercent())
}

func labelSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func latencyCells(l *Latency) string {
	if l == nil || l.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f / %.2f", l.P50, l.P99, l.P999, l.Max)
}
