package server

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/zerocopy"
)

// sessFetch is a v12 Fetch of topic t with session metadata (id, epoch):
// parts maps partition to fetch offset; forget names partitions to drop.
func sessFetch(t *replica.Topic, id, epoch int32, parts map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID, req.MaxBytes, req.SessionID, req.SessionEpoch = -1, 1<<20, id, epoch
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = t.Name
		for _, p := range slices.Sorted(mapKeys(parts)) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, parts[p], 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.FetchRequestTopic{rt}
	}
	if len(forget) > 0 {
		req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: t.Name, Partitions: forget}}
	}
	return req
}

func mapKeys(m map[int32]int64) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// answered returns the partitions of resp (one topic at most) by number,
// failing on a top-level error.
func answered(tb testing.TB, resp *kmsg.FetchResponse) map[int32]kmsg.FetchResponseTopicPartition {
	tb.Helper()
	if resp.ErrorCode != 0 {
		tb.Fatalf("fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	got := map[int32]kmsg.FetchResponseTopicPartition{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			got[p.Partition] = p
		}
	}
	return got
}

// mustFetch runs req through handleFetch and decodes the answer (fetch's
// decoding, for flexible versions too).
func mustFetch(tb testing.TB, s *Server, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	tb.Helper()
	resp, err := fetchFlexible(s, req)
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

// goFetchFlexible runs fetchFlexible on its own goroutine; the response
// arrives on the returned channel (nil after an error, which fails t).
func goFetchFlexible(t *testing.T, s *Server, req *kmsg.FetchRequest) <-chan *kmsg.FetchResponse {
	res := make(chan *kmsg.FetchResponse, 1)
	go func() {
		resp, err := fetchFlexible(s, req)
		if err != nil {
			t.Error(err)
		}
		res <- resp
	}()
	return res
}

func fetchFlexible(s *Server, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	return fetchFlexibleAs(s, &reqCtx{}, req)
}

// fetchFlexibleAs is fetchFlexible for the client of rc.
func fetchFlexibleAs(s *Server, rc *reqCtx, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp, err := handleFetch(s, rc, req)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := zerocopy.NewWriter(&buf)
	if err := encodeResponse(w, resp); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	body := buf.Bytes()[8:] // after size and correlation id
	if req.IsFlexible() {
		body = body[1:] // the header's empty tag buffer
	}
	out := req.ResponseKind().(*kmsg.FetchResponse)
	out.SetVersion(req.Version)
	return out, out.ReadFrom(body)
}

// cachedSession returns session id of s's cache, nil if there is none.
func cachedSession(s *Server, id int32) *fetchSession {
	c := s.fetchSessions
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// sessionParts returns the partitions of session id in read order, nil if
// there is no such session.
func sessionParts(s *Server, id int32) []int32 {
	sess := cachedSession(s, id)
	if sess == nil {
		return nil
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	parts := []int32{}
	for p := sess.head; p != nil; p = p.next {
		parts = append(parts, p.key.partition)
	}
	return parts
}

// TestFetchSession walks one session through its life: created by a full
// fetch, incremental fetches answering only what changed, added, updated
// and forgotten partitions, the errors that leave it untouched, and close.
func TestFetchSession(t *testing.T) {
	s, tp := newWideServer(t, 4)
	resp := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0}))
	id := resp.SessionID
	if id == 0 || len(answered(t, resp)) != 3 {
		t.Fatalf("full fetch: session %d, %d partitions", id, len(answered(t, resp)))
	}
	if got := sessionParts(s, id); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("session holds %v", got)
	}

	// Nothing changed: nothing answered.
	resp = mustFetch(t, s, sessFetch(tp, id, 1, nil))
	if resp.SessionID != id || len(answered(t, resp)) != 0 {
		t.Fatalf("idle incremental: session %d, %v", resp.SessionID, answered(t, resp))
	}

	// A record on partition 1: only partition 1, with it; it moves to the
	// end of the read order.
	if _, err := tp.Parts[1].Append(context.Background(), oneRecord(), 1); err != nil {
		t.Fatal(err)
	}
	got := answered(t, mustFetch(t, s, sessFetch(tp, id, 2, nil)))
	if len(got) != 1 || len(got[1].RecordBatches) == 0 || got[1].HighWatermark != 1 {
		t.Fatalf("after an append: %v", got)
	}
	if got := sessionParts(s, id); !slices.Equal(got, []int32{0, 2, 1}) {
		t.Fatalf("session order %v, want 0 2 1", got)
	}

	// Update 1 (consumed up to 1), add 3, forget 0 and 99 (not in the
	// session: ignored). Only the new partition has news.
	got = answered(t, mustFetch(t, s, sessFetch(tp, id, 3, map[int32]int64{1: 1, 3: 0}, 0, 99)))
	if _, ok := got[3]; len(got) != 1 || !ok {
		t.Fatalf("after add/update/forget: %v", got)
	}
	if got := sessionParts(s, id); !slices.Equal(got, []int32{2, 1, 3}) {
		t.Fatalf("session holds %v, want 2 1 3", got)
	}

	// Refused requests leave the session as it was.
	for _, tc := range []struct {
		name string
		req  *kmsg.FetchRequest
		want int16
	}{
		{"stale epoch", sessFetch(tp, id, 3, map[int32]int64{0: 0}, 2), kerr.InvalidFetchSessionEpoch.Code},
		{"future epoch", sessFetch(tp, id, 5, map[int32]int64{0: 0}, 2), kerr.InvalidFetchSessionEpoch.Code},
		{"unknown id", sessFetch(tp, id+1, 4, nil), kerr.FetchSessionIDNotFound.Code},
		{"topic ids", func() *kmsg.FetchRequest {
			r := sessFetch(tp, id, 4, nil)
			r.SetVersion(13)
			return r
		}(), kerr.FetchSessionTopicIDError.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := mustFetch(t, s, tc.req)
			if resp.ErrorCode != tc.want || len(resp.Topics) != 0 {
				t.Fatalf("%v, %d topics; want %v", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics), kerr.ErrorForCode(tc.want))
			}
			if got := sessionParts(s, id); !slices.Equal(got, []int32{2, 1, 3}) {
				t.Fatalf("session holds %v after a refused request", got)
			}
		})
	}

	// The right epoch still works; the log start offset moved by nothing,
	// so still nothing to say.
	if got := answered(t, mustFetch(t, s, sessFetch(tp, id, 4, nil))); len(got) != 0 {
		t.Fatalf("epoch 4: %v", got)
	}

	// Close: epoch -1 with the id is a sessionless full fetch.
	resp = mustFetch(t, s, sessFetch(tp, id, -1, map[int32]int64{0: 0}))
	if resp.SessionID != 0 || len(answered(t, resp)) != 1 || sessionParts(s, id) != nil {
		t.Fatalf("close: session %d, %d partitions, still cached %v", resp.SessionID, len(answered(t, resp)), sessionParts(s, id) != nil)
	}
	if resp := mustFetch(t, s, sessFetch(tp, id, 5, nil)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("after close: %v", kerr.ErrorForCode(resp.ErrorCode))
	}

	// Forgetting every partition closes the session too.
	id = mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{0: 0})).SessionID
	resp = mustFetch(t, s, sessFetch(tp, id, 1, nil, 0))
	if resp.SessionID != 0 || len(answered(t, resp)) != 0 || sessionParts(s, id) != nil {
		t.Fatalf("emptied: session %d, still cached %v", resp.SessionID, sessionParts(s, id) != nil)
	}

	// Sessionless fetches and v6 make none.
	for _, r := range []*kmsg.FetchRequest{sessFetch(tp, 0, -1, map[int32]int64{0: 0}), func() *kmsg.FetchRequest {
		r := sessFetch(tp, 0, 0, map[int32]int64{0: 0})
		r.SetVersion(6)
		return r
	}()} {
		if resp := mustFetch(t, s, r); resp.SessionID != 0 {
			t.Fatalf("v%d epoch %d: session %d", r.Version, r.SessionEpoch, resp.SessionID)
		}
	}
	if n, _, _ := s.fetchSessions.stats(); n != 0 {
		t.Fatalf("%d sessions left", n)
	}
}

