package server_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// startTxnBroker starts a single node whose __transaction_state has a few
// partitions (fast to create and load).
func startTxnBroker(t *testing.T, backend string) string {
	t.Helper()
	b := brokertest.Start(t, backend, func(c *config.Config) {
		c.TransactionStatePartitions = 3
		c.GroupInitialRebalanceDelay = 0
	})
	return b.Addr()
}

// TestTransactionProtocol drives the coordinator's APIs with raw requests
// on a single node: FindCoordinator key type 1 creates and names the
// coordinator; InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
// DescribeTransactions, ListTransactions and EndTxn answer as Kafka's
// coordinator does, including the errors of zombies and bad requests.
func TestTransactionProtocol(t *testing.T) {
	addr := startTxnBroker(t, "memory")
	adm := kadm.NewClient(newClient(t, addr))
	createTopic(t, adm, "out", 2, nil)
	rc := dialRaw(t, addr)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(3)
	fc.CoordinatorType, fc.CoordinatorKey = 1, "tx"
	var fr *kmsg.FindCoordinatorResponse
	waitUntil(t, 10*time.Second, func() bool {
		fr = rc.Do(fc).(*kmsg.FindCoordinatorResponse)
		return fr.ErrorCode == 0
	}, func() string { return kerr.ErrorForCode(fr.ErrorCode).Error() })
	if fr.NodeID < 0 || fr.Port <= 0 {
		t.Fatalf("coordinator %+v", fr)
	}

	init := func(version int16, id string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(version)
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 10000
		req.ProducerID, req.ProducerEpoch = pid, epoch
		var resp *kmsg.InitProducerIDResponse
		waitUntil(t, 10*time.Second, func() bool {
			resp = rc.Do(req).(*kmsg.InitProducerIDResponse)
			return resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.ConcurrentTransactions.Code
		}, func() string { return kerr.ErrorForCode(resp.ErrorCode).Error() })
		return resp
	}
	ip := init(4, "tx", -1, -1)
	if ip.ErrorCode != 0 || ip.ProducerID < 0 || ip.ProducerEpoch != 0 {
		t.Fatalf("init: %v %+v", kerr.ErrorForCode(ip.ErrorCode), ip)
	}
	pid, epoch := ip.ProducerID, ip.ProducerEpoch

	add := func(version int16, e int16, topic string, parts ...int32) []int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(version)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx", pid, e
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, parts
		req.Topics = append(req.Topics, rt)
		resp := rc.Do(req).(*kmsg.AddPartitionsToTxnResponse)
		var codes []int16
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
		return codes
	}
	if codes := add(3, epoch, "out", 0, 1); codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("add: %v", codes)
	}
	if codes := add(3, epoch, "out", 0, 7); codes[0] != kerr.OperationNotAttempted.Code || codes[1] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("add unknown partition: %v", codes)
	}
	if codes := add(3, epoch, "__consumer_offsets", 0); codes[0] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("add internal topic: %v", codes)
	}
	if codes := add(3, epoch+1, "out", 0); codes[0] != kerr.ProducerFenced.Code {
		t.Fatalf("add with another epoch: %v", codes)
	}
	if codes := add(1, epoch+1, "out", 0); codes[0] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("add v1 with another epoch: %v", codes)
	}

	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.SetVersion(3)
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx", pid, epoch, "g"
	if resp := rc.Do(ao).(*kmsg.AddOffsetsToTxnResponse); resp.ErrorCode != 0 {
		t.Fatalf("add offsets: %v", kerr.ErrorForCode(resp.ErrorCode))
	}

	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx", "nope"}
	dr := rc.Do(dt).(*kmsg.DescribeTransactionsResponse)
	st := dr.TransactionStates[0]
	if st.ErrorCode != 0 || st.State != "Ongoing" || st.ProducerID != pid || len(st.Topics) != 2 || st.TimeoutMillis != 10000 || st.StartTimestamp <= 0 {
		t.Fatalf("describe: %+v", st)
	}
	if dr.TransactionStates[1].ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe unknown: %+v", dr.TransactionStates[1])
	}

	lt := kmsg.NewPtrListTransactionsRequest()
	lt.SetVersion(1)
	lt.StateFilters, lt.DurationFilterMillis = []string{"Ongoing", "Bogus"}, -1
	lr := rc.Do(lt).(*kmsg.ListTransactionsResponse)
	if lr.ErrorCode != 0 || len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionalID != "tx" ||
		len(lr.UnknownStateFilters) != 1 || lr.UnknownStateFilters[0] != "Bogus" {
		t.Fatalf("list: %+v", lr)
	}

	end := func(version int16, id string, e int16, commit bool) int16 {
		req := kmsg.NewPtrEndTxnRequest()
		req.SetVersion(version)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, e, commit
		return rc.Do(req).(*kmsg.EndTxnResponse).ErrorCode
	}
	if code := end(3, "nope", epoch, true); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("end unknown id: %v", kerr.ErrorForCode(code))
	}
	if code := end(3, "tx", epoch+1, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("end with another epoch: %v", kerr.ErrorForCode(code))
	}
	if code := end(3, "tx", epoch, true); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	// While the commit's markers are written the completion is a pending
	// transition (CONCURRENT_TRANSACTIONS, as Kafka checks it first);
	// once in PrepareCommit or after, an abort is INVALID_TXN_STATE.
	if code := end(3, "tx", epoch, false); code != kerr.InvalidTxnState.Code && code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("abort after commit: %v", kerr.ErrorForCode(code))
	}
	dr = rc.Do(dt).(*kmsg.DescribeTransactionsResponse)
	if s := dr.TransactionStates[0].State; s != "PrepareCommit" && s != "CompleteCommit" {
		t.Fatalf("after commit: %s", s)
	}

	// Bad requests.
	bad := init(4, "tx", pid, -1)
	if bad.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("init with a producer id and no epoch: %v", kerr.ErrorForCode(bad.ErrorCode))
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("tx2"), 900001
	if resp := rc.Do(req).(*kmsg.InitProducerIDResponse); resp.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout above the max: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestTransactionsFranzGo runs franz-go's transactional producer against
