package main

// `sluice share-group`, after Kafka 4.2's kafka-share-groups.sh: it lists,
// describes (state and members, with --state or --members; --verbose adds
// the epochs) and deletes share groups (KIP-932) through the Kafka
// protocol. --offsets is the offsets view (START-OFFSET, LAG; --verbose
// adds LEADER-EPOCH) from DescribeShareGroupOffsets (key 90): every
// partition the group has share state for, and any a member is assigned
// without state yet ("-"). reset-offsets and delete-offsets:
// sharegroup_offsets.go.

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
		{"describe", "GROUP... [--state | --members | --offsets] [--verbose]",
			"show each group's state (coordinator, #members; --verbose: group and assignment epochs) and members with their assignment; --offsets: each partition's share-partition start offset and lag", shareGroupDescribe},
		{"delete", "GROUP...",
			"delete share groups that have no members", shareGroupDelete},
		{"reset-offsets", "(--group G | G) (--topic T[:p,p] ... | --all-topics) (--to-earliest | --to-latest | --to-offset N | --to-datetime RFC3339 | --by-duration D) [--dry-run | --execute]",
			"set the share-partition start offsets of an empty group (AlterShareGroupOffsets); a dry run by default", shareGroupResetOffsets},
		{"delete-offsets", "(--group G | G) --topic T ...",
			"forget an empty group's share state of topics (DeleteShareGroupOffsets)", shareGroupDeleteOffsets},
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
	var onlyState, onlyMembers, offsets, verbose bool
	c.flags.BoolVar(&onlyState, "state", false, "only the state view")
	c.flags.BoolVar(&onlyMembers, "members", false, "only the members view")
	c.flags.BoolVar(&offsets, "offsets", false, "the offsets view: START-OFFSET and LAG per partition")
	c.flags.BoolVar(&verbose, "verbose", false, "add the group, assignment and member epochs")
	return c.run(oneOrMore("group"), func(adm *kadm.Client, ctx context.Context, names []string) error {
		if n := btoi(onlyState) + btoi(onlyMembers) + btoi(offsets); n > 1 {
			return usageErr("--state, --members and --offsets are exclusive")
		}
		described, err := adm.DescribeShareGroups(ctx, names...)
		if err != nil && len(described) == 0 {
			return c.brokerErr("describe share groups", err)
		}
		var offs kadm.DescribedShareGroupsOffsets
		if offsets {
			if offs, err = adm.DescribeShareGroupOffsets(ctx, names...); err != nil && len(offs) == 0 {
				return c.brokerErr("describe share group offsets", err)
			}
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
			if offsets {
				o, ok := offs[name]
				switch {
				case !ok:
					return errors.New(name + ": no offsets in the broker's answer")
				case o.Err != nil:
					return errors.New(name + ": " + o.Err.Error())
				}
				printShareOffsets(c.stdout, g, o.Offsets, verbose)
				return nil
			}
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

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// printShareOffsets is kafka-share-groups.sh --describe --offsets: one row
// per partition with share state or assigned to a member, by topic and
// partition; "-" where the partition has no share state yet.
func printShareOffsets(w io.Writer, g kadm.DescribedShareGroup, offs kadm.ShareOffsets, verbose bool) {
	type tp struct {
		topic string
		part  int32
	}
	rows := map[tp]*kadm.ShareOffset{}
	for topic, ps := range offs {
		for p, o := range ps {
			rows[tp{topic, p}] = &o
		}
	}
	for _, m := range g.Members {
		for topic, ps := range m.Assignment {
			for p := range ps {
				if _, ok := rows[tp{topic, p}]; !ok {
					rows[tp{topic, p}] = nil
				}
			}
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(w, "Share group '%s' has no offset information.\n", g.GroupID)
		return
	}
	header := []string{"GROUP", "TOPIC", "PARTITION"}
	if verbose {
		header = append(header, "LEADER-EPOCH")
	}
	t := newTable(w, append(header, "START-OFFSET", "LAG")...)
	keys := make([]tp, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.part - b.part)
	})
	num := func(v int64) string {
		if v < 0 {
			return "-"
		}
		return strconv.FormatInt(v, 10)
	}
	for _, k := range keys {
		start, lag, epoch := "-", "-", "-"
		if o := rows[k]; o != nil && o.Err == nil {
			start, lag = num(o.StartOffset), num(o.Lag)
			if o.StartOffset >= 0 && o.LeaderEpoch >= 0 {
				epoch = strconv.Itoa(int(o.LeaderEpoch))
			}
		}
		row := []string{g.GroupID, k.topic, strconv.Itoa(int(k.part))}
		if verbose {
			row = append(row, epoch)
		}
		t.row(append(row, start, lag)...)
	}
	t.flush()
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