// TestFetchSessionTopicDeleted: a session's partitions of a deleted topic
// answer an error on every incremental fetch, and keep answering it (the
// client forgets them); the others carry on.
func TestFetchSessionTopicDeleted(t *testing.T) {
	s, tp := newWideServer(t, 2)
	s.rm.Lock()
	other, err := s.createTopicLocked(topicSpec{name: "other", partitions: 1, rf: 1})
	s.rm.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	req := sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0})
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "other"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = append(req.Topics, rt)
	id := mustFetch(t, s, req).SessionID
	if id == 0 {
		t.Fatal("no session")
	}
	s.rm.Lock()
	err = s.rm.DeleteTopicLocked(tp)
	s.rm.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Parts[0].Append(context.Background(), oneRecord(), 1); err != nil {
		t.Fatal(err)
	}
	for epoch := int32(1); epoch <= 2; epoch++ {
		resp := mustFetch(t, s, sessFetch(tp, id, epoch, nil))
		if resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
		var errs, records int
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				if rt.Topic == "wide" && p.ErrorCode == kerr.UnknownTopicOrPartition.Code {
					errs++
				}
				if rt.Topic == "other" && len(p.RecordBatches) > 0 {
					records++
				}
			}
		}
		// The client did not move its offset: the record comes again.
		if errs != 2 || records != 1 {
			t.Fatalf("epoch %d: %d errors, %d with records: %+v", epoch, errs, records, resp.Topics)
		}
	}
}

