package main

// `sluice group`, after kafka-consumer-groups.sh: it lists, describes (with
// lag), deletes consumer groups and resets their committed offsets through
// the Kafka protocol.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func groupCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "config" {
		return groupConfigCmd(args[1:], stdout, stderr) // groupconfig.go
	}
	return runSubcommand("group", []subcommand{
		{"list", "[--state STATE ...] [--type classic|consumer ...]",
			"list groups with their state, protocol type and group type", groupList},
		{"describe", "GROUP...",
			"show state, members (for consumer groups their epochs and target assignment) and per-partition offsets and lag", groupDescribe},
		{"delete", "GROUP...",
			"delete groups that have no active members, with their offsets", groupDelete},
		{"reset-offsets", "GROUP (--topic T[:p,p] ... | --all-topics) (--to-earliest | --to-latest | --to-offset N | --to-datetime RFC3339 | --by-duration D | --shift-by N) [--execute]",
			"plan (or with --execute, commit) new offsets for an inactive group", groupResetOffsets},
	}, args, stdout, stderr)
}

func groupList(c *adminCmd) error {
	var states stringList
	c.flags.Var(&states, "state", "only groups in this `state` (classic: Empty, Stable, PreparingRebalance, CompletingRebalance; consumer: Empty, Assigning, Reconciling, Stable; repeatable)")
	var types stringList
	c.flags.Var(&types, "type", "only groups of this `type` (classic, consumer; repeatable)")
	return c.run(noArgs, func(adm *kadm.Client, ctx context.Context, _ []string) error {
		listed, err := adm.ListGroupsByType(ctx, types, states...)
		if err != nil {
			return c.brokerErr("list groups", err)
		}
		// GROUP-TYPE comes last so that scripts reading the first
		// three columns keep working.
		t := newTable(c.stdout, "GROUP", "STATE", "PROTOCOL-TYPE", "GROUP-TYPE")
		for _, g := range listed.Sorted() {
			t.row(g.Group, orDash(g.State), orDash(g.ProtocolType), orDash(g.GroupType))
		}
		t.flush()
		return nil
	})
}

func groupDescribe(c *adminCmd) error {
	return c.run(oneOrMore("group"), func(adm *kadm.Client, ctx context.Context, names []string) error {
		// Consumer groups (KIP-848) are described with
		// ConsumerGroupDescribe; the rest, and every group of a broker
		// that does not serve it, with DescribeGroups as before.
		cgs, cgErr := adm.DescribeConsumerGroups(ctx, names...)
		var classic []string
		for _, n := range names {
			if g, ok := cgs[n]; cgErr != nil || !ok || g.Err != nil {
				classic = append(classic, n)
			}
		}
		var lags kadm.DescribedGroupLags
		if len(classic) > 0 {
			var err error
			if lags, err = adm.Lag(ctx, classic...); err != nil {
				return c.brokerErr("describe groups", err)
			}
		}
		if lags == nil {
			lags = kadm.DescribedGroupLags{}
		}
		for _, n := range names {
			if !slices.Contains(classic, n) {
				lags[n] = kadm.DescribedGroupLag{Group: n} // a placeholder: described from cgs
			}
		}
		first := true
		return eachNamed(names, lags, func(name string, l kadm.DescribedGroupLag) error {
			if !slices.Contains(classic, name) {
				if !first {
					fmt.Fprintln(c.stdout)
				}
				first = false
				return printConsumerGroup(ctx, adm, c.stdout, cgs[name])
			}
			switch {
			case errors.Is(l.Error(), kerr.GroupIDNotFound),
				l.Error() == nil && l.State == "Dead" && len(l.Members) == 0 && len(l.Lag) == 0:
				// Kafka answers an unknown group as Dead (DescribeGroups
				// before v6) or GROUP_ID_NOT_FOUND (v6+, KIP-1043).
				return fmt.Errorf("consumer group %q does not exist", name)
			case l.Error() != nil:
				return errors.New(name + ": " + l.Error().Error())
			}
			if !first {
				fmt.Fprintln(c.stdout)
			}
			first = false
			printGroup(c.stdout, l)
			return nil
		})
	})
}

