package server

// Share-partition state across a restart of a single node: what was
// acknowledged is never delivered again, what was not is, with its
// delivery counted (sharecoord, __share_group_state).

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	_ "github.com/sluice/sluice/segment"
)

// startShareServerIn starts a listening single node on the segment backend
// in dir, serving share groups; stop closes it.
func startShareServerIn(t *testing.T, dir string, members *testShareMembers) (env *shareEnv, stop func()) {
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
		ClusterID: "share", AdvertisedHost: "127.0.0.1", ShareMembership: members})
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
	env = &shareEnv{t: t, s: s, addr: ln.Addr().String(), members: members}
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
	e, stop := startShareServerIn(t, dir, members)
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

	e, stop = startShareServerIn(t, dir, members)
	defer stop()
	e.topicID = ct.ID
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
	wantRanges(t, got, [3]int64{5, 5, 2})
}