// TestFetchSessionRace: a long-polling incremental fetch overtaken by the
// session's next request answers INVALID_FETCH_SESSION_EPOCH, and two
// requests with the same epoch never both succeed (run with -race).
func TestFetchSessionRace(t *testing.T) {
	s, tp := newWideServer(t, 2)
	id := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0})).SessionID
	slow := sessFetch(tp, id, 1, nil)
	slow.MaxWaitMillis, slow.MinBytes = 60_000, 1
	res := goFetchFlexible(t, s, slow)
	waitParked(t, s, 1)
	if resp := mustFetch(t, s, sessFetch(tp, id, 2, nil)); resp.ErrorCode != 0 {
		t.Fatalf("next epoch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if _, err := tp.Parts[0].Append(context.Background(), oneRecord(), 1); err != nil {
		t.Fatal(err)
	}
	if resp := <-res; resp == nil || resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || len(resp.Topics) != 0 || resp.SessionID != id {
		t.Fatalf("overtaken fetch: %+v", resp)
	}
	checkNoWatchers(t, tp)

	const n = 8
	results := make([]<-chan *kmsg.FetchResponse, n)
	for i := range results {
		results[i] = goFetchFlexible(t, s, sessFetch(tp, id, 3, nil))
	}
	ok := 0
	for _, res := range results {
		if resp := <-res; resp != nil && resp.ErrorCode == 0 {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d requests with one epoch succeeded", ok, n)
	}
}

// cacheSession asks cache c for a session of a full v12 fetch of size
// partitions of topic "t" (follower: privileged) and returns its id, 0 if
// none was made.
func cacheSession(c *fetchSessionCache, follower bool, size int, now time.Time) int32 {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	rt := kmsg.FetchRequestTopic{Topic: "t"}
	out := &fetchresp.Response{Topics: []fetchresp.Topic{{Name: "t"}}}
	for i := range size {
		rt.Partitions = append(rt.Partitions, kmsg.FetchRequestTopicPartition{Partition: int32(i)})
		out.Topics[0].Partitions = append(out.Topics[0].Partitions, fetchresp.Partition{Partition: int32(i)})
	}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	fc := fetchSessionCtx{kind: fetchFull, privileged: follower, req: req}
	c.finish(&fc, out, nil, now)
	return out.SessionID
}

// TestFetchSessionEviction: the cache's eviction rules (Kafka's
// FetchSessionCacheShard.tryEvict) with two slots.
func TestFetchSessionEviction(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	newSession := cacheSession
	touch := func(c *fetchSessionCache, id int32, now time.Time) {
		c.mu.Lock()
		c.sessions[id].lastUsed = now
		c.mu.Unlock()
	}
	has := func(c *fetchSessionCache, id int32) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.sessions[id] != nil
	}
	for _, tc := range []struct {
		name     string
		follower bool
		size     int
		at       time.Duration
		touched  bool // the two sessions were used just before at
		evicts   int  // 0: none created, 1: small one, 2: big one
	}{
		{"consumer, all young", false, 100, time.Second, true, 0},
		{"follower evicts smallest consumer", true, 1, time.Second, true, 1},
		{"stale lru evicted", false, 1, 121 * time.Second, false, 1},
		{"consumer evicts old smaller", false, 3, 130 * time.Second, true, 1},
		{"consumer does not evict old bigger", false, 1, 130 * time.Second, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFetchSessionCache(2)
			small := newSession(c, false, 2, t0)
			big := newSession(c, false, 3, t0)
			if small == 0 || big == 0 {
				t.Fatal("first two sessions not created")
			}
			now := t0.Add(tc.at)
			if tc.touched {
				touch(c, small, now)
				touch(c, big, now)
			} else {
				touch(c, big, t0.Add(time.Second))
			}
			id := newSession(c, tc.follower, tc.size, now)
			switch tc.evicts {
			case 0:
				if id != 0 || !has(c, small) || !has(c, big) {
					t.Fatalf("created %d, small %v big %v", id, has(c, small), has(c, big))
				}
			case 1:
				if id == 0 || has(c, small) || !has(c, big) {
					t.Fatalf("created %d, small %v big %v", id, has(c, small), has(c, big))
				}
			}
			if n, parts, _ := c.stats(); n > 2 || parts > 2+3+tc.size {
				t.Fatalf("%d sessions, %d partitions", n, parts)
			}
		})
	}
	// No slots: no sessions.
	if id := newSession(newFetchSessionCache(0), false, 1, t0); id != 0 {
		t.Fatalf("0 slots: session %d", id)
	}
}

// TestFetchSessionLeaderChange: a session partition whose leadership moves
// away answers NOT_LEADER_OR_FOLLOWER on each incremental fetch; once led
// here again it is answered again (its error reset what the client was
// last told), and a client that updates it with a stale leader epoch is
// fenced.
func TestFetchSessionLeaderChange(t *testing.T) {
	s, tp := newWideServer(t, 2)
	id := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0})).SessionID
	p := tp.Parts[1]
	epoch := p.LeaderEpoch()
	if err := p.MakeFollower(replication.LeaderAndIsr{Leader: s.nodeID + 1, LeaderEpoch: epoch + 1,
		ISR: []int32{s.nodeID + 1}, Replicas: []int32{s.nodeID, s.nodeID + 1}}); err != nil {
		t.Fatal(err)
	}
	for e := int32(1); e <= 2; e++ {
		got := answered(t, mustFetch(t, s, sessFetch(tp, id, e, nil)))
		if len(got) != 1 || got[1].ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("epoch %d, led elsewhere: %+v", e, got)
		}
	}
	if err := p.MakeLeader(replication.LeaderAndIsr{Leader: s.nodeID, LeaderEpoch: epoch + 2,
		ISR: []int32{s.nodeID}, Replicas: []int32{s.nodeID}}); err != nil {
		t.Fatal(err)
	}
	got := answered(t, mustFetch(t, s, sessFetch(tp, id, 3, nil)))
	if len(got) != 1 || got[1].ErrorCode != 0 || got[1].HighWatermark != 0 {
		t.Fatalf("led here again: %+v", got)
	}
	if got := answered(t, mustFetch(t, s, sessFetch(tp, id, 4, nil))); len(got) != 0 {
		t.Fatalf("nothing new: %+v", got)
	}
	req := sessFetch(tp, id, 5, map[int32]int64{1: 0})
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
	got = answered(t, mustFetch(t, s, req))
	if len(got) != 1 || got[1].ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("stale leader epoch: %+v", got)
	}
}

