package assignor

import (
	"fmt"
	"testing"
)

// benchSpec builds the scale: 1,000 members over 10,000 partitions
// (100 topics of 100). Homogeneous: every member subscribes to every topic.
// Heterogeneous: member i subscribes to the topics j with (i+j)%4 != 0, so
// four overlapping subscriptions of 75 topics each.
func benchSpec(homogeneous bool) *Spec {
	const members, topicCount, partitions = 1000, 100, 100
	spec := &Spec{Topics: make(map[TopicID]Topic, topicCount)}
	ids := make([]TopicID, topicCount)
	for j := range ids {
		ids[j] = TopicID{0: byte(j >> 8), 1: byte(j), 15: 1}
		spec.Topics[ids[j]] = Topic{ID: ids[j], Name: fmt.Sprintf("topic-%d", j), Partitions: partitions}
	}
	for i := range members {
		m := Member{ID: fmt.Sprintf("member-%04d", i)}
		for j, id := range ids {
			if homogeneous || (i+j)%4 != 0 {
				m.Topics = append(m.Topics, id)
			}
		}
		spec.Members = append(spec.Members, m)
	}
	return spec
}

// BenchmarkAssign times one assignment of 1,000 members over 10,000
// partitions: from scratch (no current assignment), and after one member
// joins a group that holds the from-scratch assignment.
func BenchmarkAssign(b *testing.B) {
	for _, a := range []Assignor{Uniform{}, Range{}} {
		for _, homogeneous := range []bool{true, false} {
			kind := "heterogeneous"
			if homogeneous {
				kind = "homogeneous"
			}
			scratch := benchSpec(homogeneous)
			first, err := a.Assign(scratch)
			if err != nil {
				b.Fatal(err)
			}
			joined := withCurrent(scratch, first)
			joined.Members = append(joined.Members, Member{ID: "member-joiner", Topics: scratch.Members[1].Topics})
			for _, c := range []struct {
				start string
				spec  *Spec
			}{{"scratch", scratch}, {"join", joined}} {
				b.Run(fmt.Sprintf("assignor=%s/subscriptions=%s/start=%s", a.Name(), kind, c.start), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := a.Assign(c.spec); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