// printGroup writes the three views kafka-consumer-groups.sh --describe has
// (--state, --members, --offsets) one after another.
func printGroup(w io.Writer, l kadm.DescribedGroupLag) {
	t := newTable(w, "GROUP", "COORDINATOR (ID)", "STATE", "PROTOCOL-TYPE", "ASSIGNMENT-STRATEGY", "#MEMBERS")
	coord := fmt.Sprintf("%s:%d (%d)", l.Coordinator.Host, l.Coordinator.Port, l.Coordinator.NodeID)
	t.row(l.Group, coord, l.State, orDash(l.ProtocolType), orDash(l.Protocol), strconv.Itoa(len(l.Members)))
	t.flush()
	fmt.Fprintln(w)

	if len(l.Members) == 0 {
		fmt.Fprintf(w, "Consumer group '%s' has no active members.\n", l.Group)
	} else {
		t = newTable(w, "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")
		for _, m := range l.Members {
			n, assigned := 0, "-"
			if c, ok := m.Assigned.AsConsumer(); ok {
				var parts []string
				for _, at := range c.Topics {
					ps := slices.Clone(at.Partitions)
					slices.Sort(ps)
					n += len(ps)
					parts = append(parts, at.Topic+":"+int32s(ps))
				}
				slices.Sort(parts)
				if len(parts) > 0 {
					assigned = strings.Join(parts, " ")
				}
			}
			t.row(m.MemberID, orDash(m.ClientHost), orDash(m.ClientID), strconv.Itoa(n), assigned)
		}
		t.flush()
	}
	fmt.Fprintln(w)

	t = newTable(w, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
	for _, p := range l.Lag.Sorted() {
		current, end, lag := "-", "-", "-"
		if p.Commit.At >= 0 {
			current = strconv.FormatInt(p.Commit.At, 10)
		}
		if p.End.Err == nil {
			end = strconv.FormatInt(p.End.Offset, 10)
		}
		// Kafka's tool shows no lag for a partition without a commit;
		// kadm counts it from the log start.
		if p.Err == nil && p.Commit.At >= 0 && p.Lag >= 0 {
			lag = strconv.FormatInt(p.Lag, 10)
		}
		member, host, client := "-", "-", "-"
		if p.Member != nil {
			member, host, client = p.Member.MemberID, orDash(p.Member.ClientHost), orDash(p.Member.ClientID)
		}
		if p.Err != nil && !errors.Is(p.Err, kerr.UnknownTopicOrPartition) {
			end += " (" + p.Err.Error() + ")"
		}
		t.row(l.Group, p.Topic, strconv.Itoa(int(p.Partition)), current, end, lag, member, host, client)
	}
	t.flush()
}

// printConsumerGroup writes a consumer group (KIP-848) as Kafka 4.x's
// kafka-consumer-groups.sh --describe shows one with --state --verbose,
// --members --verbose and --offsets: the group and assignment epochs, each
// member's epoch with its current and target assignment, and the committed
// offsets with their lag.
func printConsumerGroup(ctx context.Context, adm *kadm.Client, w io.Writer, g kadm.DescribedConsumerGroup) error {
	t := newTable(w, "GROUP", "COORDINATOR (ID)", "STATE", "PROTOCOL-TYPE", "ASSIGNMENT-STRATEGY", "#MEMBERS", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH")
	coord := fmt.Sprintf("%s:%d (%d)", g.Coordinator.Host, g.Coordinator.Port, g.Coordinator.NodeID)
	t.row(g.Group, coord, g.State, "consumer", orDash(g.AssignorName), strconv.Itoa(len(g.Members)),
		strconv.Itoa(int(g.Epoch)), strconv.Itoa(int(g.AssignmentEpoch)))
	t.flush()
	fmt.Fprintln(w)

	owner := map[string]map[int32]kadm.ConsumerGroupMember{} // topic -> partition -> member holding it
	if len(g.Members) == 0 {
		fmt.Fprintf(w, "Consumer group '%s' has no active members.\n", g.Group)
	} else {
		t = newTable(w, "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
		for _, m := range g.Members {
			n := 0
			m.Assignment.Each(func(topic string, p int32) {
				n++
				if owner[topic] == nil {
					owner[topic] = map[int32]kadm.ConsumerGroupMember{}
				}
				owner[topic][p] = m
			})
			instance := "-"
			if m.InstanceID != nil {
				instance = *m.InstanceID
			}
			t.row(m.MemberID, instance, orDash(m.ClientHost), orDash(m.ClientID), strconv.Itoa(n),
				strconv.Itoa(int(m.MemberEpoch)), topicsSet(m.Assignment), strconv.Itoa(int(g.AssignmentEpoch)), topicsSet(m.TargetAssignment))
		}
		t.flush()
	}
	fmt.Fprintln(w)

	committed, err := adm.FetchOffsets(ctx, g.Group)
	if err != nil {
		return fmt.Errorf("%s: fetch offsets: %w", g.Group, err)
	}
	parts := g.AssignedPartitions()
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil {
			parts.Add(o.Topic, o.Partition)
		}
	})
	var ends kadm.ListedOffsets
	if topics := parts.Topics(); len(topics) > 0 {
		// A failed listing shows as "-" in LOG-END-OFFSET below.
		ends, _ = adm.ListEndOffsets(ctx, topics...)
	}
	t = newTable(w, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
	for _, tp := range parts.Sorted() {
		for _, p := range tp.Partitions {
			current, end, lag := "-", "-", "-"
			c, hasCommit := committed.Lookup(tp.Topic, p)
			if hasCommit && c.Err == nil && c.At >= 0 {
				current = strconv.FormatInt(c.At, 10)
			}
			if e, ok := ends.Lookup(tp.Topic, p); ok && e.Err == nil {
				end = strconv.FormatInt(e.Offset, 10)
				if current != "-" {
					lag = strconv.FormatInt(max(e.Offset-c.At, 0), 10)
				}
			}
			member, host, client := "-", "-", "-"
			if m, ok := owner[tp.Topic][p]; ok {
				member, host, client = m.MemberID, orDash(m.ClientHost), orDash(m.ClientID)
			}
			t.row(g.Group, tp.Topic, strconv.Itoa(int(p)), current, end, lag, member, host, client)
		}
	}
	t.flush()
	return nil
}

// topicsSet is an assignment as the describe tables show it:
// "topic:0,1 other:2", or "-" when empty.
func topicsSet(s kadm.TopicsSet) string {
	var parts []string
	for _, tp := range s.Sorted() {
		ps := slices.Clone(tp.Partitions)
		slices.Sort(ps)
		if len(ps) > 0 {
			parts = append(parts, tp.Topic+":"+int32s(ps))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func groupDelete(c *adminCmd) error {
	return c.run(oneOrMore("group"), func(adm *kadm.Client, ctx context.Context, names []string) error {
		resps, err := adm.DeleteGroups(ctx, names...)
		if err != nil {
			return c.brokerErr("delete groups", err)
		}
		return eachNamed(names, resps, func(name string, r kadm.DeleteGroupResponse) error {
			switch {
			case r.Err == nil:
				fmt.Fprintf(c.stdout, "Deleted group %s.\n", name)
			case errors.Is(r.Err, kerr.NonEmptyGroup):
				return fmt.Errorf("group %q has active members; stop its consumers first", name)
			case errors.Is(r.Err, kerr.GroupIDNotFound):
				return fmt.Errorf("group %q does not exist", name)
			default:
				return errors.New(name + ": " + errText(r.Err, r.ErrMessage))
			}
			return nil
		})
	})
}

// resetSpec is what reset-offsets was asked to do: exactly one scenario.
type resetSpec struct {
	kind   string // "earliest", "latest", "offset", "time", "shift"
	offset int64  // kind "offset": the offset; "shift": the delta
	millis int64  // kind "time": the first record at or after this time
}

// topicPartitions is a --topic argument: a topic and, when given, some of
// its partitions (nil: all of them).
type topicPartitions struct {
	topic      string
	partitions []int32
}

// parseTopicSpec parses "T" or "T:p,p,...".
func parseTopicSpec(s string) (topicPartitions, error) {
	topic, ps, hasPs := strings.Cut(s, ":")
	if topic == "" {
		return topicPartitions{}, usageErr("--topic %q: empty topic name", s)
	}
	tp := topicPartitions{topic: topic}
	if !hasPs {
		return tp, nil
	}
	for _, p := range strings.Split(ps, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return topicPartitions{}, usageErr("--topic %q: want TOPIC or TOPIC:PARTITION,PARTITION,...", s)
		}
		if !slices.Contains(tp.partitions, int32(n)) {
			tp.partitions = append(tp.partitions, int32(n))
		}
	}
	return tp, nil
}

// parseDatetime parses --to-datetime: RFC 3339 ("2024-05-01T12:00:00Z",
// "2024-05-01T14:00:00.500+02:00"), or Kafka's zone-less
// "YYYY-MM-DDTHH:mm:SS.sss", read in the local time zone as Kafka does.
func parseDatetime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.Local); err == nil {
		return t, nil
	}
	return time.Time{}, usageErr("--to-datetime %q: want RFC 3339, e.g. 2024-05-01T12:00:00Z", s)
}

var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseDuration parses --by-duration: ISO 8601 as Kafka takes it
// ("PT1H30M", "P1DT2H") or a Go duration ("90m").
func parseDuration(s string) (time.Duration, error) {
	if m := isoDuration.FindStringSubmatch(s); m != nil && s != "P" && !strings.HasSuffix(s, "T") {
		var d time.Duration
		for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
			if m[i+1] != "" {
				n, err := strconv.ParseInt(m[i+1], 10, 64)
				if err != nil {
					return 0, usageErr("--by-duration %q: %v", s, err)
				}
				d += time.Duration(n) * unit
			}
		}
		if m[4] != "" {
			secs, err := strconv.ParseFloat(m[4], 64)
			if err != nil {
				return 0, usageErr("--by-duration %q: %v", s, err)
			}
			d += time.Duration(secs * float64(time.Second))
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, usageErr("--by-duration %q: want ISO 8601 (PT1H30M, P1D) or a Go duration (90m)", s)
	}
	return d, nil
}

func groupResetOffsets(c *adminCmd) error {
	fs := c.flags
	var topicArgs stringList
	fs.Var(&topicArgs, "topic", "reset `TOPIC` (all partitions) or TOPIC:p,p,... (repeatable)")
	allTopics := fs.Bool("all-topics", false, "reset every partition the group has committed offsets for")
	earliest := fs.Bool("to-earliest", false, "reset to the log start offset")
	latest := fs.Bool("to-latest", false, "reset to the log end offset")
	toOffset := fs.String("to-offset", "", "reset to this `offset` (clamped to the log's range)")
	toDatetime := fs.String("to-datetime", "", "reset to the first record at or after this `time` (RFC 3339)")
	byDuration := fs.String("by-duration", "", "reset to the first record at or after now minus this `duration` (PT1H, P1DT2H or 90m)")
	shiftBy := fs.String("shift-by", "", "move the committed offset by `n` (negative: back), clamped to the log's range")
	execute := fs.Bool("execute", false, "commit the new offsets (without it, only print them)")
	fs.Bool("dry-run", false, "print the new offsets without committing them (the default)")
	pos, err := c.parse(exactlyOne("group"))
	if err != nil {
		return err
	}
	group := pos[0]

	spec, given, err := resetTargets(*earliest, *latest, *toOffset, *toDatetime, *byDuration)
	if err != nil {
		return err
	}
	if *shiftBy != "" {
		given, spec.kind = append(given, "--shift-by"), "shift"
		if spec.offset, err = strconv.ParseInt(*shiftBy, 10, 64); err != nil {
			return usageErr("--shift-by %q: want an integer", *shiftBy)
		}
	}
	if len(given) != 1 {
		return usageErr("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --by-duration, --shift-by (got %d)", len(given))
	}
	specs, err := topicArgSpecs(topicArgs, *allTopics)
	if err != nil {
		return err
	}

	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		return resetOffsets(ctx, c, adm, group, spec, specs, *execute)
	})
}

