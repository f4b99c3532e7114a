package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
)

// A test cluster: one partition replicated on brokers 1..n, each broker
// with its own store, wired by a fake transport that answers the fetchers'
// requests from the leader's Partition through HandleReplicaFetch and
// HandleOffsetForLeaderEpoch, as the server will.

// quietLogger drops the cluster tests' logs (run with -v and change it to
// see them).
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// alterCall is one Options.AlterISR call.
type alterCall struct {
	broker int32
	st     LeaderAndIsr
}

type testCluster struct {
	t       *testing.T
	backend string
	clock   *clock

	mu    sync.Mutex
	parts map[int32]*Partition // by broker id
	logs  map[int32]*truncLog
	down  map[int32]bool // brokers whose requests fail

	alters    []alterCall
	alterErr  error // when set, AlterISR fails
	zkVersion int32

	oflePerBroker map[int32]*atomic.Int64 // OffsetForLeaderEpoch requests sent by a broker
	fetchers      map[int32]*FetcherManager
}

// truncLog records the engine Truncate calls of a log.
type truncLog struct {
	engine.Log
	mu        sync.Mutex
	truncates []int64
}

func (l *truncLog) Truncate(off int64) error {
	l.mu.Lock()
	l.truncates = append(l.truncates, off)
	l.mu.Unlock()
	return l.Log.Truncate(off)
}

func (l *truncLog) truncated() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.truncates)
}

func newTestCluster(t *testing.T, backend string) *testCluster {
	return &testCluster{t: t, backend: backend, clock: newClock(),
		parts: map[int32]*Partition{}, logs: map[int32]*truncLog{}, down: map[int32]bool{},
		oflePerBroker: map[int32]*atomic.Int64{}, fetchers: map[int32]*FetcherManager{}}
}

// epochRun is n records appended as a leader of epoch.
type epochRun struct {
	epoch int32
	n     int
}

// addBroker creates broker id's replica with a log holding runs (one batch
// of n records per run, the producer id chosen per run) and opts applied.
func (c *testCluster) addBroker(id int32, runs []epochRun, opts Options) *Partition {
	c.t.Helper()
	st := openStore(c.t, c.backend)
	l, err := st.CreateLog(testID, engine.LogConfig{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, r := range runs {
		b := batch(-1, 0, -1, r.n)
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: r.epoch}); err != nil {
			c.t.Fatal(err)
		}
	}
	tl := &truncLog{Log: l}
	opts.Topic, opts.Partition, opts.BrokerID = testID.Topic, testID.Partition, id
	if opts.Now == nil {
		opts.Now = c.clock.Now
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger
	}
	if opts.AlterISR == nil {
		opts.AlterISR = func(ctx context.Context, topic string, partition int32, s LeaderAndIsr) (int32, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.alters = append(c.alters, alterCall{broker: id, st: s})
			if c.alterErr != nil {
				return 0, c.alterErr
			}
			if s.ZkVersion != c.zkVersion {
				return 0, fmt.Errorf("bad version %d, znode has %d", s.ZkVersion, c.zkVersion)
			}
			c.zkVersion++
			return c.zkVersion, nil
		}
	}
	p, err := NewPartition(tl, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { p.Close() })
	c.mu.Lock()
	c.parts[id], c.logs[id] = p, tl
	c.oflePerBroker[id] = &atomic.Int64{}
	c.mu.Unlock()
	return p
}

func (c *testCluster) part(id int32) *Partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parts[id]
}

// state is the controller's state for leader at epoch with isr.
func (c *testCluster) state(leader, epoch int32, isr ...int32) LeaderAndIsr {
	c.mu.Lock()
	defer c.mu.Unlock()
	var replicas []int32
	for id := range c.parts {
		replicas = append(replicas, id)
	}
	slices.Sort(replicas)
	return LeaderAndIsr{Leader: leader, LeaderEpoch: epoch, ISR: isr, Replicas: replicas, ZkVersion: c.zkVersion}
}

// elect makes leader lead epoch with isr and every other broker follow it,
// each through its fetcher manager.
func (c *testCluster) elect(leader, epoch int32, isr ...int32) {
	c.t.Helper()
	st := c.state(leader, epoch, isr...)
	c.fetcher(leader).Remove(c.part(leader))
	if err := c.part(leader).MakeLeader(st); err != nil {
		c.t.Fatal(err)
	}
	for id, p := range c.snapshot() {
		if id == leader {
			continue
		}
		c.follow(id, p, st)
	}
}

// follow makes broker id follow st.Leader.
func (c *testCluster) follow(id int32, p *Partition, st LeaderAndIsr) {
	c.t.Helper()
	if err := p.MakeFollower(st); err != nil {
		c.t.Fatal(err)
	}
	c.fetcher(id).Add(p, st.Leader, st.LeaderEpoch)
}

