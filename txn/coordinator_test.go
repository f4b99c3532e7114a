package txn

import (
	"context"
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/replication"
)

// fakeMarkers is a MarkerWriter that records what it writes and fails
// partitions as told.
type fakeMarkers struct {
	mu      sync.Mutex
	written []Markers
	fail    map[TopicPartition]error
}

func (f *fakeMarkers) WriteMarkers(_ context.Context, m Markers) map[TopicPartition]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[TopicPartition]error{}
	ok := m
	ok.Partitions = nil
	for _, tp := range m.Partitions {
		if err := f.fail[tp]; err != nil {
			out[tp] = err
			continue
		}
		ok.Partitions = append(ok.Partitions, tp)
	}
	if len(ok.Partitions) > 0 {
		f.written = append(f.written, ok)
	}
	return out
}

func (f *fakeMarkers) setFail(tp TopicPartition, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = map[TopicPartition]error{}
	}
	f.fail[tp] = err
}

func (f *fakeMarkers) all() []Markers {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Markers(nil), f.written...)
}

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type harness struct {
	t       *testing.T
	c       *Coordinator
	markers *fakeMarkers
	clock   *clock
	parts   []*replication.Partition
	opts    Options
}

// newHarness returns a coordinator over n memory replicas of
// __transaction_state, all led here and loaded.
func newHarness(t *testing.T, n int32) *harness {
	t.Helper()
	st, err := engine.Open("memory", engine.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, markers: &fakeMarkers{}, clock: &clock{t: time.UnixMilli(1_700_000_000_000)}}
	for i := int32(0); i < n; i++ {
		l, err := st.CreateLog(engine.PartitionID{Topic: Topic, Partition: i}, engine.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := replication.NewPartition(l, replication.Options{Topic: Topic, Partition: i, BrokerID: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		if err := p.MakeLeader(replication.LeaderAndIsr{Leader: 1, LeaderEpoch: 4, ISR: []int32{1}, Replicas: []int32{1}}); err != nil {
			t.Fatal(err)
		}
		h.parts = append(h.parts, p)
	}
	var pidMu sync.Mutex
	next := int64(1000)
	h.opts = Options{
		NumPartitions: func() int32 { return n },
		Partition:     func(i int32) *replication.Partition { return h.parts[i] },
		Markers:       h.markers,
		AllocateProducerID: func() (int64, error) {
			pidMu.Lock()
			defer pidMu.Unlock()
			next++
			return next, nil
		},
		MaxTimeout:         time.Minute,
		IDExpiration:       time.Hour,
		AbortInterval:      -1,
		RemoveInterval:     -1,
		MarkerRetryBackoff: time.Millisecond,
		Now:                h.clock.now,
	}
	h.start()
	return h
}

// start (re)creates the coordinator over the replicas and loads them all.
func (h *harness) start() {
	h.t.Helper()
	h.c = New(h.opts)
	h.t.Cleanup(h.c.Close)
	for i := range h.parts {
		h.c.OnRole(int32(i), true)
	}
	h.waitLoaded()
}

func (h *harness) waitLoaded() {
	h.t.Helper()
	h.eventually("partitions loaded", func() bool {
		for i := range h.parts {
			if owned, loading := h.c.parts.State(int32(i)); !owned || loading {
				return false
			}
		}
		return true
	})
}

// eventually waits (without asserting on how long) until cond holds.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) waitState(id string, want State) Txn {
	h.t.Helper()
	var d Txn
	h.eventually(id+" in "+want.String(), func() bool {
		var err error
		d, err = h.c.Describe(id)
		return err == nil && d.State == want
	})
	return d
}

func (h *harness) init(id string, expected *ProducerIDEpoch) ProducerIDEpoch {
	h.t.Helper()
	pe, err := h.c.InitProducerID(context.Background(), id, 10000, expected)
	if err != nil {
		h.t.Fatalf("InitProducerID(%s): %v", id, err)
	}
	return pe
}

func (h *harness) add(id string, pe ProducerIDEpoch, tps ...TopicPartition) error {
	return h.c.AddPartitions(context.Background(), id, pe.ID, pe.Epoch, tps)
}

func (h *harness) end(id string, pe ProducerIDEpoch, commit bool) error {
	return h.c.EndTxn(context.Background(), id, pe.ID, pe.Epoch, commit)
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

var (
	a0 = TopicPartition{"a", 0}
	a1 = TopicPartition{"a", 1}
	b0 = TopicPartition{"b", 0}
)

// TestCommitAndAbort runs a transaction to a commit and one to an abort:
// the states, the markers (with the coordinator epoch), and the answers
// to retries and to ends that do not fit the state.
func TestCommitAndAbort(t *testing.T) {
	h := newHarness(t, 3)
	pe := h.init("tx", nil)
	if pe.ID != 1001 || pe.Epoch != 0 {
		t.Fatalf("init: %+v", pe)
	}
	wantErr(t, "end of no transaction", h.end("tx", pe, true), ErrInvalidTxnState)
	if err := h.add("tx", pe, a1, a0); err != nil {
		t.Fatal(err)
	}
	if err := h.add("tx", pe, b0, a0); err != nil {
		t.Fatal(err)
	}
	d, _ := h.c.Describe("tx")
	if d.State != Ongoing || !reflect.DeepEqual(d.Partitions, []TopicPartition{a0, a1, b0}) || d.StartMs != h.clock.now().UnixMilli() {
		t.Fatalf("ongoing: %+v", d)
	}
	if err := h.end("tx", pe, true); err != nil {
		t.Fatal(err)
	}
	h.waitState("tx", CompleteCommit)
	ms := h.markers.all()
	want := Markers{TransactionalID: "tx", ProducerID: pe.ID, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 4, Partitions: []TopicPartition{a0, a1, b0}}
	if len(ms) != 1 || !reflect.DeepEqual(ms[0], want) {
		t.Fatalf("markers %+v, want %+v", ms, want)
	}
	if err := h.end("tx", pe, true); err != nil {
		t.Fatalf("retried commit: %v", err)
	}
	wantErr(t, "abort after commit", h.end("tx", pe, false), ErrInvalidTxnState)

	h.clock.advance(time.Second)
	if err := h.add("tx", pe, a0); err != nil {
		t.Fatal(err)
	}
	if d := h.waitState("tx", Ongoing); d.StartMs != h.clock.now().UnixMilli() || len(d.Partitions) != 1 {
		t.Fatalf("second transaction: %+v", d)
	}
	if err := h.end("tx", pe, false); err != nil {
		t.Fatal(err)
	}
	h.waitState("tx", CompleteAbort)
	if ms := h.markers.all(); len(ms) != 2 || ms[1].Commit || !reflect.DeepEqual(ms[1].Partitions, []TopicPartition{a0}) {
		t.Fatalf("abort markers %+v", ms)
	}
	wantErr(t, "commit after abort", h.end("tx", pe, true), ErrInvalidTxnState)
	wantErr(t, "other producer id", h.end("tx", ProducerIDEpoch{ID: 5, Epoch: 0}, false), ErrInvalidProducerIDMapping)
	wantErr(t, "unknown id", h.end("nope", pe, false), ErrInvalidProducerIDMapping)
	wantErr(t, "add unknown id", h.add("nope", pe, a0), ErrInvalidProducerIDMapping)
}

// TestInitFencesOngoing: InitProducerId while a transaction is ongoing
// aborts it with the epoch bumped (the old producer is fenced in the
// coordinator and by the markers) and answers CONCURRENT_TRANSACTIONS; the
// retry bumps the epoch again.
func TestInitFencesOngoing(t *testing.T) {
	h := newHarness(t, 1)
	old := h.init("tx", nil)
	if err := h.add("tx", old, a0); err != nil {
		t.Fatal(err)
	}
	_, err := h.c.InitProducerID(context.Background(), "tx", 10000, nil)
	wantErr(t, "init during a transaction", err, ErrConcurrentTransactions)
	d := h.waitState("tx", CompleteAbort)
	if d.ProducerEpoch != 1 {
		t.Fatalf("fenced epoch %d, want 1", d.ProducerEpoch)
	}
	if ms := h.markers.all(); len(ms) != 1 || ms[0].Commit || ms[0].ProducerEpoch != 1 {
		t.Fatalf("markers %+v", ms)
	}
	pe := h.init("tx", nil)
	if pe.ID != old.ID || pe.Epoch != 2 {
		t.Fatalf("retry: %+v", pe)
	}
	wantErr(t, "zombie add", h.add("tx", old, a0), ErrProducerFenced)
	wantErr(t, "zombie end", h.end("tx", old, true), ErrProducerFenced)
	_, err = h.c.InitProducerID(context.Background(), "tx", 10000, &old)
	wantErr(t, "zombie re-init", err, ErrProducerFenced)
}

// TestInitKIP360: a producer naming its current id and epoch gets the
// epoch bumped; a retry of that call gets the same epoch; any other epoch
// or producer id is fenced.
func TestInitKIP360(t *testing.T) {
	h := newHarness(t, 1)
	e0 := h.init("tx", nil)
	e1 := h.init("tx", &e0)
	if e1.ID != e0.ID || e1.Epoch != 1 {
		t.Fatalf("bump: %+v", e1)
	}
	if retry := h.init("tx", &e0); retry != e1 {
		t.Fatalf("retry: %+v, want %+v", retry, e1)
	}
	for _, bad := range []ProducerIDEpoch{{e0.ID, 7}, {e0.ID + 1, 1}} {
		_, err := h.c.InitProducerID(context.Background(), "tx", 10000, &bad)
		wantErr(t, "stale producer", err, ErrProducerFenced)
	}
	// A producer id never seen with a transactional id that is new: the
	// id is taken over (epoch -1 means just created).
	pe := h.init("fresh", &ProducerIDEpoch{ID: 77, Epoch: 3})
	if pe.Epoch != 0 {
		t.Fatalf("fresh: %+v", pe)
	}
}

// TestEpochExhaustedRotates: an epoch at the limit gets a new producer id.
func TestEpochExhaustedRotates(t *testing.T) {
	h := newHarness(t, 1)
	pe := h.init("tx", nil)
	h.c.mu.Lock()
	for _, sh := range h.c.shards {
		sh.txns["tx"].cur.ProducerEpoch = math.MaxInt16 - 1
	}
	h.c.mu.Unlock()
	next := h.init("tx", nil)
	if next.ID == pe.ID || next.Epoch != 0 {
		t.Fatalf("after exhaustion: %+v (was %+v)", next, pe)
	}
}

// TestInitChecks: bad ids and timeouts.
func TestInitChecks(t *testing.T) {
	h := newHarness(t, 1)
	ctx := context.Background()
	for _, tc := range []struct {
		id      string
		timeout int32
		want    error
	}{
		{"", 1000, ErrInvalidRequest},
		{"tx", 0, ErrInvalidTimeout},
		{"tx", 60001, ErrInvalidTimeout},
	} {
		_, err := h.c.InitProducerID(ctx, tc.id, tc.timeout, nil)
		wantErr(t, tc.id, err, tc.want)
	}
	if _, err := h.c.InitProducerID(ctx, "tx", 60000, nil); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentWhileCompleting: while the markers of a transaction are
// not all written, the id answers CONCURRENT_TRANSACTIONS (or
// INVALID_TXN_STATE for the opposite end); once they are, it completes.
func TestConcurrentWhileCompleting(t *testing.T) {
	h := newHarness(t, 1)
	pe := h.init("tx", nil)
	if err := h.add("tx", pe, a0, b0); err != nil {
		t.Fatal(err)
	}
	h.markers.setFail(b0, errors.New("leader not available"))
	if err := h.end("tx", pe, true); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "add", h.add("tx", pe, a1), ErrConcurrentTransactions)
	wantErr(t, "commit again", h.end("tx", pe, true), ErrConcurrentTransactions)
	wantErr(t, "abort", h.end("tx", pe, false), ErrInvalidTxnState)
	_, err := h.c.InitProducerID(context.Background(), "tx", 10000, nil)
	wantErr(t, "init", err, ErrConcurrentTransactions)
	if d, _ := h.c.Describe("tx"); d.State != PrepareCommit {
		t.Fatalf("state %v", d.State)
	}
	h.markers.setFail(b0, nil)
	h.waitState("tx", CompleteCommit)
	var got []TopicPartition
	for _, m := range h.markers.all() {
		got = append(got, m.Partitions...)
	}
	if len(got) < 2 || got[0] != a0 || got[len(got)-1] != b0 {
		t.Fatalf("markers written to %v", got)
	}
}

// TestMarkerFencedStops: a partition refusing the marker as fenced stops
// the completion; the transaction stays prepared.
func TestMarkerFencedStops(t *testing.T) {
	h := newHarness(t, 1)
	pe := h.init("tx", nil)
	if err := h.add("tx", pe, a0); err != nil {
		t.Fatal(err)
	}
	h.markers.setFail(a0, ErrMarkerFenced)
	if err := h.end("tx", pe, false); err != nil {
		t.Fatal(err)
	}
	h.c.Close() // waits for the completion, which gave up
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	for _, sh := range h.c.shards {
		if st := sh.txns["tx"].cur.State; st != PrepareAbort {
			t.Fatalf("state %v", st)
		}
	}
}

// TestAbortTimedOut: a transaction older than its timeout is aborted with
// the epoch bumped, fencing its producer; a younger one is left alone.
func TestAbortTimedOut(t *testing.T) {
	h := newHarness(t, 1)
	ctx := context.Background()
	pe, err := h.c.InitProducerID(ctx, "slow", 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.add("slow", pe, a0); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(time.Second)
	young := h.init("young", nil) // timeout 10 s
	if err := h.add("young", young, a1); err != nil {
		t.Fatal(err)
	}
	h.c.AbortTimedOut()
	if d, _ := h.c.Describe("slow"); d.State != Ongoing {
		t.Fatalf("aborted at exactly its timeout: %+v", d)
	}
	h.clock.advance(time.Millisecond)
	h.c.AbortTimedOut()
	d := h.waitState("slow", CompleteAbort)
	if d.ProducerEpoch != pe.Epoch+1 {
		t.Fatalf("epoch %d, want %d", d.ProducerEpoch, pe.Epoch+1)
	}
	wantErr(t, "timed-out producer", h.end("slow", pe, true), ErrProducerFenced)
	if d, _ := h.c.Describe("young"); d.State != Ongoing {
		t.Fatalf("young: %+v", d)
	}
}

// TestExpire: an id idle for transactional.id.expiration.ms is forgotten,
// also by the next coordinator (a tombstone); one with a transaction, or
// used recently, is kept.
func TestExpire(t *testing.T) {
	h := newHarness(t, 2)
	h.init("idle", nil)
	busy := h.init("busy", nil)
	if err := h.add("busy", busy, a0); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(time.Hour)
	h.init("recent", nil)
	h.c.ExpireTransactionalIDs()
	wantErr(t, "idle", func() error { _, err := h.c.Describe("idle"); return err }(), ErrTransactionalIDNotFound)
	for _, id := range []string{"busy", "recent"} {
		if _, err := h.c.Describe(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	h.c.Close()
	h.start()
	wantErr(t, "idle after reload", func() error { _, err := h.c.Describe("idle"); return err }(), ErrTransactionalIDNotFound)
	if d, err := h.c.Describe("busy"); err != nil || d.State != Ongoing || d.ProducerID != busy.ID {
		t.Fatalf("busy after reload: %+v %v", d, err)
	}
	// A new InitProducerId of the expired id starts over.
	if pe := h.init("idle", nil); pe.Epoch != 0 {
		t.Fatalf("re-init: %+v", pe)
	}
}

// TestFailoverResumes: a coordinator that loads a partition finds the
// state its predecessor wrote and completes a prepared transaction by
// sending its markers again.
func TestFailoverResumes(t *testing.T) {
	h := newHarness(t, 1)
	pe := h.init("tx", nil)
	if err := h.add("tx", pe, a0, b0); err != nil {
		t.Fatal(err)
	}
	h.markers.setFail(b0, errors.New("no leader"))
	if err := h.end("tx", pe, true); err != nil {
		t.Fatal(err)
	}
	h.c.OnRole(0, false)
	wantErr(t, "after losing the partition", h.add("tx", pe, a0), ErrNotCoordinator)
	h.c.Close()

	h.markers.setFail(b0, nil)
	h.start()
	d := h.waitState("tx", CompleteCommit)
	if d.ProducerID != pe.ID || d.ProducerEpoch != pe.Epoch {
		t.Fatalf("after failover: %+v", d)
	}
	ms := h.markers.all()
	last := ms[len(ms)-1]
	if !last.Commit || last.CoordinatorEpoch != 4 || len(last.Partitions) == 0 {
		t.Fatalf("resumed markers %+v", last)
	}
	// The producer goes on with its epoch.
	if err := h.add("tx", pe, a1); err != nil {
		t.Fatal(err)
	}
}

// TestNotCoordinator: ids of partitions not led here, and no topic.
func TestNotCoordinator(t *testing.T) {
	h := newHarness(t, 1)
	h.c.OnRole(0, false)
	_, err := h.c.InitProducerID(context.Background(), "tx", 1000, nil)
	wantErr(t, "init", err, ErrNotCoordinator)
	_, err = h.c.Describe("tx")
	wantErr(t, "describe", err, ErrNotCoordinator)
}

// TestList: filters by state, producer id and duration.
func TestList(t *testing.T) {
	h := newHarness(t, 3)
	a := h.init("a", nil)
	b := h.init("b", nil)
	h.init("c", nil)
	if err := h.add("a", a, a0); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(time.Minute)
	if err := h.add("b", b, a0); err != nil {
		t.Fatal(err)
	}
	ids := func(f ListFilter) []string {
		t.Helper()
		ts, err := h.c.List(f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range ts {
			out = append(out, x.TransactionalID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    ListFilter
		want []string
	}{
		{"all", ListFilter{}, []string{"a", "b", "c"}},
		{"ongoing", ListFilter{States: []State{Ongoing}}, []string{"a", "b"}},
		{"empty", ListFilter{States: []State{Empty}}, []string{"c"}},
		{"producer", ListFilter{ProducerIDs: []int64{b.ID}}, []string{"b"}},
		{"duration", ListFilter{MinDuration: 30 * time.Second}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(tc.f); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