// resetOffsets is reset-offsets once connected: it checks that the group
// is inactive, plans the new offsets, prints them and, when execute is set,
// commits them.
func resetOffsets(ctx context.Context, c *adminCmd, adm *kadm.Client, group string, spec resetSpec, specs []topicPartitions, execute bool) error {
	// Kafka's tool resets only inactive groups: a live member would
	// overwrite the new offsets with its next commit. The coordinator
	// enforces it too (an anonymous commit to a group with members fails),
	// but checking first refuses a dry run as well, as Kafka does. A
	// consumer group (KIP-848) is seen only by ConsumerGroupDescribe
	// (DescribeGroups answers it Dead); a broker without it has none.
	if cgs, err := adm.DescribeConsumerGroups(ctx, group); err == nil {
		if cg, ok := cgs[group]; ok && cg.Err == nil && len(cg.Members) > 0 {
			return fmt.Errorf("offsets can only be reset while group %q is inactive (Empty), but it is %s with %d active member(s); stop its consumers first",
				group, cg.State, len(cg.Members))
		}
	}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return c.brokerErr("describe group "+group, err)
	}
	dg, ok := described[group]
	if !ok {
		return fmt.Errorf("describe group %s: the broker's answer does not mention it", group)
	}
	switch {
	case errors.Is(dg.Err, kerr.GroupIDNotFound):
		// A group with no state yet: committing creates it, as Kafka's
		// tool allows.
		dg.State = "Dead"
	case dg.Err != nil:
		return fmt.Errorf("describe group %s: %s", group, errText(dg.Err, dg.ErrMessage))
	}
	if dg.State != "Empty" && dg.State != "Dead" {
		return fmt.Errorf("offsets can only be reset while group %q is inactive (Empty), but it is %s with %d active member(s); stop its consumers first",
			group, dg.State, len(dg.Members))
	}

	targets, err := resolveResetPartitions(ctx, c, adm, group, specs)
	if err != nil {
		return err
	}
	plan, warnings, err := planReset(ctx, c, adm, group, spec, targets)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(c.stderr, "warning: %s\n", w)
	}

	t := newTable(c.stdout, "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
	for _, o := range plan.Sorted() {
		t.row(group, o.Topic, strconv.Itoa(int(o.Partition)), strconv.FormatInt(o.At, 10))
	}
	t.flush()
	if !execute {
		fmt.Fprintln(c.stderr, "dry run: nothing was committed; add --execute to commit these offsets")
		return nil
	}
	resps, err := adm.CommitOffsets(ctx, group, plan)
	if err != nil {
		return c.brokerErr("commit offsets of "+group, err)
	}
	if err := resps.Error(); err != nil {
		if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.IllegalGeneration) {
			return fmt.Errorf("commit offsets of %s: a consumer joined the group meanwhile (%v); stop its consumers and retry", group, err)
		}
		return fmt.Errorf("commit offsets of %s: %w", group, err)
	}
	return nil
}