func (c *testCluster) snapshot() map[int32]*Partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps(c.parts)
}

func maps(m map[int32]*Partition) map[int32]*Partition {
	out := make(map[int32]*Partition, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// fetcher returns broker id's fetcher manager, creating it.
func (c *testCluster) fetcher(id int32) *FetcherManager {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.fetchers[id]
	if m == nil {
		m = NewFetcherManager(FetcherOptions{
			BrokerID: id,
			Logger:   quietLogger,
			MaxWait:  20 * time.Millisecond,
			Backoff:  2 * time.Millisecond,
			Send: func(ctx context.Context, to int32, req kmsg.Request) (kmsg.Response, error) {
				return c.send(ctx, id, to, req)
			},
		})
		c.fetchers[id] = m
		c.t.Cleanup(m.Close)
	}
	return m
}

// setDown makes requests from or to broker id fail.
func (c *testCluster) setDown(id int32, down bool) {
	c.mu.Lock()
	c.down[id] = down
	c.mu.Unlock()
}

// send is the fake transport: broker from sends req to broker to.
func (c *testCluster) send(ctx context.Context, from, to int32, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	p, down := c.parts[to], c.down[from] || c.down[to]
	c.mu.Unlock()
	if down || p == nil {
		// Fail like a dead connection, without spinning the fetcher.
		<-time.After(time.Millisecond)
		return nil, fmt.Errorf("fake: broker %d unreachable from %d", to, from)
	}
	switch r := req.(type) {
	case *kmsg.OffsetForLeaderEpochRequest:
		c.oflePerBroker[from].Add(1)
		return serveOffsetForLeaderEpoch(p, r), nil
	case *kmsg.FetchRequest:
		resp := serveReplicaFetch(ctx, p, r, c.clock.Now)
		c.mu.Lock()
		down = c.down[from] || c.down[to]
		c.mu.Unlock()
		if down {
			// Cut off while the request was parked: the answer is lost.
			return nil, fmt.Errorf("fake: broker %d unreachable from %d", to, from)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("fake: unexpected %T", req)
}

// errCode is the server's mapping of replication errors.
func errCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrClosed):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code
	case errors.Is(err, engine.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	}
	return kerr.UnknownServerError.Code
}

func serveOffsetForLeaderEpoch(p *Partition, r *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			var err error
			sp.LeaderEpoch, sp.EndOffset, err = p.HandleOffsetForLeaderEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch)
			sp.ErrorCode = errCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// serveReplicaFetch answers a follower's Fetch, long-polling on Changed
// until some partition has records or MaxWait passes.
func serveReplicaFetch(ctx context.Context, p *Partition, r *kmsg.FetchRequest, now func() time.Time) *kmsg.FetchResponse {
	timer := time.NewTimer(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	defer timer.Stop()
	for {
		changed := p.Changed()
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		found := false
		for _, rt := range r.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				res, err := p.HandleReplicaFetch(r.ReplicaID, rp.CurrentLeaderEpoch, rp.FetchOffset, int(rp.PartitionMaxBytes), now())
				sp.ErrorCode = errCode(err)
				sp.HighWatermark, sp.LogStartOffset = res.HighWatermark, res.LogStartOffset
				if err != nil {
					found = true
				} else {
					b, _ := res.Records.AppendTo(nil)
					res.Records.Release()
					sp.RecordBatches = b
					found = found || len(b) > 0
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		if found {
			return resp
		}
		select {
		case <-changed:
		case <-timer.C:
			return resp
		case <-ctx.Done():
			return resp
		}
	}
}

// logBytes returns every batch of p's log, concatenated.
func logBytes(t testing.TB, p *Partition) []byte {
	var out []byte
	for _, b := range readAll(t, p) {
		out = append(out, b...)
	}
	return out
}

// waitInSync waits until every replica's log equals the leader's.
func (c *testCluster) waitInSync(leader int32) {
	c.t.Helper()
	// A follower still truncating can fail a read of its log: that is
	// not in sync yet, so the wait tries again.
	flat := func(p *Partition) ([]byte, bool) {
		bs, err := tryReadAll(p)
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out, err == nil
	}
	waitFor(c.t, "replicas to match the leader's log", func() bool {
		want, ok := flat(c.part(leader))
		if !ok {
			return false
		}
		for id, p := range c.snapshot() {
			if got, ok := flat(p); id != leader && (!ok || !bytes.Equal(got, want)) {
				return false
			}
		}
		return true
	})
}

// epochsOf returns p's leader epoch history.
func epochsOf(p *Partition) []engine.EpochEntry { return p.Log().LeaderEpochs() }
