package server

// ShareFetch (78) and ShareAcknowledge (79) at the wire: raw kmsg requests
// through franz-go clients against a listening single node with a test
// ShareMembership (the membership side, ShareGroupHeartbeat, is another
// package's): acquisition, acknowledgements, share sessions and their
// errors, hostile acknowledgement batches, a closed connection releasing
// its records, lock expiry on a fake clock, long polls woken by an append
// and by a release, read_committed, and ApiVersions without a membership.

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/record"
)

// testShareMembers is a ShareMembership for tests: every member named in
// members, one config for every group.
type testShareMembers struct {
	mu      sync.Mutex
	members map[string]bool
	cfg     ShareGroupConfig
}

func (m *testShareMembers) Member(group, member string) (map[[16]byte][]int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return nil, m.members[member]
}

func (m *testShareMembers) GroupConfig(string) ShareGroupConfig {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg
}

// fakeNow is a settable clock for Options.Now.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeNow) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeNow) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type shareEnv struct {
	t       *testing.T
	s       *Server
	addr    string
	members *testShareMembers
	clock   *fakeNow
	topicID [16]byte
	admin   *kgo.Client
}

// startShareServer starts a listening single node serving share groups,
// with topic "sq" of one partition holding n records (values "0".."n-1").
func startShareServer(t *testing.T, n int, configure func(*ShareGroupConfig), setup ...func(*Server)) *shareEnv {
	t.Helper()
	members := &testShareMembers{members: map[string]bool{"a": true, "b": true}}
	clock := &fakeNow{t: time.Now()}
	s := newTestServer(t, nil, Options{ClusterID: "share", AdvertisedHost: "127.0.0.1", ShareMembership: members, Now: clock.now})
	members.cfg = s.defaultShareGroupConfig()
	members.cfg.AutoOffsetReset = "earliest"
	if configure != nil {
		configure(&members.cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.advPort = int32(ln.Addr().(*net.TCPAddr).Port)
	s.self.Port = s.advPort
	for _, f := range setup {
		f(s)
	}
	go s.Serve(ln)
	env := &shareEnv{t: t, s: s, addr: ln.Addr().String(), members: members, clock: clock}
	env.admin = env.client()
	ctx := context.Background()
	ct, err := kadm.NewClient(env.admin).CreateTopic(ctx, 1, 1, nil, "sq")
	if err != nil || ct.Err != nil {
		t.Fatalf("create topic: %v %v", err, ct.Err)
	}
	env.topicID = ct.ID
	env.produce(n, 0)
	return env
}

func (e *shareEnv) client() *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.DefaultProduceTopic("sq"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

// produce appends n records, values from first on, one batch each.
func (e *shareEnv) produce(n, first int) {
	e.t.Helper()
	for i := range n {
		r := &kgo.Record{Value: []byte{byte('0' + (first+i)%10)}}
		if err := e.admin.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			e.t.Fatal(err)
		}
	}
}

type sfetch struct {
	member   string
	epoch    int32
	max      int32
	waitMs   int32
	acks     []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	forget   bool
	topicIDs [][16]byte // nil: the env's topic
	renew    bool
}

func (e *shareEnv) fetch(cl *kgo.Client, f sfetch) *kmsg.ShareFetchResponse {
	e.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	g := "g"
	req.GroupID, req.MemberID = &g, &f.member
	req.ShareSessionEpoch, req.MaxRecords, req.MaxWaitMillis = f.epoch, f.max, f.waitMs
	req.MaxBytes, req.BatchSize, req.ShareAcquireMode = 1<<20, 500, 1
	if f.renew {
		req.MaxBytes, req.BatchSize, req.IsRenewAck = 0, 0, true
	}
	ids := f.topicIDs
	if ids == nil {
		ids = [][16]byte{e.topicID}
	}
	for _, id := range ids {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.AcknowledgementBatches = f.acks
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		e.t.Fatalf("share fetch: %v", err)
	}
	return resp
}

func (e *shareEnv) ack(cl *kgo.Client, member string, epoch int32, batches ...kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareAcknowledgeResponse {
	e.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	g := "g"
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &member, epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = e.topicID
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.AcknowledgementBatches = batches
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		e.t.Fatalf("share acknowledge: %v", err)
	}
	return resp
}

func ackBatch(first, last int64, types ...int8) kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch {
	return kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: types}
}

func fetchAck(first, last int64, types ...int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	return kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: types}
}