// TestFetchSessionBounded: a session cannot grow past the per-session
// bound: a full fetch naming more makes none, and an incremental one that
// would grow it past closes it (FETCH_SESSION_ID_NOT_FOUND, the client
// falls back to full fetches).
func TestFetchSessionBounded(t *testing.T) {
	s, tp := newWideServer(t, 4)
	s.fetchSessions.maxParts = 2
	resp := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0}))
	if resp.SessionID != 0 || len(answered(t, resp)) != 3 {
		t.Fatalf("3 partitions over a bound of 2: session %d, %d answered", resp.SessionID, len(answered(t, resp)))
	}
	id := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0})).SessionID
	if id == 0 {
		t.Fatal("no session")
	}
	// Replacing one partition by another stays within the bound.
	if got := answered(t, mustFetch(t, s, sessFetch(tp, id, 1, map[int32]int64{2: 0}, 0))); len(got) != 1 {
		t.Fatalf("swap: %+v", got)
	}
	resp = mustFetch(t, s, sessFetch(tp, id, 2, map[int32]int64{3: 0}))
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || sessionParts(s, id) != nil {
		t.Fatalf("growing past the bound: %v, session kept %v", kerr.ErrorForCode(resp.ErrorCode), sessionParts(s, id) != nil)
	}
}

// TestFetchSessionSpoofedFollower: a Fetch posing as a replica that fails
// the follower checks (here: a single node has no followers) gets an
// ordinary consumer session, never a privileged one that could evict
// consumers' sessions.
func TestFetchSessionSpoofedFollower(t *testing.T) {
	s, tp := newWideServer(t, 1)
	req := sessFetch(tp, 0, 0, map[int32]int64{0: 0})
	req.ReplicaID = 5
	resp := mustFetch(t, s, req)
	if got := answered(t, resp); got[0].ErrorCode == 0 {
		t.Fatalf("spoofed follower fetch served: %+v", got)
	}
	c := s.fetchSessions
	c.mu.Lock()
	sess := c.sessions[resp.SessionID]
	c.mu.Unlock()
	if sess == nil || sess.privileged {
		t.Fatalf("session %d: %+v", resp.SessionID, sess)
	}
}

