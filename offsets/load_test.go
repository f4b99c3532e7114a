package offsets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// newReplica returns partition i of __consumer_offsets on a memory store,
// leader with this broker alone in the ISR.
func newReplica(t *testing.T, i int32) *replication.Partition {
	t.Helper()
	st, err := engine.Open("memory", engine.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := st.CreateLog(engine.PartitionID{Topic: Topic, Partition: i}, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := replication.NewPartition(l, replication.Options{Topic: Topic, Partition: i, BrokerID: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.MakeLeader(replication.LeaderAndIsr{Leader: 1, LeaderEpoch: 0, ISR: []int32{1}, Replicas: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	return p
}

func tp(p int32) metastore.TopicPartition { return metastore.TopicPartition{Topic: "t", Partition: p} }

func committed(o int64) metastore.CommittedOffset {
	return metastore.CommittedOffset{Offset: o, LeaderEpoch: -1, CommitTime: time.UnixMilli(1)}
}

// TestReplay writes commits and tombstones in Persist's record layout into
// a leader partition and replays them: the latest record per key wins, a
// tombstone deletes, records at or past end are not read.
func TestReplay(t *testing.T) {
	p := newReplica(t, 0)
	c := New(Options{})
	ctx := context.Background()
	appendRecs := func(g string, offs map[metastore.TopicPartition]metastore.CommittedOffset, del []metastore.TopicPartition) {
		t.Helper()
		if err := coordlog.Append(ctx, p, c.offsetRecords(g, offs, del), commitTimeout, coordlog.ErrNotCoordinator); err != nil {
			t.Fatal(err)
		}
	}
	appendRecs("a", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(1), tp(1): committed(2)}, nil)
	appendRecs("b", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(5)}, nil)
	appendRecs("a", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(10)}, []metastore.TopicPartition{tp(1)})
	groupRec := func(name string, del bool) {
		t.Helper()
		rec := record.BuildRecord{Key: appendGroupKey(nil, name), Timestamp: 1}
		if !del {
			rec.Value = appendGroupValue(nil, metastore.Group{Name: name, ProtocolType: "consumer", Generation: 3})
		}
		if err := coordlog.Append(ctx, p, []record.BuildRecord{rec}, commitTimeout, coordlog.ErrNotCoordinator); err != nil {
			t.Fatal(err)
		}
	}
	groupRec("a", false)
	groupRec("b", false)
	groupRec("b", true)
	groupRec("c", false) // metadata, no offsets
	end := p.LogEndOffset()
	appendRecs("a", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(99)}, nil)

	v, st, err := replay(p, end)
	if err != nil {
		t.Fatal(err)
	}
	// 3 commits (5 records), 4 group records; the commit past end unread.
	if st.Batches != 7 || st.Records != 9 || st.Bytes <= 0 {
		t.Errorf("replay stats %+v, want 7 batches, 9 records", st)
	}
	// Keys: a t-0, a t-1 (tombstoned), b t-0, groups a, b (tombstoned), c.
	// Groups: a (both), b (an offset), c (metadata).
	if got, want := fmt.Sprint(v.summary()), fmt.Sprint([]any{"keys", 6, "groups", 3, "offsets", 2}); got != want {
		t.Errorf("summary %s, want %s", got, want)
	}
	if o := v.offsets["a"][tp(0)]; o == nil || o.Offset != 10 {
		t.Errorf("a t-0 = %+v, want 10 (99 lies past end)", o)
	}
	if o, ok := v.offsets["a"][tp(1)]; !ok || o != nil {
		t.Errorf("a t-1 = %+v, want a tombstone", o)
	}
	if o := v.offsets["b"][tp(0)]; o == nil || o.Offset != 5 {
		t.Errorf("b t-0 = %+v, want 5", o)
	}
	if g := v.groups["a"]; g == nil || g.Generation != 3 {
		t.Errorf("group a = %+v, want generation 3", g)
	}
	if g, ok := v.groups["b"]; !ok || g != nil {
		t.Errorf("group b = %+v, want a tombstone", g)
	}
}

// TestReplayBadRecord: a record that is not a __consumer_offsets record
// fails the replay with ErrBadRecord.
func TestReplayBadRecord(t *testing.T) {
	p := newReplica(t, 0)
	rec := record.BuildRecord{Key: []byte{0, 9, 'x'}, Value: []byte("v"), Timestamp: 1}
	if err := coordlog.Append(context.Background(), p, []record.BuildRecord{rec}, commitTimeout, coordlog.ErrNotCoordinator); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replay(p, p.LogEndOffset()); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("replay = %v, want ErrBadRecord", err)
	}
}

// fakeGroups records the group coordinator calls of a Coordinator.
type fakeGroups struct {
	mu       sync.Mutex
	reloaded []string // the probe groups each Reload matched
	unloaded []string
	reloadCh chan struct{}
}

// probe lists group names known to land in partitions 0 and 1 of 2.
var probe = []string{"a", "b"} // "a" -> 1, "b" -> 0

func matching(match func(string) bool) string {
	var out string
	for _, g := range probe {
		if match(g) {
			out += g
		}
	}
	return out
}

// TestCoordinator runs a Coordinator over partition 1 of 2: Persist and
// PersistGroup write to it once this broker leads it, leadership loads it
// into the metastore (replacing what an earlier term left) and reloads its
// groups, and losing leadership unloads them.
func TestCoordinator(t *testing.T) {
	if coordlog.PartitionFor("a", 2) != 1 || coordlog.PartitionFor("b", 2) != 0 {
		t.Fatal("probe groups moved")
	}
	p := newReplica(t, 1)
	meta, err := metastore.Open(t.TempDir(), metastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	fg := &fakeGroups{reloadCh: make(chan struct{}, 1)}
	c := New(Options{
		NumPartitions: func() int32 { return 2 },
		Partition: func(i int32) *replication.Partition {
			if i == 1 {
				return p
			}
			return nil
		},
		Unload: func(match func(string) bool) {
			fg.mu.Lock()
			fg.unloaded = append(fg.unloaded, matching(match))
			fg.mu.Unlock()
		},
		Reload: func(match func(string) bool) error {
			fg.mu.Lock()
			fg.reloaded = append(fg.reloaded, matching(match))
			fg.mu.Unlock()
			fg.reloadCh <- struct{}{}
			return nil
		},
		Meta: meta,
	})
	defer c.Close()
	ctx := context.Background()

	if owned, _ := c.Owns("a"); owned {
		t.Fatal("owns a before leading")
	}
	if err := c.Persist(ctx, "b", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(1)}, nil); !errors.Is(err, coordlog.ErrNotCoordinator) {
		t.Fatalf("persist b (partition 0, no replica) = %v, want ErrNotCoordinator", err)
	}
	if err := c.Persist(ctx, "a", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(7), tp(1): committed(8)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Persist(ctx, "a", nil, []metastore.TopicPartition{tp(1)}); err != nil {
		t.Fatal(err)
	}
	if err := c.PersistGroup(ctx, metastore.Group{Name: "a", ProtocolType: "consumer", Generation: 2}, false); err != nil {
		t.Fatal(err)
	}
	// An earlier term left state in the metastore: a's stale offset (the
	// replay replaces it), group "b" of the other partition (left alone).
	if err := meta.CommitOffsets("a", map[metastore.TopicPartition]metastore.CommittedOffset{tp(5): committed(3)}); err != nil {
		t.Fatal(err)
	}
	if err := meta.CommitOffsets("b", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(4)}); err != nil {
		t.Fatal(err)
	}

	c.OnRole(1, true)
	<-fg.reloadCh
	for {
		owned, loading := c.Owns("a")
		if !owned {
			t.Fatal("a not owned after OnRole(1, true)")
		}
		if !loading {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if owned, _ := c.Owns("b"); owned {
		t.Error("owns b of partition 0")
	}
	offs, err := meta.FetchOffsets("a")
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 1 || offs[tp(0)].Offset != 7 {
		t.Errorf("a's offsets after load = %+v, want only t-0 at 7", offs)
	}
	if sg, err := meta.GetGroup("a"); err != nil || sg.Generation != 2 {
		t.Errorf("group a after load = %+v, %v", sg, err)
	}
	if offs, err := meta.FetchOffsets("b"); err != nil || offs[tp(0)].Offset != 4 {
		t.Errorf("b's offsets = %+v, %v; want untouched", offs, err)
	}

	c.OnRole(1, true) // a new epoch: nothing happens
	c.OnStop(1)
	if owned, _ := c.Owns("a"); owned {
		t.Error("owns a after OnStop")
	}
	fg.mu.Lock()
	defer fg.mu.Unlock()
	if len(fg.reloaded) != 1 || fg.reloaded[0] != "a" || len(fg.unloaded) != 1 || fg.unloaded[0] != "a" {
		t.Errorf("reloaded %q, unloaded %q; want [a] each", fg.reloaded, fg.unloaded)
	}
}

// TestReplayAcrossReads: a group's members keep their subscriptions and
// assignments when the partition takes more than one read to replay (the
// read buffer is reused).
func TestReplayAcrossReads(t *testing.T) {
	p := newReplica(t, 0)
	ctx := context.Background()
	sg := metastore.Group{Name: "g", ProtocolType: "consumer", Protocol: "range", Generation: 1, Members: []metastore.GroupMember{
		{MemberID: "m", Protocols: []metastore.GroupProtocol{{Name: "range", Metadata: []byte("subscription")}}, Assignment: []byte("assignment")},
	}}
	rec := record.BuildRecord{Key: appendGroupKey(nil, "g"), Value: appendGroupValue(nil, sg), Timestamp: 1}
	if err := coordlog.Append(ctx, p, []record.BuildRecord{rec}, commitTimeout, coordlog.ErrNotCoordinator); err != nil {
		t.Fatal(err)
	}
	// Past 1 MiB of commits with 30 KB of metadata each: two reads at least.
	c := New(Options{})
	o := committed(1)
	o.Metadata = string(make([]byte, 30_000))
	for i := range 40 {
		if err := coordlog.Append(ctx, p, c.offsetRecords("g", map[metastore.TopicPartition]metastore.CommittedOffset{tp(int32(i)): o}, nil), commitTimeout, coordlog.ErrNotCoordinator); err != nil {
			t.Fatal(err)
		}
	}
	v, _, err := replay(p, p.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.offsets["g"]) != 40 {
		t.Fatalf("%d offsets replayed, want 40", len(v.offsets["g"]))
	}
	m := v.groups["g"].Members[0]
	if string(m.Protocols[0].Metadata) != "subscription" || string(m.Assignment) != "assignment" {
		t.Fatalf("member after replay: subscription %q, assignment %q", m.Protocols[0].Metadata, m.Assignment)
	}
}

// TestPersistTooLong: a string the int16 length of a record cannot
// describe is refused and nothing is written. Encoded, a crafted group id
// of 65539 bytes would wrap to 3 and replay as an offset of group "vic".
func TestPersistTooLong(t *testing.T) {
	p := newReplica(t, 0)
	c := New(Options{
		NumPartitions: func() int32 { return 1 },
		Partition:     func(int32) *replication.Partition { return p },
	})
	defer c.Close()
	forged := "vic" + string([]byte{0, 1, 't', 0, 0, 0, 5})
	forged += string(make([]byte, 65539-len(forged)))
	long := string(make([]byte, 1<<15))
	ctx := context.Background()
	one := map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(1)}
	withMeta := committed(1)
	withMeta.Metadata = long
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"forged group id", c.Persist(ctx, forged, one, nil)},
		{"long group id, tombstone", c.Persist(ctx, long, nil, []metastore.TopicPartition{tp(0)})},
		{"long metadata", c.Persist(ctx, "g", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): withMeta}, nil)},
		{"long group tombstone", c.PersistGroup(ctx, metastore.Group{Name: long}, true)},
		{"long member id", c.PersistGroup(ctx, metastore.Group{Name: "g", Members: []metastore.GroupMember{{MemberID: long}}}, false)},
		{"long instance id", c.PersistGroup(ctx, metastore.Group{Name: "g", Members: []metastore.GroupMember{{MemberID: "m", GroupInstanceID: long}}}, false)},
		{"long protocol", c.PersistGroup(ctx, metastore.Group{Name: "g", Protocol: long}, false)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, ErrTooLong) {
				t.Errorf("err = %v, want ErrTooLong", tt.err)
			}
		})
	}
	if end := p.LogEndOffset(); end != 0 {
		t.Errorf("log end %d, want nothing written", end)
	}
	// At the limit it fits.
	if err := c.Persist(ctx, long[:1<<15-1], one, nil); err != nil {
		t.Fatal(err)
	}
	if v, _, err := replay(p, p.LogEndOffset()); err != nil || v.offsets[long[:1<<15-1]][tp(0)] == nil {
		t.Fatalf("replay of a 32767-byte group id: %v", err)
	}
}

