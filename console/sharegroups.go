package console

// Share groups (KIP-932) on the group pages: DescribeGroups answers a share
// group Dead, as Kafka does, so the list and the group page ask
// ShareGroupDescribe for them (state, assignor, members and their
// assignments in the topics the principal may Describe). Share groups keep
// no committed offsets: their offsets and lag are the share-partition
// side's (DescribeShareGroupOffsets).

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice/sluice/acl"
)

// describeShareGroups describes the share groups among names (by their
// listed type); nil when there are none or the broker does not serve
// ShareGroupDescribe.
func describeShareGroups(ctx context.Context, adm *kadm.Client, listed kadm.ListedGroups, names []string) kadm.DescribedShareGroups {
	var share []string
	for _, n := range names {
		if listed[n].GroupType == "share" {
			share = append(share, n)
		}
	}
	if len(share) == 0 {
		return nil
	}
	d, _ := adm.DescribeShareGroups(ctx, share...)
	return d
}

// shareGroupJSON is a described share group as the group page shows it.
func (q *request) shareGroupJSON(d kadm.DescribedShareGroup) groupJSON {
	out := groupJSON{
		GroupID: d.GroupID, State: d.GroupState, ProtocolType: "share", Protocol: d.Assignor,
		Coordinator: d.Coordinator.NodeID, Members: []memberJSON{}, Offsets: []groupOffsetJSON{},
	}
	for _, m := range d.Members {
		mj := memberJSON{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assignments: []assignmentJSON{}}
		for _, t := range slices.Sorted(maps.Keys(m.Assignment)) {
			if q.allowed(acl.OpDescribe, acl.ResourceTopic, t) {
				mj.Assignments = append(mj.Assignments, assignmentJSON{Topic: t, Partitions: nonNil(slices.Sorted(maps.Keys(m.Assignment[t])))})
			}
		}
		out.Members = append(out.Members, mj)
	}
	return out
}
