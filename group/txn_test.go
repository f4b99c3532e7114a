package group

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
)

// txnCommit sends a TxnOffsetCommit v3 of one partition and returns its code.
func (e *env) txnCommit(group string, pid int64, memberID string, generation int32, instanceID *string, topic string, partition int32, offset int64) int16 {
	e.t.Helper()
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = 3
	r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "tx", group, pid, 0
	r.Generation, r.MemberID, r.InstanceID = generation, memberID, instanceID
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = partition, offset
	r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
	resp := do[*kmsg.TxnOffsetCommitResponse](e, r)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchStable is OffsetFetch v7 of one partition with require_stable: the
// offset and the partition's error code.
func (e *env) fetchStable(group, topic string, partition int32) (int64, int16) {
	e.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group, r.RequireStable = group, true
	r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{partition}}}
	resp := do[*kmsg.OffsetFetchResponse](e, r)
	if resp.ErrorCode != 0 {
		e.t.Fatalf("offset fetch: error %d", resp.ErrorCode)
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

func (e *env) complete(pid int64, commit bool) {
	e.t.Helper()
	e.endTxn(pid, 0, commit)
}

func TestTxnOffsetCommitPendingUntilCompletion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		commit bool
		want   int64
	}{
		{"commit", true, 42},
		{"abort", false, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			if code := e.commit("g", "", -1, "t", 0, 5); code != 0 {
				t.Fatalf("plain commit: %d", code)
			}
			if code := e.txnCommit("g", 7, "", -1, nil, "t", 0, 42); code != 0 {
				t.Fatalf("txn commit: %d", code)
			}
			if got := e.fetch("g", "t", 0); got != 5 {
				t.Fatalf("fetch while pending = %d, want the committed 5", got)
			}
			if _, code := e.fetchStable("g", "t", 0); code != kerr.UnstableOffsetCommit.Code {
				t.Fatalf("require_stable fetch while pending: code %d, want UNSTABLE_OFFSET_COMMIT", code)
			}
			if off, code := e.fetchStable("g", "t", 1); code != 0 || off != -1 {
				t.Fatalf("require_stable fetch of another partition = %d, %d; want -1, 0", off, code)
			}
			e.complete(7, tc.commit)
			if off, code := e.fetchStable("g", "t", 0); code != 0 || off != tc.want {
				t.Fatalf("after completion = %d, code %d; want %d", off, code, tc.want)
			}
			e.restart()
			if got := e.fetch("g", "t", 0); got != tc.want {
				t.Fatalf("after restart = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestTxnOffsetsPendingSurviveRestart(t *testing.T) {
	e := newEnv(t, nil)
	if code := e.txnCommit("g", 7, "", -1, nil, "t", 0, 42); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	e.restart()
	if _, code := e.fetchStable("g", "t", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("after restart: code %d, want UNSTABLE_OFFSET_COMMIT (still pending)", code)
	}
	e.complete(7, true)
	if got := e.fetch("g", "t", 0); got != 42 {
		t.Fatalf("commit after restart = %d, want 42", got)
	}
}

// TestTxnOffsetsLogOrder: a committed transactional offset replaces the
// current offset only if it was written after it (Kafka's olderThan).
func TestTxnOffsetsLogOrder(t *testing.T) {
	t.Run("plain commit after the txn commit wins", func(t *testing.T) {
		e := newEnv(t, nil)
		e.txnCommit("g", 7, "", -1, nil, "t", 0, 42)
		e.commit("g", "", -1, "t", 0, 50)
		e.restart() // the superseded mark is durable
		e.complete(7, true)
		if got := e.fetch("g", "t", 0); got != 50 {
			t.Fatalf("offset = %d, want 50 (the later plain commit)", got)
		}
	})
	t.Run("later transaction wins whatever completes first", func(t *testing.T) {
		e := newEnv(t, nil)
		e.txnCommit("g", 7, "", -1, nil, "t", 0, 42)
		e.txnCommit("g", 8, "", -1, nil, "t", 0, 60)
		e.complete(8, true)
		e.complete(7, true)
		if got := e.fetch("g", "t", 0); got != 60 {
			t.Fatalf("offset = %d, want 60 (written last)", got)
		}
	})
	t.Run("earlier transaction completing first is replaced", func(t *testing.T) {
		e := newEnv(t, nil)
		e.txnCommit("g", 7, "", -1, nil, "t", 0, 42)
		e.txnCommit("g", 8, "", -1, nil, "t", 0, 60)
		e.complete(7, true)
		if got := e.fetch("g", "t", 0); got != 42 {
			t.Fatalf("offset = %d, want 42", got)
		}
		e.complete(8, true)
		if got := e.fetch("g", "t", 0); got != 60 {
			t.Fatalf("offset = %d, want 60", got)
		}
	})
}

func TestTxnOffsetCommitGroupChecks(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 1)
	other := "other"
	cases := []struct {
		name       string
		memberID   string
		generation int32
		instanceID *string
		want       int16
	}{
		{"member of the generation", ids[0], gen, nil, 0},
		{"standalone producer", "", -1, nil, 0},
		{"old generation", ids[0], gen - 1, nil, kerr.IllegalGeneration.Code},
		{"generation without member", "", gen + 1, nil, kerr.IllegalGeneration.Code},
		{"unknown member", "nobody", gen, nil, kerr.UnknownMemberID.Code},
		{"unknown instance id is not fenced", ids[0], gen, &other, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if code := e.txnCommit("g", 7, tc.memberID, tc.generation, tc.instanceID, "t", 0, 1); code != tc.want {
				t.Fatalf("code %d, want %d", code, tc.want)
			}
		})
	}
	t.Run("fenced instance", func(t *testing.T) {
		e := newEnv(t, nil)
		inst := "i1"
		ch := e.joinAsync(9, "s", "", &inst, consumerMeta("t"))
		e.waitMembers("s", 1)
		e.clock.Advance(2 * initialDelay)
		r := await(t, ch)
		if r.ErrorCode != 0 {
			t.Fatalf("join: %d", r.ErrorCode)
		}
		if code := e.txnCommit("s", 7, "impostor", r.Generation, &inst, "t", 0, 1); code != kerr.FencedInstanceID.Code {
			t.Fatalf("code %d, want FENCED_INSTANCE_ID", code)
		}
	})
	t.Run("v0 ignores group metadata", func(t *testing.T) {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.Version = 0
		r.Group, r.ProducerID, r.MemberID, r.Generation = "g", 9, "nobody", 99
		r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
		if code := do[*kmsg.TxnOffsetCommitResponse](e, r).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("code %d, want 0", code)
		}
	})
}

