package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/group/consumer"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/replication"
)

// fakeClock is a Clock whose time moves only when a test calls Advance,
// which runs due timers in deadline order in the calling goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the clock forward by d, firing every timer that falls due,
// each with the clock set to its deadline.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	for {
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *fakeTimer
		for i, t := range c.timers {
			if t.stopped {
				continue
			}
			if !t.at.After(target) {
				due = t
				c.timers = append(c.timers[:i:i], c.timers[i+1:]...)
			}
			break
		}
		if due == nil {
			// Drop stopped timers so the slice does not grow forever.
			live := c.timers[:0]
			for _, t := range c.timers {
				if !t.stopped {
					live = append(live, t)
				}
			}
			c.timers = live
			c.now = target
			c.mu.Unlock()
			return
		}
		due.stopped = true
		if due.at.After(c.now) {
			c.now = due.at
		}
		c.mu.Unlock()
		due.f()
		c.mu.Lock()
	}
}

// env is a coordinator over a fresh metastore, with a fake clock, on the
// persistence path the server gives it in both modes: a partition of
// __consumer_offsets (here the only one, on a memory log, led by this
// broker alone) under package offsets' coordinator, which the group
// coordinator's hooks write through and whose load rebuilds the metastore
// and the groups from the log. A test that sets hooks of its own (tweak)
// gets those instead.
type env struct {
	t     *testing.T
	store *metastore.Store
	clock *fakeClock
	opts  Options
	c     *Coordinator

	custom bool                   // the test's own hooks (e.opts at start): no log
	part   *replication.Partition // __consumer_offsets-0
	oc     *offsets.Coordinator   // over part; a new one per start
}

