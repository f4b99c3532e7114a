package server

// Share groups through franz-go's kgo.ShareGroup client, end to end on the
// data path. ShareGroupHeartbeat is the membership side's (another
// package); this test serves a stand-in of its own, registered only in
// this test's server: every member gets every partition of the topics it
// subscribes to (what Kafka's simple assignor does with fewer members than
// partitions... and more: share partitions are shared).

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/share"
)

// testHeartbeats is the stand-in ShareGroupHeartbeat: members join the
// test membership with their subscriptions, and leave it.
type testHeartbeats struct {
	members *testShareMembers
	mu      sync.Mutex
	subs    map[string][]string
}

func (h *testHeartbeats) handle(s *Server, _ *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	member := req.MemberID
	if member == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return kresp(resp), nil
	}
	resp.MemberID = &member
	resp.HeartbeatIntervalMillis = 1000
	h.mu.Lock()
	defer h.mu.Unlock()
	h.members.mu.Lock()
	defer h.members.mu.Unlock()
	if req.MemberEpoch == -1 {
		delete(h.members.members, member)
		delete(h.subs, member)
		resp.MemberEpoch = -1
		return kresp(resp), nil
	}
	h.members.members[member] = true
	resp.MemberEpoch = max(req.MemberEpoch, 1)
	if req.SubscribedTopicNames == nil && req.MemberEpoch != 0 {
		return kresp(resp), nil // unchanged
	}
	if req.SubscribedTopicNames != nil {
		h.subs[member] = req.SubscribedTopicNames
	}
	a := &kmsg.ShareGroupHeartbeatResponseAssignment{}
	for _, name := range h.subs[member] {
		t := s.rm.Topic(name)
		if t == nil {
			continue
		}
		tp := kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{TopicID: t.ID}
		for i := range t.Parts {
			tp.Partitions = append(tp.Partitions, int32(i))
		}
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	resp.Assignment = a
	return kresp(resp), nil
}