// TestFetchSessionModel drives one session with random incremental
// fetches (partitions added, moved, forgotten; records appended; now and
// then a request with a wrong epoch) and checks it against a model of the
// client: the session holds exactly the model's partitions, a refused
// request changes nothing, and each answer holds exactly the partitions
// with records past the client's offset, or a high watermark or log start
// offset (DeleteRecords now and then) the client has not been told. Most
// partitions are quiet most of the time (the client named them at the high
// watermark and nothing changed), which incremental fetches leave out of
// their read (sessionPartition.quiet): the answers must not tell. The seed
// is logged; FETCH_SESSION_SEED replays one.
func TestFetchSessionModel(t *testing.T) {
	seed := time.Now().UnixNano()
	if v := os.Getenv("FETCH_SESSION_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	const nparts = 8
	s, tp := newWideServer(t, nparts)
	type clientPart struct{ offset, toldHW, toldStart int64 }
	model := map[int32]*clientPart{0: {0, -1, -1}}
	// at picks a fetch offset of p inside its log.
	at := func(p int32) int64 {
		start, hw := tp.Parts[p].LogStartOffset(), tp.Parts[p].HighWatermark()
		return start + rng.Int64N(hw-start+1)
	}
	var id, epoch int32
	newSession := func() {
		parts := map[int32]int64{}
		for p, cp := range model {
			parts[p] = cp.offset
		}
		resp := mustFetch(t, s, sessFetch(tp, 0, 0, parts))
		for p, op := range answered(t, resp) {
			model[p].toldHW, model[p].toldStart = op.HighWatermark, op.LogStartOffset
		}
		id, epoch = resp.SessionID, 1
		if id == 0 {
			t.Fatal("no session")
		}
	}
	newSession()
	for step := 0; step < 300; step++ {
		if rng.IntN(3) == 0 {
			p := rng.Int32N(nparts)
			if _, err := tp.Parts[p].Append(context.Background(), oneRecord(), 1); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(8) == 0 {
			// Below every client offset, so that no fetch goes out of
			// range.
			p := rng.Int32N(nparts)
			upTo := tp.Parts[p].HighWatermark()
			if cp := model[p]; cp != nil {
				upTo = cp.offset
			}
			if start := tp.Parts[p].LogStartOffset(); upTo > start {
				if _, err := tp.Parts[p].DeleteRecordsBefore(start + 1 + rng.Int64N(upTo-start)); err != nil {
					t.Fatal(err)
				}
			}
		}
		named := map[int32]int64{}
		var forget []int32
		for p := int32(0); p < nparts; p++ {
			cp := model[p]
			switch r := rng.IntN(10); {
			case cp == nil && r == 0:
				named[p] = at(p)
			case cp != nil && r == 0:
				forget = append(forget, p)
			case cp != nil && r < 3:
				named[p] = at(p)
			}
		}
		if rng.IntN(10) == 0 {
			before := sessionParts(s, id)
			bad := epoch + 1 + rng.Int32N(3)
			if rng.IntN(2) == 0 {
				bad = epoch - 1 - rng.Int32N(3)
			}
			if bad == 0 || bad == -1 {
				bad = epoch + 5
			}
			resp := mustFetch(t, s, sessFetch(tp, id, bad, named, forget...))
			if resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || !slices.Equal(sessionParts(s, id), before) {
				t.Fatalf("step %d: epoch %d (want %d): %v, session %v -> %v", step, bad, epoch,
					kerr.ErrorForCode(resp.ErrorCode), before, sessionParts(s, id))
			}
			continue
		}
		for p, off := range named {
			if model[p] == nil {
				model[p] = &clientPart{toldHW: -1, toldStart: -1}
			}
			model[p].offset = off
		}
		for _, p := range forget {
			delete(model, p)
		}
		resp := mustFetch(t, s, sessFetch(tp, id, epoch, named, forget...))
		epoch++
		if len(model) == 0 {
			if resp.SessionID != 0 || sessionParts(s, id) != nil {
				t.Fatalf("step %d: emptied session %d kept", step, id)
			}
			p := rng.Int32N(nparts)
			model[p] = &clientPart{tp.Parts[p].LogStartOffset(), -1, -1}
			newSession()
			continue
		}
		got := answered(t, resp)
		want := map[int32]bool{}
		for p, cp := range model {
			if hw := tp.Parts[p].HighWatermark(); cp.offset < hw || cp.toldHW != hw || cp.toldStart != tp.Parts[p].LogStartOffset() {
				want[p] = true
			}
		}
		for p := range got {
			if !want[p] {
				t.Fatalf("step %d: partition %d answered without news: %+v (client at %+v)", step, p, got[p], *model[p])
			}
		}
		for p := range want {
			op, ok := got[p]
			if !ok {
				t.Fatalf("step %d: partition %d left out (client at %+v, HW %d)", step, p, *model[p], tp.Parts[p].HighWatermark())
			}
			if (len(op.RecordBatches) > 0) != (model[p].offset < op.HighWatermark) {
				t.Fatalf("step %d: partition %d: %d record bytes from %d, HW %d", step, p, len(op.RecordBatches), model[p].offset, op.HighWatermark)
			}
			model[p].toldHW, model[p].toldStart = op.HighWatermark, op.LogStartOffset
		}
		var inModel []int32
		for p := range model {
			inModel = append(inModel, p)
		}
		slices.Sort(inModel)
		inSession := slices.Clone(sessionParts(s, id))
		slices.Sort(inSession)
		if !slices.Equal(inModel, inSession) {
			t.Fatalf("step %d: session holds %v, client %v", step, inSession, inModel)
		}
	}
	skipped := s.fetchSessions.skipped.Load()
	if skipped == 0 {
		t.Fatal("no incremental fetch left a quiet partition out of its read")
	}
	t.Logf("%d quiet partitions left out", skipped)
}

// TestFetchParkedLeaderChange: a parked consumer fetch whose partition
// stops being led here, or is led in a newer leader epoch than the
// client's, answers NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH when the
// change wakes it, instead of reading as a follower and parking again
// until max_wait. max_wait is 30 s and the test gives up after 10 s: a
// bound that tells "woken and answered" from "waited out max_wait", not a
// measure of speed.
func TestFetchParkedLeaderChange(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session bool
		change  func(s *Server, p *replica.Partition, epoch int32) error
		want    int16
	}{
		{"sessionless/led elsewhere", false, func(s *Server, p *replica.Partition, epoch int32) error {
			return p.MakeFollower(replication.LeaderAndIsr{Leader: s.nodeID + 1, LeaderEpoch: epoch + 1,
				ISR: []int32{s.nodeID + 1}, Replicas: []int32{s.nodeID, s.nodeID + 1}})
		}, kerr.NotLeaderForPartition.Code},
		{"session/led elsewhere", true, func(s *Server, p *replica.Partition, epoch int32) error {
			return p.MakeFollower(replication.LeaderAndIsr{Leader: s.nodeID + 1, LeaderEpoch: epoch + 1,
				ISR: []int32{s.nodeID + 1}, Replicas: []int32{s.nodeID, s.nodeID + 1}})
		}, kerr.NotLeaderForPartition.Code},
		{"sessionless/newer leader epoch", false, func(s *Server, p *replica.Partition, epoch int32) error {
			return p.MakeLeader(replication.LeaderAndIsr{Leader: s.nodeID, LeaderEpoch: epoch + 1,
				ISR: []int32{s.nodeID}, Replicas: []int32{s.nodeID}})
		}, kerr.FencedLeaderEpoch.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, tp := newWideServer(t, 2)
			p := tp.Parts[1]
			epoch := p.LeaderEpoch()
			req := sessFetch(tp, 0, -1, map[int32]int64{0: 0, 1: 0})
			if tc.session {
				id := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0})).SessionID
				req = sessFetch(tp, id, 1, nil)
			} else {
				for i := range req.Topics[0].Partitions {
					req.Topics[0].Partitions[i].CurrentLeaderEpoch = epoch
				}
			}
			req.MaxWaitMillis, req.MinBytes = 30_000, 1
			res := goFetchFlexible(t, s, req)
			waitParked(t, s, 1)
			if err := tc.change(s, p, epoch); err != nil {
				t.Fatal(err)
			}
			var resp *kmsg.FetchResponse
			select {
			case resp = <-res:
			case <-time.After(10 * time.Second):
				t.Fatal("the fetch was not answered when leadership changed: it waits out max_wait")
			}
			if resp == nil {
				t.Fatal("no response")
			}
			if got := answered(t, resp); got[1].ErrorCode != tc.want {
				t.Fatalf("partition 1: %v, want %v (%+v)", kerr.ErrorForCode(got[1].ErrorCode), kerr.ErrorForCode(tc.want), got)
			}
			checkNoWatchers(t, tp)
		})
	}
}

