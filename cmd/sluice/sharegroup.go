package main

// `sluice share-group`, after Kafka 4.2's kafka-share-groups.sh: it lists,
// describes (state and members, with --state or --members; --verbose adds
// the epochs) and deletes share groups (KIP-932) through the Kafka
// protocol. The offsets view (START-OFFSET, LAG) and reset-offsets need
// DescribeShareGroupOffsets and AlterShareGroupOffsets (keys 90, 91), the
// share-partition side's: they are not here yet.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func shareGroupCmd(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("share-group", []subcommand{
		{"list", "[--state STATE ...]",
			"list share groups with their state (GROUP STATE, as kafka-share-groups.sh --list --state)", shareGroupList},
		{"describe", "GROUP... [--state | --members] [--verbose]",
			"show each group's state (coordinator, #members; --verbose: group and assignment epochs) and members with their assignment", shareGroupDescribe},
		{"delete", "GROUP...",
			"delete share groups that have no members", shareGroupDelete},
	}, args, stdout, stderr)
}

func shareGroupList(c *adminCmd) error {
	var states stringList
	c.flags.Var(&states, "state", "only groups in this `state` (Empty, Stable; repeatable)")
	return c.run(noArgs, func(adm *kadm.Client, ctx context.Context, _ []string) error {
		listed, err := adm.ListGroupsByType(ctx, []string{"share"}, states...)
		if err != nil {
			return c.brokerErr("list share groups", err)
		}
		t := newTable(c.stdout, "GROUP", "STATE")
		for _, g := range listed.Sorted() {
			t.row(g.Group, orDash(g.State))
		}
		t.flush()
		return nil
	})
}

func shareGroupDescribe(c *adminCmd) error {
	var onlyState, onlyMembers, verbose bool
	c.flags.BoolVar(&onlyState, "state", false, "only the state view")
	c.flags.BoolVar(&onlyMembers, "members", false, "only the members view")
	c.flags.BoolVar(&verbose, "verbose", false, "add the group, assignment and member epochs")
	return c.run(oneOrMore("group"), func(adm *kadm.Client, ctx context.Context, names []string) error {
		if onlyState && onlyMembers {
			return usageErr("--state and --members are exclusive")
		}
		described, err := adm.DescribeShareGroups(ctx, names...)
		if err != nil && len(described) == 0 {
			return c.brokerErr("describe share groups", err)
		}
		first := true
		return eachNamed(names, described, func(name string, g kadm.DescribedShareGroup) error {
			switch {
			case errors.Is(g.Err, kerr.GroupIDNotFound), g.Err == nil && g.GroupState == "Dead":
				return fmt.Errorf("share group %q does not exist", name)
			case g.Err != nil:
				return errors.New(name + ": " + g.Err.Error())
			}
			if !first {
				fmt.Fprintln(c.stdout)
			}
			first = false
			if !onlyMembers {
				printShareState(c.stdout, g, verbose)
			}
			if !onlyState {
				if !onlyMembers {
					fmt.Fprintln(c.stdout)
				}
				printShareMembers(c.stdout, g, verbose)
			}
			return nil
		})
	})
}

// printShareState is kafka-share-groups.sh --describe --state.
func printShareState(w io.Writer, g kadm.DescribedShareGroup, verbose bool) {
	coord := fmt.Sprintf("%s:%d  (%d)", g.Coordinator.Host, g.Coordinator.Port, g.Coordinator.NodeID)
	if verbose {
		t := newTable(w, "GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS")
		t.row(g.GroupID, coord, g.GroupState, strconv.Itoa(int(g.GroupEpoch)), strconv.Itoa(int(g.AssignmentEpoch)), strconv.Itoa(len(g.Members)))
		t.flush()
		return
	}
	t := newTable(w, "GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS")
	t.row(g.GroupID, coord, g.GroupState, strconv.Itoa(len(g.Members)))
	t.flush()
}

// printShareMembers is kafka-share-groups.sh --describe --members: one row
// per member, its assignment as topic:p,p;topic:p.
func printShareMembers(w io.Writer, g kadm.DescribedShareGroup, verbose bool) {
	if len(g.Members) == 0 {
		fmt.Fprintf(w, "Share group '%s' has no active members.\n", g.GroupID)
		return
	}
	header := []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}
	if verbose {
		header = append(header, "MEMBER-EPOCH")
	}
	t := newTable(w, append(header, "ASSIGNMENT")...)
	members := slices.Clone(g.Members)
	slices.SortFunc(members, func(a, b kadm.ShareGroupMember) int { return strings.Compare(a.MemberID, b.MemberID) })
	for _, m := range members {
		n, parts := 0, []string{}
		for topic, ps := range m.Assignment {
			sorted := make([]int32, 0, len(ps))
			for p := range ps {
				sorted = append(sorted, p)
			}
			slices.Sort(sorted)
			n += len(sorted)
			parts = append(parts, topic+":"+int32s(sorted))
		}
		slices.Sort(parts)
		row := []string{g.GroupID, m.MemberID, orDash(m.ClientHost), orDash(m.ClientID), strconv.Itoa(n)}
		if verbose {
			row = append(row, strconv.Itoa(int(m.MemberEpoch)))
		}
		t.row(append(row, orDash(strings.Join(parts, ";")))...)
	}
	t.flush()
}

func shareGroupDelete(c *adminCmd) error {
	return c.run(oneOrMore("group"), func(adm *kadm.Client, ctx context.Context, names []string) error {
		resps, err := adm.DeleteGroups(ctx, names...)
		if err != nil {
			return c.brokerErr("delete share groups", err)
		}
		return eachNamed(names, resps, func(name string, r kadm.DeleteGroupResponse) error {
			switch {
			case r.Err == nil:
				fmt.Fprintf(c.stdout, "Deleted share group %s.\n", name)
			case errors.Is(r.Err, kerr.NonEmptyGroup):
				return fmt.Errorf("share group %q is not empty; stop its consumers first", name)
			case errors.Is(r.Err, kerr.GroupIDNotFound):
				return fmt.Errorf("share group %q does not exist", name)
			default:
				return errors.New(name + ": " + errText(r.Err, r.ErrMessage))
			}
			return nil
		})
	})
}
