package server_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A zombie's TxnOffsetCommit after it was fenced (single node) is refused
// with INVALID_PRODUCER_EPOCH, as Kafka's log refuses it; otherwise its
// offsets would be committed by the next producer's transaction.
func TestZombieTxnOffsetCommitFencedSingleNode(t *testing.T) {
	t.Parallel()
	addr := startTxnBroker(t, "memory")
	adm := kadm.NewClient(newClient(t, addr))
	createTopic(t, adm, "out", 2, nil)
	rc := dialRaw(t, addr)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(3)
	fc.CoordinatorType, fc.CoordinatorKey = 1, "tx"
	waitUntil(t, 10*time.Second, func() bool { return rc.Do(fc).(*kmsg.FindCoordinatorResponse).ErrorCode == 0 }, func() string { return "fc" })
	gfc := kmsg.NewPtrFindCoordinatorRequest()
	gfc.SetVersion(3)
	gfc.CoordinatorKey = "g"
	waitUntil(t, 10*time.Second, func() bool { return rc.Do(gfc).(*kmsg.FindCoordinatorResponse).ErrorCode == 0 }, func() string { return "gfc" })

	init := func() *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 10000
		req.ProducerID, req.ProducerEpoch = -1, -1
		var resp *kmsg.InitProducerIDResponse
		waitUntil(t, 10*time.Second, func() bool {
			resp = rc.Do(req).(*kmsg.InitProducerIDResponse)
			return resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.ConcurrentTransactions.Code
		}, func() string { return kerr.ErrorForCode(resp.ErrorCode).Error() })
		return resp
	}
	addOffsets := func(pid int64, e int16) {
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.SetVersion(3)
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx", pid, e, "g"
		if resp := rc.Do(ao).(*kmsg.AddOffsetsToTxnResponse); resp.ErrorCode != 0 {
			t.Fatalf("add offsets: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	toc := func(pid int64, e int16, part int32, off int64) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.SetVersion(3)
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx", "g", pid, e, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "out"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = part, off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rc.Do(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	ip := init()
	pid, e0 := ip.ProducerID, ip.ProducerEpoch
	addOffsets(pid, e0)
	if c := toc(pid, e0, 0, 5); c != 0 {
		t.Fatalf("toc: %v", kerr.ErrorForCode(c))
	}
	// Fence: a new instance of "tx".
	ip2 := init()
	if ip2.ErrorCode != 0 || ip2.ProducerID != pid {
		t.Fatalf("init2 %+v", ip2)
	}
	time.Sleep(500 * time.Millisecond)
	// Zombie at e0.
	zc := toc(pid, e0, 1, 99)
	if zc != kerr.InvalidProducerEpoch.Code {
		t.Errorf("zombie TxnOffsetCommit at epoch %d (current %d): %v, want INVALID_PRODUCER_EPOCH", e0, ip2.ProducerEpoch, kerr.ErrorForCode(zc))
	}
	// New producer commits a txn with offsets.
	addOffsets(pid, ip2.ProducerEpoch)
	if c := toc(pid, ip2.ProducerEpoch, 0, 10); c != 0 {
		t.Fatalf("toc2: %v", kerr.ErrorForCode(c))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx", pid, ip2.ProducerEpoch, true
	if c := rc.Do(end).(*kmsg.EndTxnResponse).ErrorCode; c != 0 {
		t.Fatalf("end: %v", kerr.ErrorForCode(c))
	}
	time.Sleep(500 * time.Millisecond)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(7)
	of.Group = "g"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "out", []int32{0, 1}
	of.Topics = append(of.Topics, ft)
	resp := rc.Do(of).(*kmsg.OffsetFetchResponse)
	for _, p := range resp.Topics[0].Partitions {
		t.Logf("out-%d committed %d err %v", p.Partition, p.Offset, kerr.ErrorForCode(p.ErrorCode))
		if p.Partition == 1 && p.Offset == 99 {
			t.Errorf("zombie's offset 99 (epoch %d) committed by the new producer's transaction (epoch %d)", e0, ip2.ProducerEpoch)
		}
	}
}