func TestTxnOffsetsAndGroupLifecycle(t *testing.T) {
	t.Run("expiry keeps a group with pending offsets", func(t *testing.T) {
		e := newEnv(t, nil)
		e.txnCommit("g", 7, "", -1, nil, "t", 0, 42)
		e.clock.Advance(48 * time.Hour)
		if _, err := e.c.ExpireOffsets(); err != nil {
			t.Fatal(err)
		}
		e.complete(7, true)
		if got := e.fetch("g", "t", 0); got != 42 {
			t.Fatalf("offset = %d, want 42: the group must survive expiry while pending", got)
		}
	})
	t.Run("offset delete drops pending offsets", func(t *testing.T) {
		e := newEnv(t, nil)
		e.commit("g", "", -1, "t", 0, 5)
		e.txnCommit("g", 7, "", -1, nil, "t", 0, 42)
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = "g"
		r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
		if resp := do[*kmsg.OffsetDeleteResponse](e, r); resp.ErrorCode != 0 {
			t.Fatalf("offset delete: %d", resp.ErrorCode)
		}
		if off, code := e.fetchStable("g", "t", 0); code != 0 || off != -1 {
			t.Fatalf("after delete = %d, %d; want -1, 0", off, code)
		}
		e.complete(7, true)
		if got := e.fetch("g", "t", 0); got != -1 {
			t.Fatalf("offset = %d, want -1", got)
		}
	})
	t.Run("delete groups removes pending offsets", func(t *testing.T) {
		e := newEnv(t, nil)
		e.txnCommit("g", 7, "", -1, nil, "t", 0, 42)
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{"g"}
		if code := do[*kmsg.DeleteGroupsResponse](e, r).Groups[0].ErrorCode; code != 0 {
			t.Fatalf("delete: %d", code)
		}
		e.restart()
		pend, err := e.store.FetchPendingTxnOffsets("g")
		if err != nil || len(pend) != 0 {
			t.Fatalf("pending after delete = %v, %v", pend, err)
		}
		e.complete(7, true)
		if got := e.fetch("g", "t", 0); got != -1 {
			t.Fatalf("offset = %d, want -1", got)
		}
	})
}

func TestHandleTxnCompletionPartitions(t *testing.T) {
	parts := map[string]int32{"a": 1, "b": 2}
	e := newEnv(t, func(o *Options) { o.PartitionFor = func(g string) int32 { return parts[g] } })
	e.txnCommit("a", 7, "", -1, nil, "t", 0, 10)
	e.txnCommit("b", 7, "", -1, nil, "t", 0, 20)
	if err := e.c.HandleTxnCompletion(7, 0, []int32{1}, true); err != nil {
		t.Fatal(err)
	}
	if got := e.fetch("a", "t", 0); got != 10 {
		t.Fatalf("group a = %d, want 10", got)
	}
	if _, code := e.fetchStable("b", "t", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("group b (marker not in its partition yet): code %d, want UNSTABLE_OFFSET_COMMIT", code)
	}
	if err := e.c.HandleTxnCompletion(7, 0, []int32{2}, true); err != nil {
		t.Fatal(err)
	}
	if got := e.fetch("b", "t", 0); got != 20 {
		t.Fatalf("group b = %d, want 20", got)
	}
}

func TestTxnOffsetCommitPersistTxnHook(t *testing.T) {
	var calls int
	fail := false
	e := newEnv(t, func(o *Options) {
		o.PersistTxn = func(_ context.Context, group string, pid int64, epoch int16, offs map[metastore.TopicPartition]metastore.CommittedOffset) (int64, error) {
			calls++
			if fail {
				return 0, errors.New("boom")
			}
			return 100 + int64(calls), nil
		}
	})
	if code := e.txnCommit("g", 7, "", -1, nil, "t", 0, 1); code != 0 {
		t.Fatalf("code %d", code)
	}
	pend, _ := e.store.FetchPendingTxnOffsets("g")
	if len(pend) != 1 || pend[0].Position != 101 {
		t.Fatalf("pending = %+v, want position 101 (the hook's log offset)", pend)
	}
	fail = true
	if code := e.txnCommit("g", 8, "", -1, nil, "t", 1, 1); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("code %d, want COORDINATOR_NOT_AVAILABLE when the hook fails", code)
	}
	if pend, _ := e.store.FetchPendingTxnOffsets("g"); len(pend) != 1 {
		t.Fatalf("a failed persist stored something: %+v", pend)
	}
}