// resolveResetPartitions turns the --topic specs (or, with none,
// --all-topics: the group's committed partitions) into the partitions to
// reset, checking that every named topic and partition exists.
func resolveResetPartitions(ctx context.Context, c *adminCmd, adm *kadm.Client, group string, specs []topicPartitions) (map[string][]int32, error) {
	out := map[string][]int32{}
	if len(specs) == 0 {
		fetched, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return nil, c.brokerErr("fetch offsets of "+group, err)
		}
		for _, o := range fetched.Sorted() {
			if o.Err == nil && o.At >= 0 {
				out[o.Topic] = append(out[o.Topic], o.Partition)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("group %q has no committed offsets; name the partitions with --topic", group)
		}
		return out, nil
	}
	var topics []string
	for _, s := range specs {
		topics = append(topics, s.topic)
	}
	tds, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, c.brokerErr("describe topics", err)
	}
	for _, s := range specs {
		td, ok := tds[s.topic]
		if !ok || td.Err != nil {
			return nil, fmt.Errorf("topic %q does not exist", s.topic)
		}
		if s.partitions == nil {
			out[s.topic] = append(out[s.topic], td.Partitions.Numbers()...)
			continue
		}
		for _, p := range s.partitions {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %q has no partition %d (it has %d)", s.topic, p, len(td.Partitions))
			}
			out[s.topic] = append(out[s.topic], p)
		}
	}
	for t, ps := range out {
		slices.Sort(ps)
		out[t] = slices.Compact(ps)
	}
	return out, nil
}

