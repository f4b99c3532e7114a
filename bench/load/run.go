package load

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// idleAfterProduce is how long an e2e consumer waits for a record it has
// not seen yet once producing has stopped (acks=0 can lose records).
const idleAfterProduce = 5 * time.Second

// How long listOffsets waits for a topic's partitions to be served: one
// just created gets createdTopicPatience (a cluster takes a moment after
// CreateTopics to elect leaders), one that must exist already (consume)
// existingTopicPatience, so that a missing topic fails quickly.
const (
	createdTopicPatience  = 30 * time.Second
	existingTopicPatience = 2 * time.Second
)

// Run runs one load test as cfg says and returns its summary. It returns an
// error only when the run could not start (bad config, topic missing for
// consume, broker unreachable within the hard cap); failed records are
// counted in Result.Errors. Canceling ctx stops the run early and still
// returns what was measured, with StoppedBy "canceled".
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, base: time.Now()}
	var id [8]byte
	rand.Read(id[:])
	r.runID = binary.BigEndian.Uint64(id[:])
	r.payload = make([]byte, cfg.RecordSize)
	binary.BigEndian.PutUint64(r.payload, r.runID)
	// Random uppercase letters, as Kafka's perf tool sends: they compress
	// about as well as text, not to nothing.
	rng := mrand.New(mrand.NewPCG(r.runID, 0))
	for i := headerSize; i < len(r.payload); i++ {
		r.payload[i] = 'A' + byte(rng.IntN(26))
	}
	// The hard cap covers setup too, so an unreachable broker cannot hang
	// the run.
	hardCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	r.userCtx, r.hardCtx = ctx, hardCtx

	res := &Result{Mode: cfg.Mode, Topic: cfg.Topic, Partitions: cfg.Partitions, RecordSize: cfg.RecordSize}
	switch cfg.Mode {
	case ModeProduce:
		err = r.produce(res)
	case ModeConsume:
		err = r.consume(res)
	case ModeE2E:
		err = r.e2e(res)
	}
	if err != nil {
		return nil, err
	}
	res.Errors = r.errs.Load()
	if p := r.firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	return res, nil
}

// run is the state one Run shares between its goroutines.
type run struct {
	cfg     Config
	base    time.Time // origin of the produce times stamped into values
	runID   uint64
	payload []byte       // value template: run id, zero time, filler
	keySeq  atomic.Int64 // the next record's key, modulo Config.Keys

	userCtx context.Context // canceled: the user stopped the run
	hardCtx context.Context // userCtx plus the hard cap

	sent       atomic.Int64 // records handed to Produce
	acked      atomic.Int64 // records acknowledged without error
	ackedBytes atomic.Int64
	lastAck    atomic.Int64 // time of the latest ack, ns since base
	errs       atomic.Int64
	firstErr   atomic.Pointer[string]
}

func (r *run) now() int64 { return int64(time.Since(r.base)) }

func (r *run) fail(err error) {
	r.errs.Add(1)
	msg := err.Error()
	r.firstErr.CompareAndSwap(nil, &msg)
}

// stopReason names why a run ended early, or "" if it did not.
func (r *run) stopReason() string {
	switch {
	case r.userCtx.Err() != nil:
		return "canceled"
	case r.hardCtx.Err() != nil:
		return "timeout"
	}
	return ""
}

// admin returns an admin client on a client of its own; close the kgo client.
func (r *run) admin() (*kgo.Client, *kadm.Client, error) {
	cl, err := kgo.NewClient(r.cfg.clientOpts()...)
	if err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	return cl, kadm.NewClient(cl), nil
}

// ensureTopic creates the topic with cfg.Partitions and
// cfg.ReplicationFactor unless it exists, and returns its end offsets.
func (r *run) ensureTopic() (map[int32]int64, error) {
	cl, adm, err := r.admin()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rf := r.cfg.ReplicationFactor
	if rf == 0 {
		rf = -1 // the broker's default.replication.factor
	}
	// Only a missing topic is created: a principal allowed to write an
	// existing topic may lack Create on it, and the broker checks Create
	// before it says whether the topic exists (as Kafka does).
	if td, err := adm.ListTopics(r.hardCtx, r.cfg.Topic); err == nil {
		if d, ok := td[r.cfg.Topic]; ok && d.Err == nil {
			return r.listOffsets(adm, false, false, createdTopicPatience)
		}
	}
	_, err = adm.CreateTopic(r.hardCtx, r.cfg.Partitions, rf, r.cfg.TopicConfigs, r.cfg.Topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return nil, fmt.Errorf("load: create topic %s: %w", r.cfg.Topic, err)
	}
	return r.listOffsets(adm, false, false, createdTopicPatience)
}

// listOffsets returns the topic's start or end offset of every partition;
// the end is the high watermark, or with committed the last stable offset.
func (r *run) listOffsets(adm *kadm.Client, start, committed bool, patience time.Duration) (map[int32]int64, error) {
	list := adm.ListEndOffsets
	switch {
	case start:
		list = adm.ListStartOffsets
	case committed:
		list = adm.ListCommittedOffsets
	}
	var listed kadm.ListedOffsets
	// A topic just created may not be known to every part of the broker
	// yet (in a cluster, not before the controller has elected its leaders
	// and told the brokers): retry for up to patience while its
	// partitions are unknown or leaderless.
	giveUp := time.Now().Add(patience)
	for {
		var err error
		listed, err = list(r.hardCtx, r.cfg.Topic)
		if err == nil {
			err = listed.Error()
		}
		if err == nil && len(listed[r.cfg.Topic]) > 0 {
			break
		}
		if err == nil {
			err = kerr.UnknownTopicOrPartition
		}
		if time.Now().After(giveUp) || !errors.Is(err, kerr.UnknownTopicOrPartition) && !errors.Is(err, kerr.LeaderNotAvailable) {
			return nil, fmt.Errorf("load: list offsets of %s: %w", r.cfg.Topic, err)
		}
		select {
		case <-r.hardCtx.Done():
			return nil, fmt.Errorf("load: list offsets of %s: %w", r.cfg.Topic, r.hardCtx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	out := make(map[int32]int64, len(listed[r.cfg.Topic]))
	for p, o := range listed[r.cfg.Topic] {
		out[p] = o.Offset
	}
	return out, nil
}

// progress prints a line every interval until stop is closed; sample
// returns the running totals and what is in flight.
func (r *run) progress(stop <-chan struct{}, done *sync.WaitGroup, sample func() (records, bytes, inFlight int64)) {
	defer done.Done()
	w := r.cfg.Progress
	if w == nil {
		return
	}
	t := time.NewTicker(r.cfg.ProgressInterval)
	defer t.Stop()
	start := time.Now()
	last := start
	var lastRecs, lastBytes int64
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			recs, bytes, inFlight := sample()
			secs := now.Sub(last).Seconds()
			fmt.Fprintf(w, "%s %s: %6.1fs %11.1f records/s %9.2f MB/s, in flight %d, %d records total\n",
				r.cfg.Mode, r.cfg.Topic, now.Sub(start).Seconds(), float64(recs-lastRecs)/secs,
				float64(bytes-lastBytes)/1e6/secs, inFlight, recs)
			last, lastRecs, lastBytes = now, recs, bytes
		}
	}
}