func TestShareGroupKgoAcceptReleaseReject(t *testing.T) {
	t.Parallel() // waits on lock, session and heartbeat timers, not the CPU
	hb := &testHeartbeats{subs: map[string][]string{}}
	e := startShareServer(t, 0, nil, func(s *Server) {
		hb.members = s.share.members.(*testShareMembers)
		s.apis = maps.Clone(s.apis)
		s.apis[76] = api{1, 1, hb.handle}
	})
	ctx := context.Background()
	if ct, err := kadm.NewClient(e.admin).CreateTopic(ctx, 3, 1, nil, "q3"); err != nil || ct.Err != nil {
		t.Fatalf("create: %v %v", err, ct.Err)
	}
	const n = 60
	for i := range n {
		r := &kgo.Record{Topic: "q3", Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))}
		if err := e.admin.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu         sync.Mutex
		accepted   = map[int]int32{} // value -> delivery count when accepted
		acceptedN  = map[int]int{}
		deliveries = map[int][]int32{}
	)
	want := 0
	for i := range n {
		if i%7 != 0 {
			want++
		}
	}
	done := make(chan struct{})
	var closeDone sync.Once
	var wg sync.WaitGroup
	for m := range 3 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ShareGroup("g"), kgo.ConsumeTopics("q3"),
			kgo.ClientID(fmt.Sprintf("member-%d", m)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for range 3000 { // bounded
				select {
				case <-done:
					return
				default:
				}
				pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				fs := cl.PollRecords(pctx, 100)
				cancel()
				fs.EachRecord(func(r *kgo.Record) {
					v, _ := strconv.Atoi(string(r.Value))
					mu.Lock()
					defer mu.Unlock()
					deliveries[v] = append(deliveries[v], r.DeliveryCount())
					switch {
					case v%7 == 0:
						r.Ack(kgo.AckReject)
					case v%5 == 0 && r.DeliveryCount() == 1:
						r.Ack(kgo.AckRelease)
					default:
						r.Ack(kgo.AckAccept)
						accepted[v] = r.DeliveryCount()
						acceptedN[v]++
						if len(accepted) == want {
							closeDone.Do(func() { close(done) })
						}
					}
				})
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(accepted) != want {
		t.Fatalf("accepted %d records, want %d (deliveries %v)", len(accepted), want, deliveries)
	}
	for v, c := range acceptedN {
		if c != 1 {
			t.Errorf("record %d accepted %d times", v, c)
		}
	}
	for v := range n {
		switch {
		case v%7 == 0:
			if len(deliveries[v]) != 1 {
				t.Errorf("rejected record %d delivered %v", v, deliveries[v])
			}
		case v%5 == 0:
			if accepted[v] != 2 {
				t.Errorf("released record %d accepted at delivery %d, want 2", v, accepted[v])
			}
		}
	}
}

// TestShareGroupKgoSilentMemberLosesRecords: a member that holds records
// and stops polling loses them to another after the group's lock duration
// (on the server's fake clock), delivered a second time.
func TestShareGroupKgoSilentMemberLosesRecords(t *testing.T) {
	t.Parallel() // waits on lock, session and heartbeat timers, not the CPU
	hb := &testHeartbeats{subs: map[string][]string{}}
	e := startShareServer(t, 0, func(c *ShareGroupConfig) { c.RecordLockDuration = 20 * time.Second }, func(s *Server) {
		hb.members = s.share.members.(*testShareMembers)
		s.apis = maps.Clone(s.apis)
		s.apis[76] = api{1, 1, hb.handle}
	})
	ctx := context.Background()
	if ct, err := kadm.NewClient(e.admin).CreateTopic(ctx, 1, 1, nil, "q1"); err != nil || ct.Err != nil {
		t.Fatalf("create: %v %v", err, ct.Err)
	}
	for i := range 5 {
		if err := e.admin.ProduceSync(ctx, &kgo.Record{Topic: "q1", Partition: 0, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(cl *kgo.Client, want, tries int) []*kgo.Record {
		var got []*kgo.Record
		for range tries { // bounded
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := cl.PollRecords(pctx, 100)
			cancel()
			got = append(got, fs.Records()...)
			if len(got) >= want {
				break
			}
		}
		return got
	}
	silent, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ShareGroup("g"), kgo.ConsumeTopics("q1"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if got := poll(silent, 5, 200); len(got) != 5 {
		t.Fatalf("silent member got %d records", len(got))
	}
	// It holds all five and never polls again; paused, its client does not
	// fetch in the background either (else it takes the records back once
	// their locks expire, and the other member sees none).
	silent.PauseFetchTopics("q1")
	other, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ShareGroup("g"), kgo.ConsumeTopics("q1"), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got := poll(other, 1, 5); len(got) != 0 {
		t.Fatalf("other member got %d records while they were locked", len(got))
	}
	e.clock.add(20 * time.Second)
	got := poll(other, 5, 200)
	if len(got) != 5 {
		t.Fatalf("other member got %d records after the lock duration, want 5", len(got))
	}
	for _, r := range got {
		if r.DeliveryCount() != 2 {
			t.Errorf("record %s delivered with count %d, want 2", r.Value, r.DeliveryCount())
		}
	}
}

// TestShareGroupKgoDeliveryLimit: a record always released is delivered
// exactly share.delivery.count.limit times, then archived.
func TestShareGroupKgoDeliveryLimit(t *testing.T) {
	t.Parallel() // waits on lock, session and heartbeat timers, not the CPU
	hb := &testHeartbeats{subs: map[string][]string{}}
	e := startShareServer(t, 0, func(c *ShareGroupConfig) { c.DeliveryCountLimit = 3 }, func(s *Server) {
		hb.members = s.share.members.(*testShareMembers)
		s.apis = maps.Clone(s.apis)
		s.apis[76] = api{1, 1, hb.handle}
	})
	ctx := context.Background()
	if ct, err := kadm.NewClient(e.admin).CreateTopic(ctx, 1, 1, nil, "q1"); err != nil || ct.Err != nil {
		t.Fatalf("create: %v %v", err, ct.Err)
	}
	if err := e.admin.ProduceSync(ctx, &kgo.Record{Topic: "q1", Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ShareGroup("g"), kgo.ConsumeTopics("q1"), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var counts []int32
	for i := 0; i < 400 && len(counts) < 3; i++ { // bounded
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollRecords(pctx, 10)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			counts = append(counts, r.DeliveryCount())
			r.Ack(kgo.AckRelease)
		})
	}
	// A few more polls send the last release and would see a fourth
	// delivery.
	for range 5 {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollRecords(pctx, 10)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			counts = append(counts, r.DeliveryCount())
			r.Ack(kgo.AckRelease)
		})
	}
	if fmt.Sprint(counts) != "[1 2 3]" {
		t.Fatalf("delivery counts %v, want [1 2 3]", counts)
	}
	h := e.s.share.parts.Each
	archived := false
	h("g", func(_ share.Key, held *share.Held) {
		held.Lock()
		archived = held.P.Start() == 1
		held.Unlock()
	})
	if !archived {
		t.Fatal("the record was not archived after its last delivery")
	}
}
