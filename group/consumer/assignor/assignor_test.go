package assignor

import (
	"encoding/base64"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// The topic ids of Kafka's assignor tests (Uuid.fromString), so that the
// heterogeneous builder breaks ties among them as Kafka's does.
var (
	t1 = mustID("T1-A4s3VTwiI5CTbEp6POw")
	t2 = mustID("T2-B4s3VTwiI5YHbPp6YUe")
	t3 = mustID("T3-CU8fVTLCz5YMkLoDQsa")
	t4 = mustID("T4-Tw9fVTLCz5HbPp6YQsa")
)

func mustID(s string) TopicID {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		panic("bad topic id " + s)
	}
	return TopicID(b)
}

// topics builds topic metadata from (id, partition count) pairs.
func topics(kv ...any) map[TopicID]Topic {
	m := map[TopicID]Topic{}
	for i := 0; i < len(kv); i += 2 {
		id := kv[i].(TopicID)
		m[id] = Topic{ID: id, Partitions: int32(kv[i+1].(int))}
	}
	return m
}

func sub(ids ...TopicID) []TopicID { return ids }

// assertAssignment compares got with want, treating a missing and an empty
// assignment alike in want.
func assertAssignment(t *testing.T, want, got map[string]Assignment) {
	t.Helper()
	for id := range want {
		if want[id] == nil {
			want[id] = Assignment{}
		}
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("assignment:\n got %v\nwant %v", got, want)
	}
}

func TestTopicIDCompareIsKafkaUUIDOrder(t *testing.T) {
	// Kafka compares the two halves as signed longs: an id whose first
	// byte has the top bit set sorts before one whose first byte is 0x7f.
	neg := TopicID{0x80}
	pos := TopicID{0x7f}
	if neg.Compare(pos) >= 0 || pos.Compare(neg) <= 0 || pos.Compare(pos) != 0 {
		t.Fatalf("signed order not kept")
	}
	lowNeg := TopicID{8: 0x80}
	lowPos := TopicID{8: 0x01}
	if lowNeg.Compare(lowPos) >= 0 {
		t.Fatalf("second half not compared as signed")
	}
	if t1.Compare(t2) >= 0 || t2.Compare(t3) >= 0 || t3.Compare(t4) >= 0 {
		t.Fatalf("test topics out of order")
	}
}

func TestByName(t *testing.T) {
	if ByName("uniform").Name() != "uniform" || ByName("range").Name() != "range" || ByName("sticky") != nil {
		t.Fatal("ByName does not know Kafka's names")
	}
}

func TestUnknownTopic(t *testing.T) {
	for _, a := range []Assignor{Uniform{}, Range{}} {
		t.Run(a.Name(), func(t *testing.T) {
			spec := &Spec{
				Members: []Member{{ID: "A", Topics: sub(t1)}, {ID: "B", Topics: sub(t2)}},
				Topics:  topics(t2, 3),
			}
			if _, err := a.Assign(spec); !errors.Is(err, ErrUnknownTopic) {
				t.Fatalf("err = %v, want ErrUnknownTopic", err)
			}
		})
	}
}

func TestNoSubscriptions(t *testing.T) {
	for _, a := range []Assignor{Uniform{}, Range{}} {
		t.Run(a.Name(), func(t *testing.T) {
			got, err := a.Assign(&Spec{Members: []Member{{ID: "A"}, {ID: "B"}}, Topics: topics(t1, 3)})
			if err != nil {
				t.Fatal(err)
			}
			assertAssignment(t, map[string]Assignment{"A": {}, "B": {}}, got)
			got, err = a.Assign(&Spec{Topics: topics(t1, 3)})
			if err != nil || len(got) != 0 {
				t.Fatalf("no members: %v, %v", got, err)
			}
		})
	}
}

