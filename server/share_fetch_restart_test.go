package server

// Share-partition state across a restart of a single node: what was
// acknowledged is never delivered again, what was not is, with its
// delivery counted (sharecoord, __share_group_state).

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/metastore"
	_ "github.com/sluice/sluice/segment"
)

// startShareServerIn starts a listening single node on the segment backend
// in dir, serving share groups; stop closes it.
func startShareServerIn(t *testing.T, dir string, members *testShareMembers, clock *fakeNow) (env *shareEnv, stop func()) {
	t.Helper()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	store, err := engine.Open("segment", engine.Options{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: config.Default(), Logger: slog.New(slog.DiscardHandler), Meta: meta, Store: store,
		ClusterID: "share", AdvertisedHost: "127.0.0.1", ShareMembership: members, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	members.cfg = s.defaultShareGroupConfig()
	members.cfg.AutoOffsetReset = "earliest"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.advPort = int32(ln.Addr().(*net.TCPAddr).Port)
	s.self.Port = s.advPort
	go s.Serve(ln)
	env = &shareEnv{t: t, s: s, addr: ln.Addr().String(), members: members, clock: clock}
	var clients []*kgo.Client
	client := func() *kgo.Client {
		cl := env.client()
		clients = append(clients, cl)
		return cl
	}
	env.admin = client()
	stop = func() {
		for _, cl := range clients {
			cl.Close()
		}
		s.Shutdown()
		s.Close()
		store.Close()
		meta.Close()
	}
	return env, stop
}

func TestShareStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	members := &testShareMembers{members: map[string]bool{"a": true, "b": true}}
	clock := &fakeNow{t: time.Now()}
	e, stop := startShareServerIn(t, dir, members, clock)
	ctx := context.Background()
	ct, err := kadm.NewClient(e.admin).CreateTopic(ctx, 1, 1, nil, "sq")
	if err != nil || ct.Err != nil {
		t.Fatalf("create topic: %v %v", err, ct.Err)
	}
	e.topicID = ct.ID
	e.produce(6, 0)
	a := e.admin
	wantRanges(t, acquired(t, e.fetch(a, sfetch{member: "a", max: 10})), [3]int64{0, 5, 1})
	// Accept 0-2 and 4, reject 3; 5 stays acquired.
	r := e.ack(a, "a", 1, ackBatch(0, 2, 1), ackBatch(3, 3, 3), ackBatch(4, 4, 1))
	if c := r.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("ack: %d", c)
	}
	stop()

	e, stop = startShareServerIn(t, dir, members, clock)
	defer stop()
	e.topicID = ct.ID
	wantRanges(t, fetchAfterRestart(t, e), [3]int64{5, 5, 2})
}

// fetchAfterRestart is b's first fetch after a restart, retried (bounded)
// while the state's partition loads.
func fetchAfterRestart(t *testing.T, e *shareEnv) [][3]int64 {
	t.Helper()
	var got [][3]int64
	// The state's partition loads in the background: retry (bounded)
	// while it answers an error.
	for range 200 {
		resp := e.fetch(e.admin, sfetch{member: "b", max: 10})
		if resp.ErrorCode == 0 && (len(resp.Topics) == 0 || resp.Topics[0].Partitions[0].ErrorCode == 0) {
			got = acquired(t, resp)
			break
		}
		e.fetch(e.admin, sfetch{member: "b", epoch: -1})
		time.Sleep(10 * time.Millisecond)
	}
	return got
}

// TestShareExpiryIsWritten: a delivery whose lock expired is written at
// once (a crash before any acknowledgement still counts it).
func TestShareExpiryIsWritten(t *testing.T) {
	members := &testShareMembers{members: map[string]bool{"a": true, "b": true}}
	clock := &fakeNow{t: time.Now()}
	e, stop := startShareServerIn(t, t.TempDir(), members, clock)
	defer stop()
	ct, err := kadm.NewClient(e.admin).CreateTopic(context.Background(), 1, 1, nil, "sq")
	if err != nil || ct.Err != nil {
		t.Fatalf("create topic: %v %v", err, ct.Err)
	}
	e.topicID = ct.ID
	e.produce(2, 0)
	wantRanges(t, acquired(t, e.fetch(e.admin, sfetch{member: "a", max: 10})), [3]int64{0, 1, 1})
	clock.add(time.Hour)
	wantRanges(t, acquired(t, e.fetch(e.client(), sfetch{member: "b", max: 10})), [3]int64{0, 1, 2})
	snap, ok, err := e.s.share.coord.Read(context.Background(), share.Key{Group: "g", Topic: ct.ID, Partition: 0})
	if err != nil || !ok {
		t.Fatalf("no state written: %v %v", ok, err)
	}
	want := []share.StateBatch{{First: 0, Last: 1, DeliveryState: share.Available, DeliveryCount: 1}}
	if snap.StartOffset != 0 || !slices.Equal(snap.Batches, want) {
		t.Fatalf("written %+v, want start 0 and %v", snap, want)
	}
}

// TestShareDeleteGroup: a deleted group's state is gone, in memory and on
// disk: after a restart the group starts over at share.auto.offset.reset.
func TestShareDeleteGroup(t *testing.T) {
	dir := t.TempDir()
	members := &testShareMembers{members: map[string]bool{"a": true, "b": true}}
	clock := &fakeNow{t: time.Now()}
	e, stop := startShareServerIn(t, dir, members, clock)
	ct, err := kadm.NewClient(e.admin).CreateTopic(context.Background(), 1, 1, nil, "sq")
	if err != nil || ct.Err != nil {
		t.Fatalf("create topic: %v %v", err, ct.Err)
	}
	e.topicID = ct.ID
	e.produce(3, 0)
	wantRanges(t, acquired(t, e.fetch(e.admin, sfetch{member: "a", max: 10})), [3]int64{0, 2, 1})
	e.ack(e.admin, "a", 1, ackBatch(0, 2, 1))
	starts, err := e.s.groupShareKeys(context.Background(), "g", [16]byte{})
	if k := (share.Key{Group: "g", Topic: ct.ID}); err != nil || starts[k].StartOffset != 3 {
		t.Fatalf("start offsets %v %v", starts, err)
	}
	if err := e.s.shareDeleteGroup(context.Background(), "g"); err != nil {
		t.Fatal(err)
	}
	stop()
	e, stop = startShareServerIn(t, dir, members, clock)
	defer stop()
	e.topicID = ct.ID
	wantRanges(t, fetchAfterRestart(t, e), [3]int64{0, 2, 1})
}