// TestFetchSessionLockPerSession: a session busy with a request (its mutex
// held, as for the O(session size) work of begin and finish) holds up
// neither another session's fetches, nor new sessions, nor eviction, nor
// the stats. The 10 s bound tells "done" from "blocked", nothing more.
func TestFetchSessionLockPerSession(t *testing.T) {
	s, tp := newWideServer(t, 2)
	busy := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{0: 0})).SessionID
	other := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{1: 0})).SessionID
	c := s.fetchSessions
	sb := cachedSession(s, busy)
	sb.mu.Lock()
	defer sb.mu.Unlock()

	done := make(chan error, 1)
	go func() {
		done <- func() error {
			if resp, err := fetchFlexible(s, sessFetch(tp, other, 1, map[int32]int64{0: 0})); err != nil || resp.ErrorCode != 0 {
				return fmt.Errorf("other session's fetch: %v, %+v", err, resp)
			}
			if resp, err := fetchFlexible(s, sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0})); err != nil || resp.SessionID == 0 {
				return fmt.Errorf("new session: %v, %+v", err, resp)
			}
			if n, parts, _ := c.stats(); n != 3 || parts != 5 {
				return fmt.Errorf("stats: %d sessions, %d partitions; want 3, 5", n, parts)
			}
			// Evicting the busy session, the smallest consumer's: its
			// size is the cache's to read.
			c.slots = 3
			if cacheSession(c, true, 1, time.Now()) == 0 {
				return fmt.Errorf("a follower's session evicted nothing")
			}
			return nil
		}()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked behind another session's mutex")
	}
	c.mu.Lock()
	gone := sb.gone
	c.mu.Unlock()
	if !gone {
		t.Fatal("the busy session, the smallest, was not evicted")
	}
}

// TestFetchSessionConcurrent runs sessions' fetches, new sessions that
// evict others, and closes all at once (run with -race), then checks the
// cache's bookkeeping: the partitions it counts are those its sessions
// hold.
func TestFetchSessionConcurrent(t *testing.T) {
	s, tp := newWideServer(t, 4)
	s.fetchSessions.slots = 3
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				parts := map[int32]int64{int32(g): 0}
				if g%2 == 0 {
					parts[int32(g+1)] = 0
				}
				id := mustFetch(t, s, sessFetch(tp, 0, 0, parts)).SessionID
				for epoch := int32(1); epoch < 4 && id != 0; epoch++ {
					resp := mustFetch(t, s, sessFetch(tp, id, epoch, map[int32]int64{int32((g + 2) % 4): 0}))
					if resp.ErrorCode != 0 {
						break // evicted by another goroutine's session
					}
				}
				if id != 0 {
					mustFetch(t, s, sessFetch(tp, id, -1, map[int32]int64{0: 0}))
				}
			}
		}()
	}
	wg.Wait()
	c := s.fetchSessions
	c.mu.Lock()
	defer c.mu.Unlock()
	held := 0
	for _, sess := range c.sessions {
		sess.mu.Lock()
		if sess.size != len(sess.parts) {
			t.Errorf("session %d: size %d, holds %d", sess.id, sess.size, len(sess.parts))
		}
		held += len(sess.parts)
		sess.mu.Unlock()
	}
	if c.parts != held || len(c.sessions) > c.slots {
		t.Fatalf("cache counts %d partitions in %d sessions; they hold %d", c.parts, len(c.sessions), held)
	}
}

// TestFetchSessionNoRoomNoBuild: a full fetch that finds no room in the
// cache (every slot holds a young consumer session as big) is not turned
// into a session first: asking costs nothing per partition.
func TestFetchSessionNoRoomNoBuild(t *testing.T) {
	const n = 10_000
	c := newFetchSessionCache(1)
	now := time.Now()
	if cacheSession(c, false, n, now) == 0 {
		t.Fatal("first session not created")
	}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	rt := kmsg.FetchRequestTopic{Topic: "u"}
	out := &fetchresp.Response{Topics: []fetchresp.Topic{{Name: "u"}}}
	for i := range n {
		rt.Partitions = append(rt.Partitions, kmsg.FetchRequestTopicPartition{Partition: int32(i)})
		out.Topics[0].Partitions = append(out.Topics[0].Partitions, fetchresp.Partition{Partition: int32(i)})
	}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	fc := fetchSessionCtx{kind: fetchFull, req: req}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	id := c.create(&fc, out, nil, now)
	runtime.ReadMemStats(&m1)
	if id != 0 {
		t.Fatal("a session made with no room")
	}
	// Building the session would take ~170 bytes a partition.
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 16*n {
		t.Fatalf("refusing a session of %d partitions allocated %d bytes", n, got)
	}
}

