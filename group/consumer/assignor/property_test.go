package assignor

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("assignor.seed", 0, "seed of the randomized assignor tests (0: from the clock)")

// testRand returns the generator of a randomized test and logs its seed;
// rerun a failure with -assignor.seed=N.
func testRand(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -assignor.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

func randomTopicID(rng *rand.Rand) TopicID {
	var id TopicID
	for i := range id {
		id[i] = byte(rng.UintN(256))
	}
	return id
}

// randomSpec draws 1-8 topics of 1-24 partitions and 1-30 members. With
// homogeneous, every member subscribes to the same non-empty set; else
// each draws its own subset (possibly empty). With messy, current
// assignments are random claims: duplicates, partitions past the count,
// unsubscribed topics; else they are empty.
func randomSpec(rng *rand.Rand, homogeneous, messy bool) *Spec {
	spec := &Spec{Topics: map[TopicID]Topic{}}
	var ids []TopicID
	for range 1 + rng.IntN(8) {
		id := randomTopicID(rng)
		ids = append(ids, id)
		spec.Topics[id] = Topic{ID: id, Partitions: int32(1 + rng.IntN(24))}
	}
	draw := func() []TopicID {
		var s []TopicID
		for _, id := range ids {
			if rng.IntN(2) == 0 {
				s = append(s, id)
			}
		}
		return s
	}
	common := draw()
	if len(common) == 0 {
		common = ids[:1]
	}
	for i := range 1 + rng.IntN(30) {
		m := Member{ID: fmt.Sprintf("member-%02d", i), Topics: common}
		if !homogeneous {
			m.Topics = draw()
		}
		if messy {
			m.Current = Assignment{}
			for range rng.IntN(6) {
				id := ids[rng.IntN(len(ids))]
				m.Current[id] = append(m.Current[id], int32(rng.IntN(30))-2)
			}
		}
		spec.Members = append(spec.Members, m)
	}
	return spec
}

// TestAssignorProperties checks, over random groups, what every assignment
// must satisfy: every subscribed partition is assigned exactly once and
// only to a subscriber (checkValid); the uniform assignor of a homogeneous
// group is balanced to one partition; range is balanced to one partition
// per topic among the topic's subscribers; the uniform heterogeneous
// builder leaves no topic where a single move would even two subscribers'
// totals out; and uniform is stable: fed its own output, it changes
// nothing.
func TestAssignorProperties(t *testing.T) {
	rng := testRand(t)
	for iter := range 400 {
		homogeneous, messy := iter%2 == 0, iter%3 == 0
		spec := randomSpec(rng, homogeneous, messy)
		name := fmt.Sprintf("iter=%d/homogeneous=%v/messy=%v", iter, homogeneous, messy)

		got, err := Uniform{}.Assign(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkValid(t, spec, got)
		if homogeneous {
			checkHomogeneousBalance(t, got)
		} else {
			checkTopicBalance(t, spec, got)
		}
		again := withCurrent(spec, got)
		got2, err := Uniform{}.Assign(again)
		if err != nil {
			t.Fatal(err)
		}
		if moved := movedPartitions(got, got2); moved != 0 {
			t.Fatalf("%s: uniform fed its own output moved %d partitions", name, moved)
		}

		got, err = Range{}.Assign(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkValid(t, spec, got)
		checkRangeBalance(t, spec, got)

		// Determinism: the order of the members does not matter.
		shuffled := &Spec{Topics: spec.Topics, Members: slices.Clone(spec.Members)}
		rng.Shuffle(len(shuffled.Members), func(i, j int) {
			shuffled.Members[i], shuffled.Members[j] = shuffled.Members[j], shuffled.Members[i]
		})
		for _, a := range []Assignor{Uniform{}, Range{}} {
			x, err1 := a.Assign(spec)
			y, err2 := a.Assign(shuffled)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(x, y) {
				t.Fatalf("%s: %s depends on the member order (%v, %v)", name, a.Name(), err1, err2)
			}
		}
	}
}

// TestRangeStaticMembersKeepPartitions checks, over random groups of
// static members, Kafka's promise for range: a static member that
// rejoins under a new member id gets the same partitions, as long as the
// members, subscriptions and topics are unchanged.
func TestRangeStaticMembersKeepPartitions(t *testing.T) {
	rng := testRand(t)
	for iter := range 200 {
		spec := randomSpec(rng, iter%2 == 0, false)
		for i := range spec.Members {
			// Unique, as a group's instance ids are, in a random order.
			spec.Members[i].InstanceID = fmt.Sprintf("instance-%03d-%d", rng.IntN(1000), i)
		}
		before, err := Range{}.Assign(spec)
		if err != nil {
			t.Fatal(err)
		}
		i := rng.IntN(len(spec.Members))
		old := spec.Members[i].ID
		spec.Members[i].ID = fmt.Sprintf("rejoined-%d", rng.IntN(1000))
		after, err := Range{}.Assign(spec)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(before[old], after[spec.Members[i].ID]) {
			t.Fatalf("iter %d: %s rejoined as %s and got %v instead of %v", iter, old, spec.Members[i].ID, after[spec.Members[i].ID], before[old])
		}
	}
}

// TestUniformStickyJoinLeave checks stickiness when one member joins or
// leaves a homogeneous group: the number of partitions that leave a
// surviving member is the smallest that any balanced assignment allows.
// With P partitions over M members (q = P/M, r = P%M), member i holding h_i
// can keep at most min(h_i, q), plus one for r of the members holding more
// than q; everything else it holds must move.
func TestUniformStickyJoinLeave(t *testing.T) {
	rng := testRand(t)
	for iter := range 300 {
		spec := randomSpec(rng, true, false)
		first, err := Uniform{}.Assign(spec)
		if err != nil {
			t.Fatal(err)
		}
		next := withCurrent(spec, first)
		join := iter%2 == 0
		if join || len(next.Members) == 1 {
			next.Members = append(next.Members, Member{ID: fmt.Sprintf("joiner-%d", rng.IntN(100)), Topics: spec.Members[0].Topics})
		} else {
			i := rng.IntN(len(next.Members))
			next.Members = slices.Delete(next.Members, i, i+1)
		}
		second, err := Uniform{}.Assign(next)
		if err != nil {
			t.Fatal(err)
		}
		checkValid(t, next, second)
		checkHomogeneousBalance(t, second)

		total := 0
		for _, tid := range spec.Members[0].Topics {
			total += int(spec.Topics[tid].Partitions)
		}
		n := len(next.Members)
		q, r := total/n, total%n
		held, keepable, over := 0, 0, 0
		for _, m := range next.Members {
			h := m.Current.Count()
			held += h
			keepable += min(h, q)
			if h > q {
				over++
			}
		}
		keepable += min(r, over)
		if moved := movedPartitions(first, second); moved != held-keepable {
			t.Fatalf("iter %d (join=%v, %d members, %d partitions): moved %d partitions, the minimum is %d",
				iter, join, n, total, moved, held-keepable)
		}
	}
}

// TestUniformHeterogeneousJoinLeave checks a member joining or leaving a
// heterogeneous group: the answer stays valid and per-topic balanced, and
// a surviving member only gives up partitions when it ends up holding at
// least as many as the member that took them.
func TestUniformHeterogeneousJoinLeave(t *testing.T) {
	rng := testRand(t)
	for iter := range 300 {
		spec := randomSpec(rng, false, false)
		first, err := Uniform{}.Assign(spec)
		if err != nil {
			t.Fatal(err)
		}
		next := withCurrent(spec, first)
		if iter%2 == 0 || len(next.Members) == 1 {
			next.Members = append(next.Members, Member{ID: "joiner", Topics: spec.Members[rng.IntN(len(spec.Members))].Topics})
		} else {
			i := rng.IntN(len(next.Members))
			next.Members = slices.Delete(next.Members, i, i+1)
		}
		second, err := Uniform{}.Assign(next)
		if err != nil {
			t.Fatal(err)
		}
		checkValid(t, next, second)
		checkTopicBalance(t, next, second)
		after := owners2(second)
		for id, a := range first {
			if _, alive := second[id]; !alive {
				continue
			}
			for tid, ps := range a {
				for _, p := range ps {
					to, ok := after[tid][p]
					if ok && to != id && second[to].Count() > second[id].Count()+1 {
						t.Fatalf("iter %d: %x-%d moved from %s (%d) to the busier %s (%d)",
							iter, tid, p, id, second[id].Count(), to, second[to].Count())
					}
				}
			}
		}
	}
}

// withCurrent returns a copy of spec whose members' current assignments
// are a.
func withCurrent(spec *Spec, a map[string]Assignment) *Spec {
	next := &Spec{Topics: spec.Topics, Members: slices.Clone(spec.Members)}
	for i := range next.Members {
		next.Members[i].Current = a[next.Members[i].ID]
	}
	return next
}

// owners2 inverts an assignment: topic, partition -> member.
func owners2(a map[string]Assignment) map[TopicID]map[int32]string {
	o := map[TopicID]map[int32]string{}
	for id, as := range a {
		for tid, ps := range as {
			if o[tid] == nil {
				o[tid] = map[int32]string{}
			}
			for _, p := range ps {
				o[tid][p] = id
			}
		}
	}
	return o
}

// movedPartitions counts the partitions owned in before by a member still
// present in after that are owned by someone else in after.
func movedPartitions(before, after map[string]Assignment) int {
	o := owners2(after)
	moved := 0
	for id, a := range before {
		if _, alive := after[id]; !alive {
			continue
		}
		for tid, ps := range a {
			for _, p := range ps {
				if o[tid][p] != id {
					moved++
				}
			}
		}
	}
	return moved
}

// checkTopicBalance checks the heterogeneous builder's balance: for each
// topic, no subscriber holding one of its partitions has more than one
// partition more in total than another subscriber of it (else moving that
// partition would even them out, and Kafka's balancing rounds would have).
func checkTopicBalance(t *testing.T, spec *Spec, got map[string]Assignment) {
	t.Helper()
	subs := map[TopicID][]string{}
	for _, m := range spec.Members {
		for _, tid := range slices.Compact(slices.Clone(m.Topics)) {
			subs[tid] = append(subs[tid], m.ID)
		}
	}
	for tid, ms := range subs {
		minCount := -1
		for _, id := range ms {
			if c := got[id].Count(); minCount == -1 || c < minCount {
				minCount = c
			}
		}
		for _, id := range ms {
			if len(got[id][tid]) > 0 && got[id].Count() > minCount+1 {
				t.Fatalf("topic %x: %s holds %d partitions in total, a fellow subscriber %d", tid, id, got[id].Count(), minCount)
			}
		}
	}
}

// checkRangeBalance checks that each topic's subscribers get counts of it
// that differ by at most one.
func checkRangeBalance(t *testing.T, spec *Spec, got map[string]Assignment) {
	t.Helper()
	lo, hi := map[TopicID]int{}, map[TopicID]int{}
	for _, m := range spec.Members {
		for _, tid := range m.Topics {
			n := len(got[m.ID][tid])
			if l, ok := lo[tid]; !ok || n < l {
				lo[tid] = n
			}
			hi[tid] = max(hi[tid], n)
		}
	}
	for tid := range lo {
		if hi[tid]-lo[tid] > 1 {
			t.Fatalf("range: topic %x counts from %d to %d", tid, lo[tid], hi[tid])
		}
	}
}