// acquired returns the only partition's acquired ranges as (first, last,
// count) triples and checks that its records hold every acquired offset.
func acquired(t *testing.T, resp *kmsg.ShareFetchResponse) [][3]int64 {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("share fetch error %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var out [][3]int64
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("partition error %v", kerr.ErrorForCode(rp.ErrorCode))
			}
			var offsets []int64
			eachBatch(rp.Records, func(b record.Batch) {
				for o := b.BaseOffset(); o <= b.LastOffset(); o++ {
					offsets = append(offsets, o)
				}
			})
			for _, ar := range rp.AcquiredRecords {
				for o := ar.FirstOffset; o <= ar.LastOffset; o++ {
					if !slices.Contains(offsets, o) {
						t.Fatalf("acquired offset %d not in the records returned (%v)", o, offsets)
					}
				}
				out = append(out, [3]int64{ar.FirstOffset, ar.LastOffset, int64(ar.DeliveryCount)})
			}
		}
	}
	return out
}

func wantRanges(t *testing.T, got [][3]int64, want ...[3]int64) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
}

func TestShareFetchAcquireAcknowledgeRedeliver(t *testing.T) {
	e := startShareServer(t, 10, nil)
	a, b := e.client(), e.client()
	wantRanges(t, acquired(t, e.fetch(a, sfetch{member: "a", max: 4})), [3]int64{0, 3, 1})
	wantRanges(t, acquired(t, e.fetch(b, sfetch{member: "b", max: 4})), [3]int64{4, 7, 1})
	// a accepts 0-1 and releases 2-3 (session epoch 1 after the fetch).
	r := e.ack(a, "a", 1, ackBatch(0, 1, 1), ackBatch(2, 3, 2))
	if c := r.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("ack: %v", kerr.ErrorForCode(c))
	}
	// b's next fetch, with its piggy-backed accept of 4-7, gets 2-3 again
	// (second delivery) and the fresh 8-9.
	resp := e.fetch(b, sfetch{member: "b", epoch: 1, max: 10, acks: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(4, 7, 1)}})
	if c := resp.Topics[0].Partitions[0].AcknowledgeErrorCode; c != 0 {
		t.Fatalf("piggy-backed ack: %v", kerr.ErrorForCode(c))
	}
	wantRanges(t, acquired(t, resp), [3]int64{2, 3, 2}, [3]int64{8, 9, 1})
	// a may not acknowledge b's records.
	r = e.ack(a, "a", 2, ackBatch(8, 8, 1))
	if c := r.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRecordState.Code {
		t.Fatalf("foreign ack: %v", kerr.ErrorForCode(c))
	}
	// Rejected records are never delivered again.
	e.ack(b, "b", 2, ackBatch(2, 3, 3), ackBatch(8, 9, 1))
	if got := acquired(t, e.fetch(a, sfetch{member: "a", epoch: 3, max: 10})); len(got) != 0 {
		t.Fatalf("acquired %v after everything was acknowledged", got)
	}
	h := e.s.share.parts.Lookup(share.Key{Group: "g", Topic: e.topicID, Partition: 0})
	h.Lock()
	start := h.P.Start()
	h.Unlock()
	if start != 10 {
		t.Fatalf("share-partition start offset %d, want 10", start)
	}
}

func TestShareSessionErrors(t *testing.T) {
	e := startShareServer(t, 3, nil)
	cl := e.client()
	if c := e.fetch(cl, sfetch{member: "a", epoch: 4}).ErrorCode; c != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %v", kerr.ErrorForCode(c))
	}
	if c := e.ack(cl, "a", 1, ackBatch(0, 0, 1)).ErrorCode; c != kerr.ShareSessionNotFound.Code {
		t.Fatalf("ack without session: %v", kerr.ErrorForCode(c))
	}
	e.fetch(cl, sfetch{member: "a", max: 1})
	if c := e.fetch(cl, sfetch{member: "a", epoch: 7}).ErrorCode; c != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong epoch: %v", kerr.ErrorForCode(c))
	}
	if c := e.ack(cl, "a", 0, ackBatch(0, 0, 1)).ErrorCode; c != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ack at epoch 0: %v", kerr.ErrorForCode(c))
	}
	if c := e.fetch(cl, sfetch{member: "stranger"}).ErrorCode; c != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %v", kerr.ErrorForCode(c))
	}
	if c := e.fetch(cl, sfetch{member: ""}).ErrorCode; c != kerr.InvalidRequest.Code {
		t.Fatalf("empty member: %v", kerr.ErrorForCode(c))
	}
	// Acknowledgements in an opening request are refused whole.
	if c := e.fetch(cl, sfetch{member: "b", acks: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 0, 1)}}).ErrorCode; c != kerr.InvalidRequest.Code {
		t.Fatalf("acks at epoch 0: %v", kerr.ErrorForCode(c))
	}
	// Closing (-1) acknowledges, releases the rest and ends the session.
	resp := e.fetch(cl, sfetch{member: "a", epoch: -1, acks: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 0, 1)}})
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].AcknowledgeErrorCode != 0 {
		t.Fatalf("close: %v / %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
	}
	if c := e.fetch(cl, sfetch{member: "a", epoch: 2}).ErrorCode; c != kerr.ShareSessionNotFound.Code {
		t.Fatalf("after close: %v", kerr.ErrorForCode(c))
	}
}