// TestUniformHomogeneous ports the facts of Kafka's
// OptimizedUniformAssignmentBuilderTest. Where Kafka's answer depends on
// Java's HashSet iteration order (which topic's partitions come first) ours
// follows topic id order.
func TestUniformHomogeneous(t *testing.T) {
	cases := []struct {
		name    string
		topics  map[TopicID]Topic
		members []Member
		want    map[string]Assignment
	}{
		{
			name:   "first assignment, two members, two topics",
			topics: topics(t1, 3, t3, 2),
			members: []Member{
				{ID: "A", Topics: sub(t1, t3)},
				{ID: "B", Topics: sub(t1, t3)},
			},
			want: map[string]Assignment{"A": {t1: {0, 1, 2}}, "B": {t3: {0, 1}}},
		},
		{
			name:   "more members than partitions",
			topics: topics(t3, 2),
			members: []Member{
				{ID: "A", Topics: sub(t3)}, {ID: "B", Topics: sub(t3)}, {ID: "C", Topics: sub(t3)},
			},
			want: map[string]Assignment{"A": {t3: {0}}, "B": {t3: {1}}, "C": {}},
		},
		{
			name:   "unbalanced previous assignment",
			topics: topics(t1, 3, t2, 3),
			members: []Member{
				{ID: "A", Topics: sub(t1, t2), Current: Assignment{t1: {0, 1}, t2: {0, 1}}},
				{ID: "B", Topics: sub(t1, t2), Current: Assignment{t1: {2}, t2: {2}}},
			},
			want: map[string]Assignment{
				"A": {t1: {0, 1}, t2: {0}},
				"B": {t1: {2}, t2: {1, 2}},
			},
		},
		{
			name:   "partitions added",
			topics: topics(t1, 6, t2, 5),
			members: []Member{
				{ID: "A", Topics: sub(t1, t2), Current: Assignment{t1: {0, 2}, t2: {0}}},
				{ID: "B", Topics: sub(t1, t2), Current: Assignment{t1: {1}, t2: {1, 2}}},
			},
			want: map[string]Assignment{
				"A": {t1: {0, 2, 3, 4, 5}, t2: {0}},
				"B": {t1: {1}, t2: {1, 2, 3, 4}},
			},
		},
		{
			name:   "one member added",
			topics: topics(t1, 3, t2, 3),
			members: []Member{
				{ID: "A", Topics: sub(t1, t2), Current: Assignment{t1: {0, 2}, t2: {0}}},
				{ID: "B", Topics: sub(t1, t2), Current: Assignment{t1: {1}, t2: {1, 2}}},
				{ID: "C", Topics: sub(t1, t2)},
			},
			want: map[string]Assignment{
				"A": {t1: {0, 2}},
				"B": {t1: {1}, t2: {1}},
				"C": {t2: {0, 2}},
			},
		},
		{
			name:   "one member removed",
			topics: topics(t1, 3, t2, 3),
			members: []Member{
				{ID: "A", Topics: sub(t1, t2), Current: Assignment{t1: {0}, t2: {0}}},
				{ID: "B", Topics: sub(t1, t2), Current: Assignment{t1: {1}, t2: {1}}},
				// C, which had t1-2 and t2-2, left.
			},
			want: map[string]Assignment{
				"A": {t1: {0, 2}, t2: {0}},
				"B": {t1: {1}, t2: {1, 2}},
			},
		},
		{
			name:   "one subscription removed",
			topics: topics(t1, 2, t2, 3),
			members: []Member{
				{ID: "A", Topics: sub(t2), Current: Assignment{t1: {0}, t2: {0}}},
				{ID: "B", Topics: sub(t2), Current: Assignment{t1: {1}, t2: {1, 2}}},
			},
			want: map[string]Assignment{"A": {t2: {0}}, "B": {t2: {1, 2}}},
		},
		{
			// Kafka gives the extra slot (7 % 2) to A, the first member,
			// and moves partition 6 from B to A; B already holds 4, so here
			// B keeps the extra slot and nothing moves.
			name:   "extra slot goes to the member already holding it",
			topics: topics(t1, 7),
			members: []Member{
				{ID: "A", Topics: sub(t1), Current: Assignment{t1: {0, 1, 2}}},
				{ID: "B", Topics: sub(t1), Current: Assignment{t1: {3, 4, 5, 6}}},
			},
			want: map[string]Assignment{"A": {t1: {0, 1, 2}}, "B": {t1: {3, 4, 5, 6}}},
		},
		{
			name:   "a partition claimed twice stays with the first member, others beyond the count are dropped",
			topics: topics(t1, 4),
			members: []Member{
				{ID: "A", Topics: sub(t1), Current: Assignment{t1: {0, 1, 7}}},
				{ID: "B", Topics: sub(t1), Current: Assignment{t1: {1, -1}}},
			},
			want: map[string]Assignment{"A": {t1: {0, 1}}, "B": {t1: {2, 3}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Members: tc.members, Topics: tc.topics}
			got, err := Uniform{}.Assign(spec)
			if err != nil {
				t.Fatal(err)
			}
			assertAssignment(t, tc.want, got)
			checkValid(t, spec, got)
			checkHomogeneousBalance(t, got)
		})
	}
}

