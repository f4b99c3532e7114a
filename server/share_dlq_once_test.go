package server

// Dead letters exactly once across a restart (share_dlq.go,
// sharecoord/dlq.go): the state that archives rejected records is written
// with their dead letters as a pending chunk, the chunk is appended, and
// that it was appended is written only with the share partition's next
// state. A restart in between (as a crash right after the append would
// leave it) appends the chunk again when the share partition is opened;
// the dead-letter partition answers it as a duplicate of the same
// producer and sequences, so each rejected record is there once.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice/sluice/group/share"
)

func TestShareDeadLettersOnceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	members := &testShareMembers{members: map[string]bool{"a": true, "b": true}}
	clock := &fakeNow{t: time.Now()}
	ctx := context.Background()
	e, stop := startShareServerIn(t, dir, members, clock)
	members.cfg.DLQTopic = "dlq.g"
	adm := kadm.NewClient(e.admin)
	ct, err := adm.CreateTopic(ctx, 1, 1, nil, "sq")
	if err != nil || ct.Err != nil {
		t.Fatalf("create topic: %v %v", err, ct.Err)
	}
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "dlq.g"); err != nil || r.Err != nil {
		t.Fatalf("create dlq topic: %v %v", err, r.Err)
	}
	e.topicID = ct.ID
	e.produce(4, 0)
	dlqEnd := func(adm *kadm.Client) int64 {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, "dlq.g")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := ends.Lookup("dlq.g", 0)
		return o.Offset
	}
	wantRanges(t, acquired(t, e.fetch(e.admin, sfetch{member: "a", max: 10})), [3]int64{0, 3, 1})
	if r := e.ack(e.admin, "a", 1, ackBatch(0, 3, 3)); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reject: %d", r.Topics[0].Partitions[0].ErrorCode)
	}
	if n := dlqEnd(adm); n != 4 {
		t.Fatalf("%d dead letters after rejecting 4 records", n)
	}
	// Durably, the chunk is still pending: the window a crash after the
	// append would leave.
	k := share.Key{Group: "g", Topic: ct.ID, Partition: 0}
	st, ok, err := e.s.share.coord.ReadState(ctx, k, -1)
	if err != nil || !ok || st.DLQ == nil || len(st.DLQ.Pending) != 1 || len(st.DLQ.Pending[0].Letters) != 4 {
		t.Fatalf("written dead-letter state %+v (%v %v), want one pending chunk of 4", st.DLQ, ok, err)
	}
	stop()

	e, stop = startShareServerIn(t, dir, members, clock)
	defer stop()
	members.cfg.DLQTopic = "dlq.g"
	e.topicID = ct.ID
	adm = kadm.NewClient(e.admin)
	// Opening the share partition appends the pending chunk again: a
	// duplicate, nothing written.
	if got := fetchAfterRestart(t, e); len(got) != 0 {
		t.Fatalf("rejected records delivered again: %v", got)
	}
	if n := dlqEnd(adm); n != 4 {
		t.Fatalf("%d dead letters after the restart, want 4", n)
	}
	// A later rejection is dead-lettered, once.
	e.produce(1, 4)
	wantRanges(t, acquired(t, e.fetch(e.admin, sfetch{member: "a", max: 10})), [3]int64{4, 4, 1})
	if r := e.ack(e.admin, "a", 1, ackBatch(4, 4, 3)); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reject: %d", r.Topics[0].Partitions[0].ErrorCode)
	}
	if n := dlqEnd(adm); n != 5 {
		t.Fatalf("%d dead letters after a fifth rejection, want 5", n)
	}
}