func TestShareAcknowledgeHostileBatches(t *testing.T) {
	e := startShareServer(t, 5, nil)
	cl := e.client()
	wantRanges(t, acquired(t, e.fetch(cl, sfetch{member: "a", max: 5})), [3]int64{0, 4, 1})
	epoch := int32(1)
	for _, tc := range []struct {
		name    string
		batches []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch
		want    int16
	}{
		// Kafka's codes: past what was acquired, before -1 or before the
		// previous batch's end is INVALID_REQUEST (KafkaApis,
		// SharePartition's cache lookup); an offset named twice by
		// touching batches is INVALID_RECORD_STATE.
		{"huge range", []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 1<<62, 1)}, kerr.InvalidRequest.Code},
		{"negative", []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{ackBatch(-1<<62, 2, 1)}, kerr.InvalidRequest.Code},
		{"overlap", []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 2, 1), ackBatch(1, 3, 1)}, kerr.InvalidRequest.Code},
		{"touching", []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 2, 1), ackBatch(2, 3, 1)}, kerr.InvalidRecordState.Code},
		{"reversed", []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{ackBatch(3, 1, 1)}, kerr.InvalidRequest.Code},
		{"types mismatch", []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 2, 1, 1)}, kerr.InvalidRequest.Code},
		{"bad type", []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 0, 77)}, kerr.InvalidRequest.Code},
		{"renew without flag", []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{ackBatch(0, 0, 4)}, kerr.InvalidRequest.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.ack(cl, "a", epoch, tc.batches...)
			epoch++
			if r.ErrorCode != 0 {
				t.Fatalf("top-level %v", kerr.ErrorForCode(r.ErrorCode))
			}
			if c := r.Topics[0].Partitions[0].ErrorCode; c != tc.want {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(c), kerr.ErrorForCode(tc.want))
			}
		})
	}
	// Nothing applied: all five are still a's to accept.
	if c := e.ack(cl, "a", epoch, ackBatch(0, 4, 1)).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("final ack: %v", kerr.ErrorForCode(c))
	}
	epoch++
	// An unknown topic id: its own error, in a fetch too.
	resp := e.fetch(cl, sfetch{member: "a", epoch: epoch, topicIDs: [][16]byte{{1, 2, 3}}})
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
	}
}

func TestShareConnectionCloseReleases(t *testing.T) {
	e := startShareServer(t, 3, nil)
	a, b := e.client(), e.client()
	wantRanges(t, acquired(t, e.fetch(a, sfetch{member: "a", max: 10})), [3]int64{0, 2, 1})
	if got := acquired(t, e.fetch(b, sfetch{member: "b", max: 10})); len(got) != 0 {
		t.Fatalf("b acquired %v while a holds them", got)
	}
	a.Close()
	// The release is asynchronous to the close: b long-polls for it (no
	// lock expires: the fake clock does not move).
	resp := e.fetch(b, sfetch{member: "b", epoch: 1, max: 10, waitMs: 30_000})
	wantRanges(t, acquired(t, resp), [3]int64{0, 2, 2})
}