// TestUniformHeterogeneous ports the facts of Kafka's
// UniformHeterogeneousAssignmentBuilderTest, with its topic ids and its
// members in id order: the answers are Kafka's.
func TestUniformHeterogeneous(t *testing.T) {
	cases := []struct {
		name    string
		topics  map[TopicID]Topic
		members []Member
		want    map[string]Assignment
	}{
		{
			name:   "first assignment, two members, two topics",
			topics: topics(t1, 3, t3, 6),
			members: []Member{
				{ID: "A", Topics: sub(t1, t3)},
				{ID: "B", Topics: sub(t3)},
			},
			want: map[string]Assignment{"A": {t1: {0, 1, 2}, t3: {4}}, "B": {t3: {0, 1, 2, 3, 5}}},
		},
		{
			name:   "more members than partitions",
			topics: topics(t3, 1, t1, 2),
			members: []Member{
				{ID: "A", Topics: sub(t3)}, {ID: "B", Topics: sub(t3)}, {ID: "C", Topics: sub(t1)},
			},
			want: map[string]Assignment{"A": {t3: {0}}, "B": {}, "C": {t1: {0, 1}}},
		},
		{
			name:   "unbalanced previous assignment, three topics",
			topics: topics(t1, 6, t2, 4, t3, 4),
			members: []Member{
				{ID: "A", Topics: sub(t1), Current: Assignment{t1: {0, 1, 2}}},
				{ID: "B", Topics: sub(t1, t2), Current: Assignment{t1: {3}, t2: {0}}},
				{ID: "C", Topics: sub(t1, t2, t3), Current: Assignment{t1: {4, 5}, t2: {1, 2, 3}, t3: {0, 1, 2, 3}}},
			},
			want: map[string]Assignment{
				"A": {t1: {0, 1, 2, 5}},
				"B": {t1: {3}, t2: {0, 1, 2, 3}},
				"C": {t1: {4}, t3: {0, 1, 2, 3}},
			},
		},
		{
			name:   "partitions added",
			topics: topics(t1, 6, t2, 5, t3, 3, t4, 3),
			members: []Member{
				{ID: "A", Topics: sub(t1, t3), Current: Assignment{t1: {0, 1, 2, 3}, t3: {0, 1}}},
				{ID: "B", Topics: sub(t1, t2, t3, t4), Current: Assignment{t2: {0, 1, 2}, t4: {0, 1, 2}}},
			},
			want: map[string]Assignment{
				"A": {t1: {0, 1, 2, 3, 4, 5}, t3: {0, 1, 2}},
				"B": {t2: {0, 1, 2, 3, 4}, t4: {0, 1, 2}},
			},
		},
		{
			name:   "one member and partitions added",
			topics: topics(t1, 6, t2, 7),
			members: []Member{
				{ID: "A", Topics: sub(t1), Current: Assignment{t1: {0, 2}, t2: {0}}},
				{ID: "B", Topics: sub(t1, t2), Current: Assignment{t1: {1}, t2: {1, 2}}},
				{ID: "C", Topics: sub(t1, t2)},
			},
			want: map[string]Assignment{
				"A": {t1: {0, 2, 3, 4, 5}},
				"B": {t1: {1}, t2: {1, 2, 6}},
				"C": {t2: {0, 3, 4, 5}},
			},
		},
		{
			name:   "one member removed, three topics",
			topics: topics(t1, 3, t2, 8, t3, 3),
			members: []Member{
				{ID: "A", Topics: sub(t1, t3), Current: Assignment{t1: {0, 1, 2}, t3: {0, 1}}},
				{ID: "B", Topics: sub(t2), Current: Assignment{t2: {3, 4, 5, 6}}},
			},
			want: map[string]Assignment{
				"A": {t1: {0, 1, 2}, t3: {0, 1, 2}},
				"B": {t2: {0, 1, 2, 3, 4, 5, 6, 7}},
			},
		},
		{
			name:   "one subscription removed",
			topics: topics(t1, 3, t2, 5),
			members: []Member{
				{ID: "A", Topics: sub(t1), Current: Assignment{t1: {0, 2}, t2: {1, 3}}},
				{ID: "B", Topics: sub(t1, t2), Current: Assignment{t1: {1}, t2: {0, 2, 4}}},
			},
			want: map[string]Assignment{"A": {t1: {0, 1, 2}}, "B": {t2: {0, 1, 2, 3, 4}}},
		},
		{
			name:   "one member without subscriptions",
			topics: topics(t1, 3),
			members: []Member{
				{ID: "A", Topics: sub(t1)},
				{ID: "B"},
			},
			want: map[string]Assignment{"A": {t1: {0, 1, 2}}, "B": {}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Members: tc.members, Topics: tc.topics}
			got, err := Uniform{}.Assign(spec)
			if err != nil {
				t.Fatal(err)
			}
			assertAssignment(t, tc.want, got)
			checkValid(t, spec, got)
		})
	}
}

