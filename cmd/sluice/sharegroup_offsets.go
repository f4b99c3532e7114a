package main

// `sluice share-group reset-offsets` and `delete-offsets`, after Kafka
// 4.2's kafka-share-groups.sh --reset-offsets and --delete-offsets:
// AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92), which the
// broker accepts only while the group has no member. reset-offsets plans
// the new start offsets (--to-earliest, --to-latest, --to-offset N clamped
// to the log's range, --to-datetime, --by-duration), prints them
// (GROUP TOPIC PARTITION NEW-OFFSET) and, with --execute, sets them; a dry
// run is the default. The group is named by --group or as the argument.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// shareGroupArg returns the group of a share-group offsets subcommand:
// --group or the one positional argument, not both.
func shareGroupArg(flagGroup string, pos []string) (string, error) {
	switch {
	case flagGroup != "" && len(pos) == 0:
		return flagGroup, nil
	case flagGroup == "" && len(pos) == 1:
		return pos[0], nil
	}
	return "", usageErr("name one group, with --group or as the argument")
}

// shareNotEmpty is the message for NON_EMPTY_GROUP.
func shareNotEmpty(group string) error {
	return fmt.Errorf("share group %q has active members; offsets can only be changed while it is empty: stop its consumers first", group)
}

func shareGroupResetOffsets(c *adminCmd) error {
	fs := c.flags
	group := fs.String("group", "", "the share `group`")
	var topicArgs stringList
	fs.Var(&topicArgs, "topic", "reset `TOPIC` (all partitions) or TOPIC:p,p,... (repeatable)")
	allTopics := fs.Bool("all-topics", false, "reset every partition the group has share state for")
	earliest := fs.Bool("to-earliest", false, "reset to the log start offset")
	latest := fs.Bool("to-latest", false, "reset to the log end offset")
	toOffset := fs.String("to-offset", "", "reset to this `offset` (clamped to the log's range)")
	toDatetime := fs.String("to-datetime", "", "reset to the first record at or after this `time` (RFC 3339)")
	byDuration := fs.String("by-duration", "", "reset to the first record at or after now minus this `duration` (PT1H, P1DT2H or 90m)")
	execute := fs.Bool("execute", false, "set the new start offsets (without it, only print them)")
	dryRun := fs.Bool("dry-run", false, "print the new start offsets without setting them (the default)")
	pos, err := c.parse(anyArgs)
	if err != nil {
		return err
	}
	name, err := shareGroupArg(*group, pos)
	if err != nil {
		return err
	}
	if *execute && *dryRun {
		return usageErr("--dry-run and --execute are exclusive")
	}
	spec, given, err := resetTargets(*earliest, *latest, *toOffset, *toDatetime, *byDuration)
	if err != nil {
		return err
	}
	if len(given) != 1 {
		return usageErr("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --by-duration (got %d)", len(given))
	}
	specs, err := topicArgSpecs(topicArgs, *allTopics)
	if err != nil {
		return err
	}
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		// Refuse a dry run too while the group has members, as Kafka's tool.
		described, err := adm.DescribeShareGroups(ctx, name)
		if err != nil && len(described) == 0 {
			return c.brokerErr("describe share group "+name, err)
		}
		if g, ok := described[name]; ok && g.Err == nil && len(g.Members) > 0 {
			return shareNotEmpty(name)
		}
		var targets map[string][]int32
		if *allTopics {
			if targets, err = shareStateTopics(ctx, c, adm, name); err != nil {
				return err
			}
		} else if targets, err = resolveResetPartitions(ctx, c, adm, name, specs); err != nil {
			return err
		}
		plan, warnings, err := planReset(ctx, c, adm, name, spec, targets)
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintf(c.stderr, "warning: %s\n", w)
		}
		t := newTable(c.stdout, "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
		for _, o := range plan.Sorted() {
			t.row(name, o.Topic, strconv.Itoa(int(o.Partition)), strconv.FormatInt(o.At, 10))
		}
		t.flush()
		if !*execute {
			fmt.Fprintln(c.stderr, "dry run: nothing was changed; add --execute to set these start offsets")
			return nil
		}
		resps, err := adm.AlterShareGroupOffsets(ctx, name, plan)
		switch {
		case errors.Is(err, kerr.NonEmptyGroup):
			return shareNotEmpty(name)
		case err != nil:
			return c.brokerErr("alter share group offsets of "+name, err)
		}
		if err := resps.Error(); err != nil {
			return fmt.Errorf("alter share group offsets of %s: %w", name, err)
		}
		return nil
	})
}

// shareStateTopics is --all-topics: every partition group has share state
// for (DescribeShareGroupOffsets).
func shareStateTopics(ctx context.Context, c *adminCmd, adm *kadm.Client, group string) (map[string][]int32, error) {
	offs, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil && len(offs) == 0 {
		return nil, c.brokerErr("describe share group offsets of "+group, err)
	}
	o, ok := offs[group]
	switch {
	case !ok:
		return nil, fmt.Errorf("describe share group offsets of %s: the broker's answer does not mention it", group)
	case o.Err != nil:
		return nil, fmt.Errorf("describe share group offsets of %s: %w", group, o.Err)
	}
	out := map[string][]int32{}
	for topic, ps := range o.Offsets {
		for p, so := range ps {
			if so.Err == nil && so.StartOffset >= 0 {
				out[topic] = append(out[topic], p)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("share group %q has no share state; name the partitions with --topic", group)
	}
	for t := range out {
		slices.Sort(out[t])
	}
	return out, nil
}

func shareGroupDeleteOffsets(c *adminCmd) error {
	group := c.flags.String("group", "", "the share `group`")
	var topics stringList
	c.flags.Var(&topics, "topic", "forget the group's share state of `TOPIC` (repeatable)")
	pos, err := c.parse(anyArgs)
	if err != nil {
		return err
	}
	name, err := shareGroupArg(*group, pos)
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		return usageErr("name at least one --topic")
	}
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		resps, err := adm.DeleteShareGroupOffsets(ctx, name, topics...)
		switch {
		case errors.Is(err, kerr.NonEmptyGroup):
			return shareNotEmpty(name)
		case errors.Is(err, kerr.GroupIDNotFound):
			return fmt.Errorf("share group %q does not exist", name)
		case err != nil:
			return c.brokerErr("delete share group offsets of "+name, err)
		}
		t := newTable(c.stdout, "TOPIC", "STATUS")
		failed := 0
		for _, topic := range topics {
			status := "Successful"
			if e, ok := resps.Lookup(topic); !ok {
				status, failed = "Error: not in the broker's answer", failed+1
			} else if e != nil {
				status, failed = "Error: "+e.Error(), failed+1
			}
			t.row(topic, status)
		}
		t.flush()
		if failed > 0 {
			return fmt.Errorf("%d of %d topics not deleted", failed, len(topics))
		}
		return nil
	})
}