func TestShareLockExpiry(t *testing.T) {
	e := startShareServer(t, 2, func(c *ShareGroupConfig) {
		c.RecordLockDuration = 15 * time.Second
		c.RenewEnabled = true // share.renew.acknowledge.enable (the default, set for clarity)
	})
	a, b := e.client(), e.client()
	resp := e.fetch(a, sfetch{member: "a", max: 10})
	if resp.AcquisitionLockTimeoutMillis != 15000 {
		t.Fatalf("lock timeout %d", resp.AcquisitionLockTimeoutMillis)
	}
	wantRanges(t, acquired(t, resp), [3]int64{0, 1, 1})
	e.clock.add(15*time.Second - time.Millisecond)
	if got := acquired(t, e.fetch(b, sfetch{member: "b", max: 10})); len(got) != 0 {
		t.Fatalf("acquired %v before the lock expired", got)
	}
	e.clock.add(time.Millisecond)
	wantRanges(t, acquired(t, e.fetch(b, sfetch{member: "b", epoch: 1, max: 10})), [3]int64{0, 1, 2})
	// a's late acknowledgement is refused; renewing keeps b's lock.
	if c := e.ack(a, "a", 1, ackBatch(0, 1, 1)).Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRecordState.Code {
		t.Fatalf("late ack: %v", kerr.ErrorForCode(c))
	}
	e.clock.add(10 * time.Second)
	r := e.fetch(b, sfetch{member: "b", epoch: 2, renew: true, acks: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{fetchAck(0, 1, 4)}})
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].AcknowledgeErrorCode != 0 {
		t.Fatalf("renew: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	e.clock.add(10 * time.Second) // 20s after b's acquisition, 10s after its renewal
	if got := acquired(t, e.fetch(a, sfetch{member: "a", epoch: 2, max: 10})); len(got) != 0 {
		t.Fatalf("acquired %v despite the renewal", got)
	}
}

func TestShareDeliveryLimitAndBackoff(t *testing.T) {
	e := startShareServer(t, 1, func(c *ShareGroupConfig) {
		c.DeliveryCountLimit = 2
		c.RedeliveryBackoff = 5 * time.Second
	})
	a := e.client()
	wantRanges(t, acquired(t, e.fetch(a, sfetch{member: "a", max: 10})), [3]int64{0, 0, 1})
	e.ack(a, "a", 1, ackBatch(0, 0, 2))
	// Within the backoff: nothing.
	if got := acquired(t, e.fetch(a, sfetch{member: "a", epoch: 2, max: 10})); len(got) != 0 {
		t.Fatalf("acquired %v during the backoff", got)
	}
	e.clock.add(5 * time.Second)
	wantRanges(t, acquired(t, e.fetch(a, sfetch{member: "a", epoch: 3, max: 10})), [3]int64{0, 0, 2})
	// The second release reaches the limit: archived, never again.
	e.ack(a, "a", 4, ackBatch(0, 0, 2))
	e.clock.add(time.Hour)
	if got := acquired(t, e.fetch(a, sfetch{member: "a", epoch: 5, max: 10})); len(got) != 0 {
		t.Fatalf("acquired %v past the delivery limit", got)
	}
}

func TestShareFetchLongPollWakes(t *testing.T) {
	e := startShareServer(t, 0, nil)
	a, b := e.client(), e.client()
	// Woken by an append.
	done := make(chan *kmsg.ShareFetchResponse, 1)
	go func() { done <- e.fetch(a, sfetch{member: "a", max: 10, waitMs: 30_000}) }()
	waitShareParked(t, e.s)
	e.produce(1, 0)
	wantRanges(t, acquired(t, <-done), [3]int64{0, 0, 1})
	// Woken by a release.
	go func() { done <- e.fetch(b, sfetch{member: "b", max: 10, waitMs: 30_000}) }()
	waitShareParked(t, e.s)
	e.ack(a, "a", 1, ackBatch(0, 0, 2))
	wantRanges(t, acquired(t, <-done), [3]int64{0, 0, 2})
}

// waitShareParked waits (bounded) until a share fetch is parked.
func waitShareParked(t *testing.T, s *Server) {
	t.Helper()
	for range 2000 {
		if s.share.parked.Load() > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no share fetch parked")
}

func TestShareReadCommittedArchivesAborted(t *testing.T) {
	e := startShareServer(t, 0, func(c *ShareGroupConfig) { c.ReadCommitted = true })
	ctx := context.Background()
	txcl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.DefaultProduceTopic("sq"), kgo.TransactionalID("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer txcl.Close()
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := txcl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txcl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txcl.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	// Offsets: 0 aborted record, 1 abort marker, 2 committed record, 3
	// commit marker. Only 1-3 may be delivered (markers as gaps).
	a := e.client()
	got := acquired(t, e.fetch(a, sfetch{member: "a", max: 10}))
	for _, r := range got {
		if r[0] <= 0 && r[1] >= 0 {
			t.Fatalf("aborted offset 0 delivered: %v", got)
		}
	}
	found := false
	for _, r := range got {
		found = found || (r[0] <= 2 && r[1] >= 2)
	}
	if !found {
		t.Fatalf("committed offset 2 not delivered: %v", got)
	}
}

func TestShareAPIsNotAdvertisedWithoutMembership(t *testing.T) {
	s := newTestServer(t, nil, Options{ClusterID: "x"})
	for _, k := range []int16{apiKeyShareFetch, apiKeyShareAcknowledge} {
		if _, ok := s.apis[k]; ok {
			t.Fatalf("key %d served without a ShareMembership", k)
		}
	}
	s2 := newTestServer(t, nil, Options{ClusterID: "x", ShareMembership: &testShareMembers{}})
	if a, ok := s2.apis[apiKeyShareFetch]; !ok || a.min != 1 || a.max != 2 {
		t.Fatalf("ShareFetch with a membership: %+v %v", a, ok)
	}
}

func TestShareMemberGoneReleases(t *testing.T) {
	e := startShareServer(t, 2, nil)
	a, b := e.client(), e.client()
	wantRanges(t, acquired(t, e.fetch(a, sfetch{member: "a", max: 10})), [3]int64{0, 1, 1})
	e.s.shareMemberGone("g", "a")
	wantRanges(t, acquired(t, e.fetch(b, sfetch{member: "b", max: 10})), [3]int64{0, 1, 2})
	if c := e.fetch(a, sfetch{member: "a", epoch: 1}).ErrorCode; c != kerr.ShareSessionNotFound.Code {
		t.Fatalf("a's session after leaving: %v", kerr.ErrorForCode(c))
	}
}

// TestShareSessionManyPartitions: a session naming a hundred thousand
// partitions (made up: none is kept) and forgetting as many costs linear
// work, and each gets its error.
func TestShareSessionManyPartitions(t *testing.T) {
	e := startShareServer(t, 1, nil)
	cl := e.client()
	e.fetch(cl, sfetch{member: "a", max: 1})
	req := kmsg.NewPtrShareFetchRequest()
	g, m := "g", "a"
	req.GroupID, req.MemberID, req.ShareSessionEpoch, req.MaxRecords = &g, &m, 1, 1
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = e.topicID
	ft := kmsg.NewShareFetchRequestForgottenTopicsData()
	ft.TopicID = e.topicID
	for i := range int32(100_000) {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = i + 1 // partition 0 exists; the rest do not
		rt.Partitions = append(rt.Partitions, rp)
		ft.Partitions = append(ft.Partitions, i+200_000)
	}
	req.Topics = []kmsg.ShareFetchRequestTopic{rt}
	req.ForgottenTopicsData = []kmsg.ShareFetchRequestForgottenTopicsData{ft}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 100_000 {
		t.Fatalf("%v, %d topics", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	e.s.share.mu.Lock()
	n := len(e.s.share.sessions[shareSessionKey{"g", "a"}].parts)
	e.s.share.mu.Unlock()
	if n != 1 {
		t.Fatalf("session holds %d partitions, want 1", n)
	}
}

// TestShareSessionReopenKeepsRecords: a member that opens a new session
// (epoch 0 again, as a client does after a session error) still holds its
// records and may acknowledge them in the new session.
func TestShareSessionReopenKeepsRecords(t *testing.T) {
	e := startShareServer(t, 2, nil)
	a, b := e.client(), e.client()
	wantRanges(t, acquired(t, e.fetch(a, sfetch{member: "a", max: 10})), [3]int64{0, 1, 1})
	if got := acquired(t, e.fetch(a, sfetch{member: "a", max: 10})); len(got) != 0 {
		t.Fatalf("reopened session acquired %v", got)
	}
	if got := acquired(t, e.fetch(b, sfetch{member: "b", max: 10})); len(got) != 0 {
		t.Fatalf("b acquired %v of a's records", got)
	}
	if c := e.ack(a, "a", 1, ackBatch(0, 1, 1)).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("ack in the new session: %v", kerr.ErrorForCode(c))
	}
}

// TestShareStateTopicShape: a client creating __share_group_state gets
// exactly the coordinator's topic (internal, 50 partitions) or an error.
func TestShareStateTopicShape(t *testing.T) {
	e := startShareServer(t, 0, nil)
	adm := kadm.NewClient(e.admin)
	ctx := context.Background()
	if r, err := adm.CreateTopic(ctx, 3, 1, nil, "__share_group_state"); err == nil && r.Err == nil {
		t.Fatal("created __share_group_state with 3 partitions")
	}
	r, err := adm.CreateTopic(ctx, -1, -1, nil, "__share_group_state")
	if err != nil || r.Err != nil {
		t.Fatalf("create with defaults: %v %v", err, r.Err)
	}
	td, err := adm.ListTopicsWithInternal(ctx, "__share_group_state")
	if err != nil {
		t.Fatal(err)
	}
	d := td["__share_group_state"]
	if !d.IsInternal || len(d.Partitions) != 50 {
		t.Fatalf("internal %v, %d partitions", d.IsInternal, len(d.Partitions))
	}
}
