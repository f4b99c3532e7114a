package assignor

// Uniform is Kafka's `uniform` assignor (UniformAssignor): a balanced and
// sticky assignment. When every member subscribes to the same topics it
// runs the homogeneous builder, otherwise the heterogeneous one, as Kafka
// chooses between UniformHomogeneousAssignmentBuilder and
// UniformHeterogeneousAssignmentBuilder.
//
// Priorities, as Kafka's: balance first, then stickiness.
//
//   - Homogeneous: partition counts differ by at most one between any two
//     members, and the number of partitions that change owner is the
//     smallest any such balanced assignment allows.
//   - Heterogeneous: each topic's subscribers end up within one partition
//     of each other whenever moving that topic's partitions can achieve it
//     (Kafka's iterative balancing, at most 16 rounds); with overlapping,
//     non-identical subscriptions the totals may differ by more, exactly as
//     Kafka's builder leaves them.
type Uniform struct{}

// Name returns "uniform".
func (Uniform) Name() string { return UniformName }

// Assign computes the target assignment of spec. See Assignor.
func (Uniform) Assign(spec *Spec) (map[string]Assignment, error) {
	g, err := prepare(spec)
	if err != nil {
		return nil, err
	}
	if g.homogeneous {
		return g.uniformHomogeneous().result(g), nil
	}
	return newHeterogeneous(g).build().result(g), nil
}

// uniformHomogeneous is Kafka's UniformHomogeneousAssignmentBuilder with one
// change: Kafka hands the quota's extra partitions (total % members) to the
// first members in iteration order, so a member holding minQuota+1
// partitions that comes late may lose one while an earlier member with
// minQuota gains one: a needless move. Here the extra slots go first to
// members that already hold more than the minimum (in member id order),
// which keeps the most partitions in place; the balance is the same.
//
// Steps: every member claims the still valid partitions of its current
// assignment (subscribed topic, partition in range, not claimed by an
// earlier member); each member gets its quota (minQuota, or minQuota+1 for
// `extra` of them); claims beyond the quota are released in the order of
// the member's current assignment; then the unowned partitions, in topic
// order then partition order, fill the members below their quota, in member
// order.
func (g *group) uniformHomogeneous() owners {
	o := newOwners(g)
	if len(g.members) == 0 || len(g.topics) == 0 {
		return o
	}
	total := 0
	for _, t := range g.topics {
		total += g.partitions(t)
	}
	n := len(g.members)
	minQuota, extra := total/n, total%n

	held := make([]int, n)
	for i, m := range g.members {
		for t, ps := range m.Current {
			own, ok := o[t] // every member subscribes to exactly o's topics
			if !ok {
				continue
			}
			for _, p := range ps {
				if p >= 0 && int(p) < len(own) && own[p] == -1 {
					own[p] = int32(i)
					held[i]++
				}
			}
		}
	}

	quota := make([]int, n)
	for i := range quota {
		quota[i] = minQuota
	}
	for i := 0; i < n && extra > 0; i++ {
		if held[i] > minQuota {
			quota[i]++
			extra--
		}
	}
	for i := 0; i < n && extra > 0; i++ {
		if quota[i] == minQuota {
			quota[i]++
			extra--
		}
	}

	for i, m := range g.members {
		if held[i] <= quota[i] {
			continue
		}
		keep := quota[i]
		for _, t := range g.subs[i] {
			own := o[t]
			for _, p := range m.Current[t] {
				if p < 0 || int(p) >= len(own) || own[p] != int32(i) {
					continue
				}
				if keep > 0 {
					keep--
					continue
				}
				own[p] = -1
				held[i]--
			}
		}
	}

	i := 0
	for _, t := range g.topics {
		own := o[t]
		for p := range own {
			if own[p] != -1 {
				continue
			}
			for i < n && held[i] >= quota[i] {
				i++
			}
			// i < n: the quotas sum to total, and every held partition
			// counts against its member's quota.
			own[p] = int32(i)
			held[i]++
		}
	}
	return o
}