// TestHeterogeneousPartitionsRunOut is Kafka's edge case where a topic runs
// out of partitions to move before its subscribers are balanced, and the
// least loaded subscriber starts with none of the topic: the per-topic loop
// must stop. Kafka forces its heterogeneous builder on a homogeneous group
// here; so does this test.
func TestHeterogeneousPartitionsRunOut(t *testing.T) {
	spec := &Spec{
		Members: []Member{
			{ID: "A", Topics: sub(t1, t2, t3), Current: Assignment{t1: {0, 1}, t2: {0, 1}, t3: {0, 1}}},
			{ID: "B", Topics: sub(t1, t2, t3)},
		},
		Topics: topics(t1, 2, t2, 2, t3, 2),
	}
	g, err := prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	got := newHeterogeneous(g).build().result(g)
	assertAssignment(t, map[string]Assignment{
		"A": {t2: {0}, t3: {0, 1}},
		"B": {t1: {0, 1}, t2: {1}},
	}, got)
}

// TestRange ports the facts of Kafka's RangeAssignorTest.
func TestRange(t *testing.T) {
	cases := []struct {
		name    string
		topics  map[TopicID]Topic
		members []Member
		want    map[string]Assignment
	}{
		{
			name:   "same subscriptions are co-partitioned",
			topics: topics(t1, 3, t2, 3),
			members: []Member{
				{ID: "A", Topics: sub(t1, t2)}, {ID: "B", Topics: sub(t1, t2)},
			},
			want: map[string]Assignment{"A": {t1: {0, 1}, t2: {0, 1}}, "B": {t1: {2}, t2: {2}}},
		},
		{
			name:   "three members, three topics, different subscriptions",
			topics: topics(t1, 3, t2, 3, t3, 2),
			members: []Member{
				{ID: "A", Topics: sub(t1, t2)}, {ID: "B", Topics: sub(t3)}, {ID: "C", Topics: sub(t2, t3)},
			},
			want: map[string]Assignment{
				"A": {t1: {0, 1, 2}, t2: {0, 1}},
				"B": {t3: {0}},
				"C": {t2: {2}, t3: {1}},
			},
		},
		{
			name:   "more members than partitions",
			topics: topics(t1, 2),
			members: []Member{
				{ID: "A", Topics: sub(t1)}, {ID: "B", Topics: sub(t1)}, {ID: "C", Topics: sub(t1)},
			},
			want: map[string]Assignment{"A": {t1: {0}}, "B": {t1: {1}}, "C": {}},
		},
		{
			name:   "static members first, by instance id",
			topics: topics(t1, 5),
			members: []Member{
				{ID: "A", InstanceID: "instance-z", Topics: sub(t1)},
				{ID: "B", Topics: sub(t1)},
				{ID: "C", InstanceID: "instance-a", Topics: sub(t1)},
			},
			want: map[string]Assignment{"C": {t1: {0, 1}}, "A": {t1: {2, 3}}, "B": {t1: {4}}},
		},
		{
			name:   "one partition added, current assignment ignored",
			topics: topics(t1, 4, t2, 3),
			members: []Member{
				{ID: "A", Topics: sub(t1, t2), Current: Assignment{t1: {2}, t2: {2}}},
				{ID: "B", Topics: sub(t1, t2), Current: Assignment{t1: {0, 1}, t2: {0, 1}}},
			},
			want: map[string]Assignment{"A": {t1: {0, 1}, t2: {0, 1}}, "B": {t1: {2, 3}, t2: {2}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Members: tc.members, Topics: tc.topics}
			got, err := Range{}.Assign(spec)
			if err != nil {
				t.Fatal(err)
			}
			assertAssignment(t, tc.want, got)
			checkValid(t, spec, got)
		})
	}
}