// TestLoadStale: a load whose leadership ended while it replayed returns
// coordlog.ErrStale and installs nothing: the metastore keeps what it held
// (the later leadership's load owns it) and no group is reloaded.
func TestLoadStale(t *testing.T) {
	p := newReplica(t, 0)
	meta, err := metastore.Open(t.TempDir(), metastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	reloads := 0
	c := New(Options{
		NumPartitions: func() int32 { return 1 },
		Partition:     func(int32) *replication.Partition { return p },
		Unload:        func(func(string) bool) {},
		Reload:        func(func(string) bool) error { reloads++; return nil },
		Meta:          meta,
	})
	defer c.Close()
	ctx := context.Background()
	if err := c.Persist(ctx, "g", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(1)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := meta.CommitOffsets("g", map[metastore.TopicPartition]metastore.CommittedOffset{tp(0): committed(9)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.load(0, func() bool { return false }); !errors.Is(err, coordlog.ErrStale) {
		t.Fatalf("stale load = %v, want coordlog.ErrStale", err)
	}
	if offs, err := meta.FetchOffsets("g"); err != nil || offs[tp(0)].Offset != 9 {
		t.Errorf("g's offsets after a stale load = %+v, %v; want untouched at 9", offs, err)
	}
	if reloads != 0 {
		t.Errorf("%d reloads after a stale load, want 0", reloads)
	}
}