// a single node: a committed and an aborted transaction, read back with
// read_committed (only the committed records) and read_uncommitted (all),
// and a zombie producer fenced by a new one with the same transactional
// id.
func TestTransactionsFranzGo(t *testing.T) {
	addr := startTxnBroker(t, "segment")
	adm := kadm.NewClient(newClient(t, addr))
	createTopic(t, adm, "txn-out", 2, nil)
	ctx := testCtx(t, 60*time.Second)

	newProducer := func() *kgo.Client {
		return newClient(t, addr, kgo.TransactionalID("tx-franz"), kgo.DefaultProduceTopic("txn-out"),
			kgo.TransactionTimeout(10*time.Second), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	}
	p := newProducer()
	run := func(cl *kgo.Client, prefix string, n int, commit kgo.TransactionEndTry) error {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i))).FirstErr(); err != nil {
				return err
			}
		}
		return cl.EndTransaction(ctx, commit)
	}
	if err := run(p, "committed", 10, kgo.TryCommit); err != nil {
		t.Fatalf("committed transaction: %v", err)
	}
	if err := run(p, "aborted", 5, kgo.TryAbort); err != nil {
		t.Fatalf("aborted transaction: %v", err)
	}
	if err := run(p, "committed2", 3, kgo.TryCommit); err != nil {
		t.Fatalf("second committed transaction: %v", err)
	}

	read := func(level kgo.IsolationLevel, want int) map[string]bool {
		t.Helper()
		c := newClient(t, addr, kgo.ConsumeTopics("txn-out"), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := map[string]bool{}
		for len(got) < want {
			fs := c.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("read %d of %d records: %v", len(got), want, err)
			}
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
		}
		return got
	}
	committed := read(kgo.ReadCommitted(), 13)
	for v := range committed {
		if len(v) >= 7 && v[:7] == "aborted" {
			t.Fatalf("read_committed read the aborted record %q", v)
		}
	}
	if all := read(kgo.ReadUncommitted(), 18); len(all) != 18 {
		t.Fatalf("read_uncommitted read %d records, want 18", len(all))
	}

	// A second producer with the same transactional id fences the first.
	zombie := p
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, kgo.StringRecord("zombie-0")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := newProducer()
	if err := run(fresh, "fresh", 2, kgo.TryCommit); err != nil {
		t.Fatalf("new producer: %v", err)
	}
	err := zombie.ProduceSync(ctx, kgo.StringRecord("zombie-1")).FirstErr()
	if err == nil {
		err = zombie.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("zombie: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
}

// TestTransactionStateSurvivesRestart: a single node keeps its
// transactional ids in __transaction_state and loads them at start: after
// a restart the ongoing transaction is there with its producer id, and
// the producer's epoch still works.
func TestTransactionStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := func(c *config.Config) { c.TransactionStatePartitions = 3 }
	b := brokertest.StartIn(t, dir, "segment", cfg)
	adm := kadm.NewClient(newClient(t, b.Addr()))
	createTopic(t, adm, "out", 1, nil)
	rc := dialRaw(t, b.Addr())
	init := func(rc *rawConn) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 10000
		var resp *kmsg.InitProducerIDResponse
		waitUntil(t, 10*time.Second, func() bool {
			resp = rc.Do(req).(*kmsg.InitProducerIDResponse)
			return resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code
		}, func() string { return kerr.ErrorForCode(resp.ErrorCode).Error() })
		return resp
	}
	ip := init(rc)
	if ip.ErrorCode != 0 {
		t.Fatalf("init: %v", kerr.ErrorForCode(ip.ErrorCode))
	}
	add := func(rc *rawConn, partition int32) int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(3)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx", ip.ProducerID, ip.ProducerEpoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = "out", []int32{partition}
		req.Topics = append(req.Topics, rt)
		var c int16
		waitUntil(t, 10*time.Second, func() bool {
			c = rc.Do(req).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
			return c != kerr.CoordinatorLoadInProgress.Code
		}, func() string { return kerr.ErrorForCode(c).Error() })
		return c
	}
	if c := add(rc, 0); c != 0 {
		t.Fatalf("add: %v", kerr.ErrorForCode(c))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = brokertest.StartIn(t, dir, "segment", cfg)
	rc = dialRaw(t, b.Addr())
	if c := add(rc, 0); c != 0 {
		t.Fatalf("add after restart: %v", kerr.ErrorForCode(c))
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx"}
	st := rc.Do(dt).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
	if st.ErrorCode != 0 || st.State != "Ongoing" || st.ProducerID != ip.ProducerID || st.ProducerEpoch != ip.ProducerEpoch {
		t.Fatalf("after restart: %+v", st)
	}
	// A new producer with the same id fences the old one: the ongoing
	// transaction is aborted first.
	if again := init(rc); again.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init during a transaction: %v", kerr.ErrorForCode(again.ErrorCode))
	}
	if c := add(rc, 0); c != kerr.ProducerFenced.Code {
		t.Fatalf("fenced producer's add: %v", kerr.ErrorForCode(c))
	}
}