// TestFetchSessionBudget: all sessions together hold at most the cache's
// budget of partitions, whatever the slots: a full fetch that does not fit
// makes no session (the client keeps full fetches), an incremental one
// that would pass it closes its session (FETCH_SESSION_ID_NOT_FOUND), and
// sessions unused for sessionEvictAfter give way to a new one.
func TestFetchSessionBudget(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		s, tp := newWideServer(t, 8)
		s.fetchSessions.maxTotal = 5
		a := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0})).SessionID
		if a == 0 {
			t.Fatal("no session within the budget")
		}
		resp := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{3: 0, 4: 0, 5: 0}))
		if resp.SessionID != 0 || len(answered(t, resp)) != 3 {
			t.Fatalf("over the budget: session %d, %d answered", resp.SessionID, len(answered(t, resp)))
		}
		b := mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{3: 0, 4: 0})).SessionID
		if b == 0 {
			t.Fatal("no session filling the budget")
		}
		// Swapping a partition for another stays within it.
		if resp := mustFetch(t, s, sessFetch(tp, a, 1, map[int32]int64{5: 0}, 0)); resp.ErrorCode != 0 {
			t.Fatalf("swap at the budget: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		resp = mustFetch(t, s, sessFetch(tp, a, 2, map[int32]int64{6: 0}))
		if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || sessionParts(s, a) != nil {
			t.Fatalf("growing past the budget: %v, session kept %v", kerr.ErrorForCode(resp.ErrorCode), sessionParts(s, a) != nil)
		}
		if n, parts, _ := s.fetchSessions.stats(); n != 1 || parts != 2 {
			t.Fatalf("%d sessions, %d partitions; want 1, 2", n, parts)
		}
		if mustFetch(t, s, sessFetch(tp, 0, 0, map[int32]int64{5: 0, 6: 0, 7: 0})).SessionID == 0 {
			t.Fatal("no session in the room freed")
		}
	})
	t.Run("stale sessions give way", func(t *testing.T) {
		t0 := time.Unix(1_000_000, 0)
		c := newFetchSessionCache(10)
		c.maxTotal = 4
		old := cacheSession(c, false, 2, t0)
		young := cacheSession(c, false, 2, t0.Add(60*time.Second))
		if old == 0 || young == 0 {
			t.Fatal("sessions within the budget not created")
		}
		if id := cacheSession(c, false, 2, t0.Add(100*time.Second)); id != 0 {
			t.Fatalf("session %d made over the budget with none stale", id)
		}
		if id := cacheSession(c, false, 2, t0.Add(125*time.Second)); id == 0 {
			t.Fatal("a stale session did not give way")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.sessions[old] != nil || c.sessions[young] == nil || c.parts != 4 || c.evictions != 1 {
			t.Fatalf("old kept %v, young kept %v, %d partitions, %d evictions", c.sessions[old] != nil, c.sessions[young] != nil, c.parts, c.evictions)
		}
	})
}

