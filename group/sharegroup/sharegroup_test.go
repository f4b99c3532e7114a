package sharegroup

import (
	"errors"
	"fmt"
	"github.com/sluice/sluice/offsets"
	"math/rand/v2"
	"testing"
)

func tid(b byte) TopicID { return TopicID{b} }

// checkCover checks the invariants of a Simple result: every partition of
// a subscribed topic has at least one holder, only subscribers hold it,
// no member holds a partition twice, and the sharing is ceil(S/P).
func checkCover(t *testing.T, members []Subscriber, topics map[TopicID]int32, got map[string]Assignment) {
	t.Helper()
	subs := map[TopicID]map[string]bool{}
	for _, m := range members {
		for _, tp := range m.Topics {
			if subs[tp] == nil {
				subs[tp] = map[string]bool{}
			}
			subs[tp][m.ID] = true
		}
		if _, ok := got[m.ID]; !ok {
			t.Fatalf("member %s missing from result", m.ID)
		}
	}
	for tp, ms := range subs {
		p := topics[tp]
		if p == 0 {
			continue
		}
		want := (len(ms) + int(p) - 1) / int(p)
		count := make([]int, p)
		for id, a := range got {
			seen := map[int32]bool{}
			for _, q := range a[tp] {
				if !ms[id] {
					t.Fatalf("member %s holds %x/%d without subscribing", id, tp[0], q)
				}
				if seen[q] {
					t.Fatalf("member %s holds %x/%d twice", id, tp[0], q)
				}
				seen[q] = true
				count[q]++
			}
		}
		for q, c := range count {
			if c != want {
				t.Fatalf("partition %x/%d held by %d members, want %d", tp[0], q, c, want)
			}
		}
	}
}

func TestSimpleAssignor(t *testing.T) {
	t1, t2 := tid(1), tid(2)
	cases := []struct {
		name    string
		members []Subscriber
		topics  map[TopicID]int32
	}{
		{"one member", []Subscriber{{"a", []TopicID{t1}}}, map[TopicID]int32{t1: 3}},
		{"fewer members than partitions", []Subscriber{{"a", []TopicID{t1}}, {"b", []TopicID{t1}}}, map[TopicID]int32{t1: 5}},
		{"more members than partitions", []Subscriber{{"a", []TopicID{t1}}, {"b", []TopicID{t1}}, {"c", []TopicID{t1}}, {"d", []TopicID{t1}}, {"e", []TopicID{t1}}}, map[TopicID]int32{t1: 2}},
		{"heterogeneous", []Subscriber{{"a", []TopicID{t1}}, {"b", []TopicID{t1, t2}}, {"c", []TopicID{t2}}}, map[TopicID]int32{t1: 1, t2: 4}},
		{"unknown topic", []Subscriber{{"a", []TopicID{tid(9)}}}, map[TopicID]int32{t1: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Simple(c.members, c.topics, nil)
			checkCover(t, c.members, c.topics, got)
		})
	}
}

// TestSimpleAssignorBalancedAndSticky: in homogeneous groups loads differ
// by at most one; adding a member keeps most partitions where they were.
func TestSimpleAssignorBalancedAndSticky(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for range 200 {
		p := int32(1 + r.IntN(12))
		n := 1 + r.IntN(15)
		topics := map[TopicID]int32{tid(1): p}
		var ms []Subscriber
		for i := range n {
			ms = append(ms, Subscriber{fmt.Sprintf("m%02d", i), []TopicID{tid(1)}})
		}
		cur := Simple(ms, topics, nil)
		checkCover(t, ms, topics, cur)
		lo, hi := 1<<30, 0
		for _, a := range cur {
			lo, hi = min(lo, a.Count()), max(hi, a.Count())
		}
		if hi-lo > 1 {
			t.Fatalf("p=%d n=%d: loads %d..%d", p, n, lo, hi)
		}
		ms = append(ms, Subscriber{"zz", []TopicID{tid(1)}})
		next := Simple(ms, topics, cur)
		checkCover(t, ms, topics, next)
	}
}

func TestLookupEpochs(t *testing.T) {
	g := NewGroup("g")
	if _, _, err := g.Lookup("m", 3); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("unknown member at epoch 3: %v", err)
	}
	m, isNew, err := g.Lookup("m", JoinEpoch)
	if err != nil || !isNew {
		t.Fatalf("join: %v %v", isNew, err)
	}
	m = Reconcile(m, 2, Assignment{tid(1): {0}})
	g.SetMember(m)
	m = Reconcile(m, 5, Assignment{tid(1): {0, 1}})
	g.SetMember(m)
	for _, c := range []struct {
		epoch int32
		ok    bool
	}{{5, true}, {2, true}, {6, false}, {3, false}, {0, false}} {
		_, _, err := g.Lookup("m", c.epoch)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrFencedEpoch)) {
			t.Errorf("epoch %d: %v", c.epoch, err)
		}
	}
}

// TestReplayRecords: the records of a group replay into the same group.
func TestReplayRecords(t *testing.T) {
	g := NewGroup("g")
	g.Epoch, g.MetadataHash, g.AssignmentEpoch = 4, 99, 4
	a := Member{ID: "a", RackID: "r", ClientID: "c", ClientHost: "/h", Subscribed: []string{"t"}, MemberEpoch: 4, PreviousMemberEpoch: 2, Assigned: Assignment{tid(1): {0, 1}}}
	b := Member{ID: "b", ClientID: "c", ClientHost: "/h", Subscribed: []string{"t"}, MemberEpoch: 4, PreviousMemberEpoch: 0, Assigned: Assignment{tid(1): {2}}}
	g.SetMember(a)
	g.SetMember(b)
	g.Target = map[string]Assignment{"a": a.Assigned, "b": b.Assigned}
	recs := []offsetsRecord{EpochRecord(g), MemberMetadataRecord("g", a), MemberMetadataRecord("g", b),
		TargetMemberRecord("g", "a", a.Assigned), TargetMemberRecord("g", "b", b.Assigned), TargetEpochRecord(g),
		CurrentAssignmentRecord("g", a), CurrentAssignmentRecord("g", b)}
	r := NewGroup("g")
	for _, rec := range recs {
		if err := r.Replay(rec); err != nil {
			t.Fatal(err)
		}
	}
	if r.Epoch != 4 || r.MetadataHash != 99 || r.AssignmentEpoch != 4 || r.Len() != 2 {
		t.Fatalf("replayed %+v", r)
	}
	for _, want := range []Member{a, b} {
		got, _ := r.Member(want.ID)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("member %s: got %+v want %+v", want.ID, got, want)
		}
	}
	for _, rec := range MemberTombstones("g", "a") {
		if err := r.Replay(rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := r.Member("a"); ok || r.Len() != 1 || r.Target["a"] != nil {
		t.Fatalf("tombstones left member a: %+v", r)
	}
}

type offsetsRecord = offsets.ShareRecord