// TestRangeStaticMemberRejoins is Kafka's testStaticMembership: a static
// member that comes back under a new member id with its instance id gets
// its partitions back.
func TestRangeStaticMemberRejoins(t *testing.T) {
	tops := topics(t1, 3)
	first, err := Range{}.Assign(&Spec{Topics: tops, Members: []Member{
		{ID: "A", InstanceID: "instanceA", Topics: sub(t1)},
		{ID: "B", InstanceID: "instanceB", Topics: sub(t1)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// "A1" sorts before "B" as "A" did; use "Z1" so that a member id order
	// would give a different answer.
	second, err := Range{}.Assign(&Spec{Topics: tops, Members: []Member{
		{ID: "Z1", InstanceID: "instanceA", Topics: sub(t1)},
		{ID: "B", InstanceID: "instanceB", Topics: sub(t1)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first["A"], second["Z1"]) || !reflect.DeepEqual(first["B"], second["B"]) {
		t.Fatalf("static member lost its partitions: %v then %v", first, second)
	}
}

// TestDeterministic checks that the order of Spec.Members does not matter.
func TestDeterministic(t *testing.T) {
	members := []Member{
		{ID: "m3", Topics: sub(t1, t2), Current: Assignment{t1: {5, 0}}},
		{ID: "m1", Topics: sub(t2, t3)},
		{ID: "m2", InstanceID: "i", Topics: sub(t1, t2, t3), Current: Assignment{t3: {1}}},
		{ID: "m0", Topics: sub(t1)},
	}
	tops := topics(t1, 7, t2, 5, t3, 9)
	for _, a := range []Assignor{Uniform{}, Range{}} {
		want, err := a.Assign(&Spec{Members: members, Topics: tops})
		if err != nil {
			t.Fatal(err)
		}
		rev := slices.Clone(members)
		slices.Reverse(rev)
		got, err := a.Assign(&Spec{Members: rev, Topics: tops})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%s: member order changed the answer: %v vs %v", a.Name(), want, got)
		}
	}
}

// checkValid checks an assignor's output against its input: an entry per
// member; every assigned partition exists, belongs to a topic the member
// subscribes to, is sorted and is assigned once; every partition of every
// subscribed topic is assigned.
func checkValid(t *testing.T, spec *Spec, got map[string]Assignment) {
	t.Helper()
	if len(got) != len(spec.Members) {
		t.Fatalf("%d assignments for %d members", len(got), len(spec.Members))
	}
	owner := map[TopicID]map[int32]string{}
	subscribed := map[TopicID]bool{}
	for _, m := range spec.Members {
		a, ok := got[m.ID]
		if !ok {
			t.Fatalf("member %s missing", m.ID)
		}
		for tid, ps := range a {
			if !slices.Contains(m.Topics, tid) {
				t.Fatalf("member %s got topic %x it does not subscribe to", m.ID, tid)
			}
			if len(ps) == 0 || !slices.IsSorted(ps) {
				t.Fatalf("member %s: partitions %v empty or unsorted", m.ID, ps)
			}
			for _, p := range ps {
				if p < 0 || p >= spec.Topics[tid].Partitions {
					t.Fatalf("member %s got partition %d of a %d-partition topic", m.ID, p, spec.Topics[tid].Partitions)
				}
				if owner[tid] == nil {
					owner[tid] = map[int32]string{}
				}
				if o, dup := owner[tid][p]; dup {
					t.Fatalf("partition %x-%d assigned to %s and %s", tid, p, o, m.ID)
				}
				owner[tid][p] = m.ID
			}
		}
		for _, tid := range m.Topics {
			subscribed[tid] = true
		}
	}
	for tid := range subscribed {
		if n := len(owner[tid]); n != int(spec.Topics[tid].Partitions) {
			t.Fatalf("topic %x: %d of %d partitions assigned", tid, n, spec.Topics[tid].Partitions)
		}
	}
}

// checkHomogeneousBalance checks that partition counts differ by at most one.
func checkHomogeneousBalance(t *testing.T, got map[string]Assignment) {
	t.Helper()
	lo, hi := -1, -1
	for _, id := range slices.Sorted(maps.Keys(got)) {
		n := got[id].Count()
		if lo == -1 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced: counts from %d to %d in %v", lo, hi, got)
	}
}