const (
	testSession   = 10 * time.Second
	testRebalance = 20 * time.Second
	waitLimit     = 10 * time.Second // generous bound for a blocked call
	initialDelay  = 3 * time.Second
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newEnv(t *testing.T, tweak func(*Options)) *env {
	t.Helper()
	store, err := metastore.Open(t.TempDir(), metastore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store, clock: newFakeClock()}
	e.opts = Options{
		Store:                  store,
		MinSessionTimeout:      time.Second,
		MaxSessionTimeout:      time.Minute,
		OffsetsRetention:       24 * time.Hour,
		RetentionCheckInterval: -1,
		InitialRebalanceDelay:  initialDelay,
		Clock:                  e.clock,
		Logger:                 quietLogger(),
		NodeID:                 1, Host: "localhost", Port: 9092,
	}
	if tweak != nil {
		tweak(&e.opts)
	}
	e.part = offsetsPartition(t)
	e.start()
	t.Cleanup(func() {
		if e.oc != nil {
			e.oc.Close()
		}
		_ = e.c.Close()
		_ = store.Close()
	})
	return e
}

// offsetsPartition returns partition 0 of __consumer_offsets on a memory
// log, led here with this broker the only in-sync replica (an append is
// committed at once), closed at Cleanup.
func offsetsPartition(t *testing.T) *replication.Partition {
	t.Helper()
	st, err := engine.Open("memory", engine.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.CreateLog(engine.PartitionID{Topic: offsets.Topic, Partition: 0}, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := replication.NewPartition(l, replication.Options{Topic: offsets.Topic, Partition: 0, BrokerID: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		st.Close()
	})
	if err := p.MakeLeader(replication.LeaderAndIsr{Leader: 1, ISR: []int32{1}, Replicas: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	return p
}

// start opens a coordinator over the env's store and, unless the test
// brought its own hooks, a new offsets coordinator over its
// __consumer_offsets partition, which loads it, and waits until both are
// loaded.
func (e *env) start() {
	e.t.Helper()
	opts := e.opts
	e.custom = opts.Owns != nil || opts.Persist != nil || opts.PersistGroup != nil || opts.PersistTxn != nil
	e.oc = nil
	if e.custom {
		fillHooks(&opts)
	} else {
		e.oc = offsets.New(offsets.Options{
			NumPartitions: func() int32 { return 1 },
			Partition:     func(int32) *replication.Partition { return e.part },
			Unload:        func(match func(string) bool) { e.c.Unload(match) },
			Reload:        func(match func(string) bool) error { return e.c.Reload(match) },
			ReloadConsumer: func(match func(string) bool, gs map[string][]offsets.ConsumerRecord) error {
				return e.c.ReloadConsumer(match, gs)
			},
			ReloadShare: func(match func(string) bool, gs map[string][]offsets.ShareRecord) error {
				return e.c.ReloadShare(match, gs)
			},
			Meta:   e.store,
			Now:    e.clock.Now,
			Logger: quietLogger(),
		})
		opts.Owns, opts.Persist, opts.PersistGroup, opts.PersistTxn = e.oc.Owns, e.oc.Persist, e.oc.PersistGroup, e.oc.PersistTxn
		if opts.PersistConsumer == nil {
			opts.PersistConsumer = e.oc.PersistConsumer
		}
		if opts.PersistShare == nil {
			opts.PersistShare = e.oc.PersistShare
		}
		if opts.Loading == nil {
			opts.Loading = e.oc.Loading
		}
	}
	c, err := New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.c = c
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if !e.custom {
		e.oc.OnRole(0, true)
		if err := e.oc.WaitLoaded(ctx, 0); err != nil {
			e.t.Fatal(err)
		}
	}
}

// fillHooks sets the hooks a test with hooks of its own left nil: every
// group owned and loaded, writes that succeed at once, transactional
// batches at increasing positions.
func fillHooks(o *Options) {
	if o.Owns == nil {
		o.Owns = func(string) (bool, bool) { return true, false }
	}
	if o.Persist == nil {
		o.Persist = func(context.Context, string, map[metastore.TopicPartition]metastore.CommittedOffset, []metastore.TopicPartition) error {
			return nil
		}
	}
	if o.PersistGroup == nil {
		o.PersistGroup = func(context.Context, metastore.Group, bool) error { return nil }
	}
	if o.PersistConsumer == nil {
		o.PersistConsumer = func(context.Context, string, []consumer.Record) error { return nil }
	}
	if o.PersistTxn == nil {
		var pos atomic.Int64
		o.PersistTxn = func(context.Context, string, int64, int16, map[metastore.TopicPartition]metastore.CommittedOffset) (int64, error) {
			return pos.Add(1), nil
		}
	}
}

// restart closes the coordinator (and the offsets coordinator under it)
// and opens new ones over the same store and log, as a broker restart
// does.
func (e *env) restart() {
	e.t.Helper()
	if e.oc != nil {
		e.oc.Close()
	}
	if err := e.c.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.start()
}

// endTxn ends producer pid's transaction as the server does for a marker
// on __consumer_offsets-0: the COMMIT or ABORT marker at epoch is appended
// to the log (unless the test brought its own hooks), then the coordinator
// completes the transaction's offsets. A marker the log refuses (an epoch
// older than the producer's there) completes nothing, as on the server,
// which answers INVALID_PRODUCER_EPOCH for it.
func (e *env) endTxn(pid int64, epoch int16, commit bool) {
	e.t.Helper()
	if !e.custom {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		_, err := e.part.WriteTxnMarker(ctx, replication.TxnMarker{ProducerID: pid, ProducerEpoch: epoch, Commit: commit})
		if errors.Is(err, replication.ErrInvalidProducerEpoch) {
			return
		}
		if err != nil {
			e.t.Fatalf("write marker: %v", err)
		}
	}
	if err := e.c.HandleTxnCompletion(pid, epoch, []int32{0}, commit); err != nil {
		e.t.Fatal(err)
	}
}

// do sends req and returns the response, failing the test on a Go error.
func do[R kmsg.Response](e *env, req kmsg.Request) R {
	e.t.Helper()
	resp, err := e.c.Handle(WithClient(context.Background(), "client", "127.0.0.1"), req)
	if err != nil {
		e.t.Fatalf("%T: %v", req, err)
	}
	return resp.(R)
}

// async sends req in a goroutine; the result arrives on the channel.
func async[R kmsg.Response](e *env, req kmsg.Request) <-chan R {
	ch := make(chan R, 1)
	go func() {
		resp, err := e.c.Handle(WithClient(context.Background(), "client", "127.0.0.1"), req)
		if err != nil {
			panic(fmt.Sprintf("%T: %v", req, err))
		}
		ch <- resp.(R)
	}()
	return ch
}

// await waits for a blocked request's answer, with a generous bound.
func await[R any](t *testing.T, ch <-chan R) R {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLimit):
		t.Fatal("no answer")
		panic("unreachable")
	}
}

// consumerMeta is consumer-protocol member metadata subscribing to topics.
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

// joinReq builds a JoinGroup of the consumer protocol with one "range"
// protocol carrying meta.
func joinReq(version int16, group, memberID string, instanceID *string, meta []byte) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = version
	r.Group = group
	r.MemberID = memberID
	r.InstanceID = instanceID
	r.SessionTimeoutMillis = int32(testSession / time.Millisecond)
	r.RebalanceTimeoutMillis = int32(testRebalance / time.Millisecond)
	r.ProtocolType = "consumer"
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta}}
	return r
}

