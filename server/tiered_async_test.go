package server

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/tiered"
)

// stuckRSM is the local-directory backend whose segment reads wait until
// release is closed: a store that stopped answering.
type stuckRSM struct {
	*tiered.LocalDir
	release chan struct{}
	waiting atomic.Int32
}

func (s *stuckRSM) FetchLogSegment(md tiered.SegmentMetadata, pos int64) (io.ReadCloser, error) {
	s.waiting.Add(1)
	<-s.release
	return s.LocalDir.FetchLogSegment(md, pos)
}

// TestTieredRemoteReadDoesNotBlockFetch: with the store hanging on a
// segment read, a fetch of remote offsets answers no records and no error
// once remote.fetch.max.wait.ms is over, instead of waiting for the store,
// and a fetch of local offsets on the same connection is answered; once
// the store answers, the read that went on is served to the next fetch.
// (Before, the read ran inline on the connection's goroutine: the fetch,
// and every request of the connection after it, waited for the store.)
func TestTieredRemoteReadDoesNotBlockFetch(t *testing.T) {
	dir := t.TempDir()
	ld, err := tiered.NewLocalDir(dir + "/remote")
	if err != nil {
		t.Fatal(err)
	}
	rsm := &stuckRSM{LocalDir: ld, release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(rsm.release)
		}
	}
	b := startTieredRSM(t, dir, rsm)
	t.Cleanup(release) // before the broker's close (cleanups run last first)
	const topic, n = "stuck", 120
	createSmallTiered(t, kadm.NewClient(mustClient(t, b.addr)), topic)
	produceTiered(t, b.addr, topic, 0, n)
	b.s.tiered.RunOnce()
	cl := mustClient(t, b.addr)
	local, _ := listOffset(t, cl, topic, -4)
	if local <= 0 {
		t.Fatalf("local log start %d: nothing tiered", local)
	}

	type answer struct {
		code int16
		n    int
	}
	fetch := func(offset int64) answer {
		got := make(chan answer, 1)
		go func() {
			code, k := b.fetchCodeOnce(t, cl, topic, offset)
			got <- answer{code, k}
		}()
		select {
		case a := <-got:
			return a
		case <-time.After(2 * time.Minute): // a bound on a hang, not a timing
			release()
			t.Fatalf("a fetch at %d waited for the stuck store", offset)
			return answer{}
		}
	}
	if a := fetch(0); a.code != 0 || a.n != 0 {
		t.Fatalf("remote fetch with the store stuck: code %d, %d bytes; want none and no error", a.code, a.n)
	}
	if rsm.waiting.Load() == 0 {
		t.Fatal("the remote read never reached the store")
	}
	if a := fetch(local); a.code != 0 || a.n == 0 {
		t.Fatalf("local fetch on the same connection: code %d, %d bytes", a.code, a.n)
	}
	release()
	if code, k := b.fetchCode(t, cl, topic, 0); code != 0 || k == 0 {
		t.Fatalf("remote fetch once the store answers: code %d, %d bytes", code, k)
	}
	consumeAll(t, b.addr, topic, n)
}

// TestTieredPendingRemoteReadAnswersNow: a fetch with a long max wait
// whose remote read is still in progress after remote.fetch.max.wait.ms
// answers then (no records, no error) instead of parking for its whole
// max wait, since nothing would wake it when the read completes.
func TestTieredPendingRemoteReadAnswersNow(t *testing.T) {
	dir := t.TempDir()
	ld, err := tiered.NewLocalDir(dir + "/remote")
	if err != nil {
		t.Fatal(err)
	}
	rsm := &stuckRSM{LocalDir: ld, release: make(chan struct{})}
	b := startTieredRSM(t, dir, rsm)
	t.Cleanup(func() { close(rsm.release) })
	const topic, n = "pending", 120
	createSmallTiered(t, kadm.NewClient(mustClient(t, b.addr)), topic)
	produceTiered(t, b.addr, topic, 0, n)
	b.s.tiered.RunOnce()
	cl := mustClient(t, b.addr)
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	req.MaxWaitMillis, req.MinBytes = 10*60*1000, 1 // ten minutes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, b.s.rm.Topic(topic).ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 0, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	got := make(chan *kmsg.FetchResponse, 1)
	go func() {
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	select {
	case resp := <-got:
		if resp == nil {
			return
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
			t.Fatalf("code %d, %d bytes; want none and no error", p.ErrorCode, len(p.RecordBatches))
		}
	case <-time.After(2 * time.Minute): // a bound on a hang, not a timing
		t.Fatal("the fetch parked for its max wait with a remote read pending")
	}
}

// TestTieredTopicDeletionSweepsOrphans: an object of the partition that no
// metadata names (a copy that timed out against a hung store and landed
// after its cleanup) is deleted with the topic, so deletion leaves the
// remote tier empty.
func TestTieredTopicDeletionSweepsOrphans(t *testing.T) {
	dir := t.TempDir()
	b := startTiered(t, dir)
	const topic, n = "orphans", 60
	adm := kadm.NewClient(mustClient(t, b.addr))
	createSmallTiered(t, adm, topic)
	produceTiered(t, b.addr, topic, 0, n)
	b.s.tiered.RunOnce()
	files := b.remoteFiles(t)
	if len(files) == 0 {
		t.Fatal("nothing tiered")
	}
	orphan := filepath.Join(filepath.Dir(files[0]), fmt.Sprintf("%020d-%s.log", 0, tiered.UUID{0xee, 1, 2, 3}))
	if err := os.WriteFile(orphan, []byte("landed late"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteTopics(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600 && len(b.remoteFiles(t)) > 0; i++ {
		b.s.tiered.RunOnce()
		time.Sleep(10 * time.Millisecond)
	}
	if left := b.remoteFiles(t); len(left) > 0 {
		t.Fatalf("left after the topic's deletion: %v", left)
	}
}