// TestFetchSessionReauthorized: a session does not carry its creator's
// rights. Session ids are global to the broker, so another principal who
// names one is answered over the session's partitions, and every
// incremental fetch checks Read on them again: TOPIC_AUTHORIZATION_FAILED
// for a principal without it, and for the creator once its ACL is gone.
func TestFetchSessionReauthorized(t *testing.T) {
	s, tp := newWideServer(t, 2)
	a := acl.New(acl.Config{})
	allowAlice := acl.Binding{
		Pattern: acl.ResourcePattern{Type: acl.ResourceTopic, Name: tp.Name, PatternType: acl.PatternLiteral},
		Entry:   acl.Entry{Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow},
	}
	a.Load([]acl.Binding{allowAlice})
	s.az.authz = a
	as := func(principal string) *reqCtx {
		c := &conn{ip: netip.MustParseAddr("127.0.0.1")}
		c.auth.principal = principal
		return &reqCtx{conn: c}
	}
	fetchAs := func(rc *reqCtx, req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		resp, err := fetchFlexibleAs(s, rc, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if _, err := tp.Parts[0].Append(context.Background(), oneRecord(), 1); err != nil {
		t.Fatal(err)
	}

	resp := fetchAs(as("User:alice"), sessFetch(tp, 0, 0, map[int32]int64{0: 0, 1: 0}))
	id := resp.SessionID
	if id == 0 {
		t.Fatal("no session made")
	}
	for p, got := range answered(t, resp) {
		if got.ErrorCode != 0 {
			t.Fatalf("alice's full fetch, partition %d: %v", p, kerr.ErrorForCode(got.ErrorCode))
		}
	}
	if got := answered(t, fetchAs(as("User:bob"), sessFetch(tp, id, 1, nil))); len(got) != 2 ||
		got[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || got[1].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(got[0].RecordBatches) != 0 {
		t.Fatalf("bob's incremental fetch on alice's session: %+v", got)
	}
	a.Load(nil)
	if got := answered(t, fetchAs(as("User:alice"), sessFetch(tp, id, 2, nil))); len(got) != 2 ||
		got[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || got[1].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(got[0].RecordBatches) != 0 {
		t.Fatalf("alice's incremental fetch after her ACL went: %+v", got)
	}
}

// newQuietSession returns a server with a topic of n empty partitions and
// the id of a fetch session (next epoch 1) over all of them at offset 0:
// every partition is quiet after the answer that made it.
func newQuietSession(t *testing.T, n int32) (*Server, *replica.Topic, int32) {
	t.Helper()
	s, tp := newWideServer(t, n)
	all := map[int32]int64{}
	for p := range n {
		all[p] = 0
	}
	id := mustFetch(t, s, sessFetch(tp, 0, 0, all)).SessionID
	if id == 0 {
		t.Fatal("no session")
	}
	return s, tp, id
}

// TestFetchSessionQuietPartitions: an incremental fetch leaves out of its
// read the partitions that have nothing new since the session's last
// answer, and still answers every change to them: a fetch that waits
// watches them too (an append to one wakes it), a read_committed fetch
// does not trust what read_uncommitted ones left quiet, and a partition
// that closed answers its error. max_wait is 30 s and the test gives up
// after 10 s: a bound that tells "woken" from "waited out max_wait", not
// a measure of speed.
func TestFetchSessionQuietPartitions(t *testing.T) {
	const nparts = 8
	s, tp, id := newQuietSession(t, nparts)
	epoch := int32(1)
	next := func(named map[int32]int64) *kmsg.FetchRequest {
		req := sessFetch(tp, id, epoch, named)
		epoch++
		return req
	}
	skipped := func() int64 { return s.fetchSessions.skipped.Load() }

	// Nothing changed: every partition is left out, and the answer is
	// empty.
	before := skipped()
	if got := answered(t, mustFetch(t, s, next(nil))); len(got) != 0 {
		t.Fatalf("nothing changed, answered %v", slices.Sorted(maps.Keys(got)))
	}
	if n := skipped() - before; n != nparts {
		t.Fatalf("%d of %d quiet partitions left out", n, nparts)
	}

	// A fetch that waits: an append to a quiet partition wakes it.
	req := next(nil)
	req.MaxWaitMillis, req.MinBytes = 30_000, 1
	res := goFetchFlexible(t, s, req)
	waitParked(t, s, 1)
	if _, err := tp.Parts[5].Append(context.Background(), oneRecord(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-res:
		got := answered(t, resp)
		if op, ok := got[5]; len(got) != 1 || !ok || len(op.RecordBatches) == 0 || op.HighWatermark != 1 {
			t.Fatalf("woken by an append to partition 5: answered %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an append to a quiet partition did not wake the fetch")
	}

	// Partition 5 has a record past the client's offset: it is read and
	// answered again; the others stay out.
	before = skipped()
	if got := answered(t, mustFetch(t, s, next(nil))); len(got) != 1 || len(got[5].RecordBatches) == 0 {
		t.Fatalf("answered %v, want partition 5 with its record", slices.Sorted(maps.Keys(got)))
	}
	if n := skipped() - before; n != nparts-1 {
		t.Fatalf("%d quiet partitions left out, want %d", n, nparts-1)
	}

	// read_committed: what read_uncommitted fetches left quiet is read
	// again (the same here: no transaction), and the next read_committed
	// fetch trusts its own answers.
	req = next(map[int32]int64{5: 1})
	req.IsolationLevel = 1
	before = skipped()
	if got := answered(t, mustFetch(t, s, req)); len(got) != 0 {
		t.Fatalf("read_committed answered %v, want nothing new", slices.Sorted(maps.Keys(got)))
	}
	if n := skipped() - before; n != 0 {
		t.Fatalf("a read_committed fetch left out %d partitions read_uncommitted ones left quiet", n)
	}
	req = next(nil)
	req.IsolationLevel = 1
	before = skipped()
	mustFetch(t, s, req)
	if n := skipped() - before; n != nparts {
		t.Fatalf("the second read_committed fetch left out %d of %d", n, nparts)
	}

	// A quiet partition that closes answers its error.
	if err := tp.Parts[2].Close(); err != nil {
		t.Fatal(err)
	}
	got := answered(t, mustFetch(t, s, next(nil)))
	if op, ok := got[2]; len(got) != 1 || !ok || op.ErrorCode == 0 {
		t.Fatalf("partition 2 closed: answered %+v", got)
	}
}

// TestFetchSessionQuietRace: a client racing itself over a session of
// quiet partitions (requests with the same epoch, fetches that wait and
// widen to every partition, appends and log start moves beside them)
// gets answers or INVALID_FETCH_SESSION_EPOCH, never anything else; under
// -race it checks that a request reads the session's partitions (wake)
// under the session's mutex while another one updates them.
func TestFetchSessionQuietRace(t *testing.T) {
	const nparts = 8
	s, tp, id := newQuietSession(t, nparts)
	epochOf := func() int32 {
		ss := cachedSession(s, id)
		ss.mu.Lock()
		defer ss.mu.Unlock()
		return ss.epoch
	}
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 150 {
				named := map[int32]int64{}
				if rng.IntN(3) == 0 {
					p := rng.Int32N(nparts)
					named[p] = tp.Parts[p].HighWatermark()
				}
				req := sessFetch(tp, id, epochOf(), named)
				if rng.IntN(2) == 0 {
					req.MaxWaitMillis, req.MinBytes = 2, 1
				}
				resp, err := fetchFlexible(s, req)
				switch {
				case err != nil:
					t.Error(err)
					return
				case resp.ErrorCode == 0:
					ok.Add(1)
				case resp.ErrorCode == kerr.InvalidFetchSessionEpoch.Code:
					refused.Add(1)
				default:
					t.Errorf("racing fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 300 {
			p := int32(i % nparts)
			if _, err := tp.Parts[p].Append(context.Background(), oneRecord(), 1); err != nil {
				t.Error(err)
				return
			}
			if i%50 == 0 {
				if _, err := tp.Parts[p].DeleteRecordsBefore(-1); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	wg.Wait()
	if ok.Load() == 0 || s.fetchSessions.skipped.Load() == 0 {
		t.Fatalf("%d answered, %d refused, %d quiet partitions left out: the race never ran the quiet path",
			ok.Load(), refused.Load(), s.fetchSessions.skipped.Load())
	}
	t.Logf("%d answered, %d refused, %d quiet partitions left out", ok.Load(), refused.Load(), s.fetchSessions.skipped.Load())
}