// planReset computes the new offset of every target partition. Offsets
// asked for outside [log start, log end] are clamped into it, with a
// warning, as Kafka's tool does.
func planReset(ctx context.Context, c *adminCmd, adm *kadm.Client, group string, spec resetSpec, targets map[string][]int32) (kadm.Offsets, []string, error) {
	var topics []string
	for t := range targets {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, c.brokerErr("list start offsets", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, nil, c.brokerErr("list end offsets", err)
	}
	var byTime kadm.ListedOffsets
	if spec.kind == "time" {
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, spec.millis, topics...); err == nil {
			err = byTime.Error()
		}
		if err != nil {
			return nil, nil, c.brokerErr("list offsets by time", err)
		}
	}
	var committed kadm.OffsetResponses
	if spec.kind == "shift" {
		if committed, err = adm.FetchOffsetsForTopics(ctx, group, topics...); err != nil {
			return nil, nil, c.brokerErr("fetch offsets of "+group, err)
		}
	}

	plan := kadm.Offsets{}
	var warnings []string
	for _, t := range topics {
		for _, p := range targets[t] {
			start, ok1 := starts.Lookup(t, p)
			end, ok2 := ends.Lookup(t, p)
			if !ok1 || !ok2 {
				return nil, nil, fmt.Errorf("no offsets listed for %s-%d", t, p)
			}
			var at int64
			switch spec.kind {
			case "earliest":
				at = start.Offset
			case "latest":
				at = end.Offset
			case "offset":
				at = spec.offset
			case "time":
				o, ok := byTime.Lookup(t, p)
				if !ok {
					return nil, nil, fmt.Errorf("no offset listed by time for %s-%d", t, p)
				}
				at = o.Offset
				if at < 0 { // no record at or after the time
					at = end.Offset
				}
			case "shift":
				o, ok := committed.Lookup(t, p)
				if !ok || o.Err != nil || o.At < 0 {
					return nil, nil, fmt.Errorf("%s-%d has no committed offset to shift", t, p)
				}
				at = o.At + spec.offset
			}
			switch {
			case at < start.Offset:
				warnings = append(warnings, fmt.Sprintf("%s-%d: new offset %d is below the log start offset; using %d", t, p, at, start.Offset))
				at = start.Offset
			case at > end.Offset:
				warnings = append(warnings, fmt.Sprintf("%s-%d: new offset %d is past the log end offset; using %d", t, p, at, end.Offset))
				at = end.Offset
			}
			plan.Add(kadm.Offset{Topic: t, Partition: p, At: at, LeaderEpoch: -1})
		}
	}
	return plan, warnings, nil
}