// joinAsync starts a JoinGroup; at v4+ without instance id it first does the
// MEMBER_ID_REQUIRED round trip. It returns the pending answer.
func (e *env) joinAsync(version int16, group, memberID string, instanceID *string, meta []byte) <-chan *kmsg.JoinGroupResponse {
	e.t.Helper()
	if memberID == "" && version >= 4 && instanceID == nil {
		r := do[*kmsg.JoinGroupResponse](e, joinReq(version, group, "", nil, meta))
		if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
			e.t.Fatalf("first join: error %d member %q, want MEMBER_ID_REQUIRED with an id", r.ErrorCode, r.MemberID)
		}
		memberID = r.MemberID
	}
	return async[*kmsg.JoinGroupResponse](e, joinReq(version, group, memberID, instanceID, meta))
}

func syncReq(group, memberID string, generation int32, instanceID *string, assign map[string][]byte) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, memberID, generation, instanceID
	for id, a := range assign {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a})
	}
	return r
}

func (e *env) heartbeat(group, memberID string, generation int32, instanceID *string) int16 {
	e.t.Helper()
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, memberID, generation, instanceID
	return do[*kmsg.HeartbeatResponse](e, r).ErrorCode
}

func (e *env) describe(group string) kmsg.DescribeGroupsResponseGroup {
	e.t.Helper()
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 5
	r.Groups = []string{group}
	return do[*kmsg.DescribeGroupsResponse](e, r).Groups[0]
}

// waitMembers polls until the group has n members (a bounded loop: the
// joins racing in goroutines register quickly).
func (e *env) waitMembers(group string, n int) {
	e.t.Helper()
	for i := 0; i < 2000; i++ {
		if len(e.describe(group).Members) == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatalf("group %s never had %d members", group, n)
}

func (e *env) commit(group, memberID string, generation int32, topic string, partition int32, offset int64) int16 {
	e.t.Helper()
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 8
	r.Group, r.MemberID, r.Generation = group, memberID, generation
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = partition, offset
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
	return do[*kmsg.OffsetCommitResponse](e, r).Topics[0].Partitions[0].ErrorCode
}

// fetch returns the committed offset of one partition (-1: none).
func (e *env) fetch(group, topic string, partition int32) int64 {
	e.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = group
	r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{partition}}}
	resp := do[*kmsg.OffsetFetchResponse](e, r)
	if resp.ErrorCode != 0 {
		e.t.Fatalf("offset fetch: error %d", resp.ErrorCode)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// stableGroup brings n dynamic members (v9) into one Stable generation with
// the initial delay absorbing all joins, and returns their ids (leader
// first) and the generation. Each member's assignment is "a-<index>".
func (e *env) stableGroup(group string, n int) ([]string, int32) {
	e.t.Helper()
	chans := make([]<-chan *kmsg.JoinGroupResponse, n)
	for i := range chans {
		chans[i] = e.joinAsync(9, group, "", nil, consumerMeta("t"))
	}
	e.waitMembers(group, n)
	e.clock.Advance(2 * initialDelay) // the initial delay, extended once
	var leader *kmsg.JoinGroupResponse
	var ids []string
	for _, ch := range chans {
		r := await(e.t, ch)
		if r.ErrorCode != 0 {
			e.t.Fatalf("join: error %d", r.ErrorCode)
		}
		if r.MemberID == r.LeaderID {
			leader = r
		}
		ids = append(ids, r.MemberID)
	}
	if leader == nil {
		e.t.Fatal("no member was told it leads")
	}
	for i, id := range ids {
		if id == leader.LeaderID {
			ids[0], ids[i] = ids[i], ids[0]
		}
	}
	assign := make(map[string][]byte)
	for i, id := range ids {
		assign[id] = []byte(fmt.Sprintf("a-%d", i))
	}
	var syncs []<-chan *kmsg.SyncGroupResponse
	for _, id := range ids[1:] {
		syncs = append(syncs, async[*kmsg.SyncGroupResponse](e, syncReq(group, id, leader.Generation, nil, nil)))
	}
	r := do[*kmsg.SyncGroupResponse](e, syncReq(group, ids[0], leader.Generation, nil, assign))
	if r.ErrorCode != 0 {
		e.t.Fatalf("leader sync: error %d", r.ErrorCode)
	}
	for _, ch := range syncs {
		if r := await(e.t, ch); r.ErrorCode != 0 {
			e.t.Fatalf("follower sync: error %d", r.ErrorCode)
		}
	}
	return ids, leader.Generation
}
