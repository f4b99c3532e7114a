package server_test

// A share group's own configs on the data path, end to end: set with
// IncrementalAlterConfigs on the GROUP resource, read by the coordinator,
// applied by ShareFetch: share.isolation.level (through kgo.ShareGroup),
// share.partition.max.record.locks and share.auto.offset.reset=by_duration
// (through raw ShareFetch).

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

// TestShareGroupIsolationLevelKgo: on one topic holding an aborted and a
// committed transaction, a group with share.isolation.level=read_committed
// is delivered the committed records only, a read_uncommitted group (the
// default) every record; both accept all they get and end with nothing
// left to deliver (lag 0: the aborted records are archived, not pending).
func TestShareGroupIsolationLevelKgo(t *testing.T) {
	b := brokertest.Start(t, "memory", fastShareGroups)
	ctx := testCtx(t, 2*time.Minute)
	cl := newClient(t, b.Addr())
	const topic = "iso"
	if ct, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil || ct.Err != nil {
		t.Fatalf("create: %v %v", err, ct.Err)
	}
	earliest, rc := "earliest", "read_committed"
	for g, ops := range map[string][]groupOp{
		"iso-rc": {{kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", &earliest}, {kmsg.IncrementalAlterConfigOpSet, "share.isolation.level", &rc}},
		"iso-ru": {{kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", &earliest}},
	} {
		if c, msg := alterGroup(t, ctx, cl, g, false, ops...); c != 0 {
			t.Fatalf("%s configs: %s %s", g, errName(c), msg)
		}
	}
	txcl := newClient(t, b.Addr(), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("iso-tx"))
	for _, tx := range []struct {
		values []string
		end    kgo.TransactionEndTry
	}{{[]string{"a1", "a2"}, kgo.TryAbort}, {[]string{"c1", "c2"}, kgo.TryCommit}} {
		if err := txcl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range tx.values {
			if err := txcl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txcl.EndTransaction(ctx, tx.end); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(group string, want int) []string {
		t.Helper()
		m := shareMember(t, b.Addr(), group, topic)
		defer m.Close()
		var got []string
		for i := 0; i < 100 && len(got) < want; i++ { // bounded
			poll(ctx, m).EachRecord(func(r *kgo.Record) {
				got = append(got, string(r.Value))
				r.Ack(kgo.AckAccept)
			})
		}
		if err := m.FlushAcks(ctx); err != nil {
			t.Fatalf("%s: flush acks: %v", group, err)
		}
		slices.Sort(got)
		return got
	}
	if got := consume("iso-rc", 2); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Fatalf("read_committed delivered %q, want the committed records only", got)
	}
	if got := consume("iso-ru", 4); !slices.Equal(got, []string{"a1", "a2", "c1", "c2"}) {
		t.Fatalf("read_uncommitted delivered %q, want every record", got)
	}
	// Nothing is left for either group: the aborted records were archived
	// (read_committed), the transaction markers acknowledged as gaps.
	for _, g := range []string{"iso-rc", "iso-ru"} {
		lag := int64(-2)
		for range 50 { // bounded: the client acknowledges markers (gaps) after the poll that held them
			o, err := kadm.NewClient(cl).DescribeShareGroupOffsets(ctx, g)
			if err == nil {
				if p, ok := o[g].Offsets.Lookup(topic, 0); ok {
					lag = p.Lag
				}
			}
			if lag == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if lag != 0 {
			t.Errorf("%s: lag %d after accepting everything delivered, want 0", g, lag)
		}
	}
}

// rawShare is one member fetching one partition with raw ShareFetch.
type rawShare struct {
	t      *testing.T
	ctx    context.Context
	cl     *kgo.Client
	group  string
	member string
	tid    [16]byte
	epoch  int32
}

func joinRawShare(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, tid [16]byte) *rawShare {
	t.Helper()
	m := shareMemberID()
	epoch := int32(0)
	topics := []string{topic}
	for i := 0; i < 100; i++ { // bounded
		r, err := shareHeartbeat(ctx, cl, group, m, epoch, topics)
		if err != nil || r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v %+v", err, r)
		}
		epoch, topics = r.MemberEpoch, nil
		if r.Assignment != nil && len(r.Assignment.TopicPartitions) > 0 {
			return &rawShare{t: t, ctx: ctx, cl: cl, group: group, member: m, tid: tid}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("never assigned the partition")
	return nil
}

// fetch fetches up to max records (with acks piggy-backed) and returns
// how many it acquired, and their first and last offsets.
func (r *rawShare) fetch(max int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (n int, first, last int64) {
	r.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = &r.group, &r.member
	req.ShareSessionEpoch, req.MaxRecords, req.MaxWaitMillis = r.epoch, max, 0
	req.MaxBytes, req.BatchSize = 1<<30, max
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = r.tid
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.AcknowledgementBatches = acks
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(r.ctx, r.cl)
	if err != nil || resp.ErrorCode != 0 {
		r.t.Fatalf("share fetch: %v %+v", err, resp)
	}
	r.epoch++
	first, last = -1, -1
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 {
				r.t.Fatalf("share fetch partition: %s / ack %s", errName(p.ErrorCode), errName(p.AcknowledgeErrorCode))
			}
			for _, a := range p.AcquiredRecords {
				if first < 0 {
					first = a.FirstOffset
				}
				last = a.LastOffset
				n += int(a.LastOffset - a.FirstOffset + 1)
			}
		}
	}
	return n, first, last
}

// TestShareGroupMaxRecordLocksAndByDuration: the group's
// share.partition.max.record.locks bounds the records in flight in a share
// partition for all its members together (Kafka 4.3's group config, over
// the broker's 2000), and share.auto.offset.reset=by_duration:PT1H starts
// at the first record of the last hour (every record here).
func TestShareGroupMaxRecordLocksAndByDuration(t *testing.T) {
	b := brokertest.Start(t, "memory", fastShareGroups)
	ctx := testCtx(t, 2*time.Minute)
	cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic, group = "locks", "locks-g"
	ct, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic)
	if err != nil || ct.Err != nil {
		t.Fatalf("create: %v %v", err, ct.Err)
	}
	byDuration, locks := "by_duration:PT1H", "100"
	if c, msg := alterGroup(t, ctx, cl, group, false,
		groupOp{kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", &byDuration},
		groupOp{kmsg.IncrementalAlterConfigOpSet, "share.partition.max.record.locks", &locks}); c != 0 {
		t.Fatalf("configs: %s %s", errName(c), msg)
	}
	var recs []*kgo.Record
	for i := range 250 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte{byte(i)}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	a := joinRawShare(t, ctx, cl, group, topic, ct.ID)
	bm := joinRawShare(t, ctx, cl, group, topic, ct.ID)
	if n, first, last := a.fetch(500); n != 100 || first != 0 || last != 99 {
		t.Fatalf("a acquired %d records (%d-%d), want 100 from offset 0 (by_duration, the in-flight bound)", n, first, last)
	}
	if n, _, _ := bm.fetch(500); n != 0 {
		t.Fatalf("b acquired %d records past the in-flight bound", n)
	}
	// a accepts 0-49: the start moves to 50 and 50 more may be in flight.
	if n, first, last := a.fetch(500, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 49, AcknowledgeTypes: []int8{1}}); n != 50 || first != 100 || last != 149 {
		t.Fatalf("a acquired %d records (%d-%d) after accepting 50, want 100-149", n, first, last)
	}
	if n, _, _ := bm.fetch(500); n != 0 {
		t.Fatalf("b acquired %d records past the in-flight bound", n)
	}
}

// TestShareGroupRenewKgo: a kgo.ShareGroup member's Renew acknowledgement
// (KIP-1222) succeeds in a group with share.renew.acknowledge.enable=true
// and keeps the records its own (it accepts them after); in a group
// that sets it false the broker answers INVALID_RECORD_STATE.
func TestShareGroupRenewKgo(t *testing.T) {
	b := brokertest.Start(t, "memory", fastShareGroups)
	ctx := testCtx(t, 2*time.Minute)
	cl := newClient(t, b.Addr())
	const topic = "renew"
	if ct, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil || ct.Err != nil {
		t.Fatalf("create: %v %v", err, ct.Err)
	}
	earliest, on, off := "earliest", "true", "false"
	for g, ops := range map[string][]groupOp{
		"renew-on":  {{kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", &earliest}, {kmsg.IncrementalAlterConfigOpSet, "share.renew.acknowledge.enable", &on}},
		"renew-off": {{kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", &earliest}, {kmsg.IncrementalAlterConfigOpSet, "share.renew.acknowledge.enable", &off}},
	} {
		if c, msg := alterGroup(t, ctx, cl, g, false, ops...); c != 0 {
			t.Fatalf("%s configs: %s %s", g, errName(c), msg)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("r")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// renew returns the errors of the Renew acknowledgements of one
	// member of group, then of its Accept.
	renew := func(group string) (renewErr, acceptErr error) {
		t.Helper()
		results := make(chan kgo.ShareAckResults, 16)
		m := shareMember(t, b.Addr(), group, topic, kgo.ShareAckCallback(func(_ *kgo.Client, r kgo.ShareAckResults) { results <- r }))
		defer m.Close()
		var recs []*kgo.Record
		for i := 0; i < 100 && len(recs) == 0; i++ { // bounded
			recs = poll(ctx, m).Records()
		}
		if len(recs) != 1 {
			t.Fatalf("%s: polled %d records", group, len(recs))
		}
		errOf := func() error {
			t.Helper()
			if err := m.FlushAcks(ctx); err != nil {
				t.Fatalf("%s: flush: %v", group, err)
			}
			select {
			case r := <-results:
				for _, p := range r {
					if p.Err != nil {
						return p.Err
					}
				}
				return nil
			case <-ctx.Done():
				t.Fatalf("%s: no acknowledgement result", group)
				return nil
			}
		}
		recs[0].Ack(kgo.AckRenew)
		renewErr = errOf()
		recs[0].Ack(kgo.AckAccept)
		acceptErr = errOf()
		return renewErr, acceptErr
	}
	if rerr, aerr := renew("renew-on"); rerr != nil || aerr != nil {
		t.Fatalf("renew enabled: renew %v, accept %v", rerr, aerr)
	}
	if rerr, _ := renew("renew-off"); !errors.Is(rerr, kerr.InvalidRecordState) {
		t.Fatalf("renew disabled: %v, want INVALID_RECORD_STATE", rerr)
	}
}