// resetTargets reads the reset targets that `group reset-offsets` and
// `share-group reset-offsets` share: the spec of the one given (the
// caller checks that exactly one was) and the flags given.
func resetTargets(earliest, latest bool, toOffset, toDatetime, byDuration string) (spec resetSpec, given []string, err error) {
	if earliest {
		given, spec.kind = append(given, "--to-earliest"), "earliest"
	}
	if latest {
		given, spec.kind = append(given, "--to-latest"), "latest"
	}
	if toOffset != "" {
		given, spec.kind = append(given, "--to-offset"), "offset"
		if spec.offset, err = strconv.ParseInt(toOffset, 10, 64); err != nil || spec.offset < 0 {
			return spec, nil, usageErr("--to-offset %q: want a non-negative offset", toOffset)
		}
	}
	if toDatetime != "" {
		given, spec.kind = append(given, "--to-datetime"), "time"
		t, err := parseDatetime(toDatetime)
		if err != nil {
			return spec, nil, err
		}
		spec.millis = t.UnixMilli()
	}
	if byDuration != "" {
		given, spec.kind = append(given, "--by-duration"), "time"
		d, err := parseDuration(byDuration)
		if err != nil {
			return spec, nil, err
		}
		spec.millis = time.Now().Add(-d).UnixMilli()
	}
	return spec, given, nil
}

// topicArgSpecs parses the --topic T[:p,p] arguments of a reset-offsets
// command, which must name topics or --all-topics, not both or neither.
func topicArgSpecs(topicArgs []string, allTopics bool) ([]topicPartitions, error) {
	if (len(topicArgs) > 0) == allTopics {
		return nil, usageErr("give --topic (one or more) or --all-topics")
	}
	var specs []topicPartitions
	for _, s := range topicArgs {
		tp, err := parseTopicSpec(s)
		if err != nil {
			return nil, err
		}
		specs = append(specs, tp)
	}
	return specs, nil
}
