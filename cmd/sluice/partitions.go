package main

// sluice partitions reassign: kafka-reassign-partitions.sh, reading and
// writing its JSON files and printing what it prints.
//
//	--generate --topics-to-move-json-file F --broker-list 1,2,3
//	    the current assignment of F's topics and a proposed one over the
//	    brokers listed (Kafka's AdminUtils rack-unaware placement)
//	--execute --reassignment-json-file F [--throttle B/s] [--additional]
//	    prints the current assignment (for a rollback), then starts the moves
//	    (AlterPartitionReassignments); --throttle sets, as Kafka's tool does,
//	    leader/follower.replication.throttled.rate on every broker of the
//	    moves and leader.replication.throttled.replicas (the replicas now)
//	    and follower.replication.throttled.replicas (the ones added) on the
//	    topics, the moves already in progress included (--additional); 0
//	    is a rate, which holds the moves back
//	--verify --reassignment-json-file F [--preserve-throttles]
//	    each partition's state, with the bytes the added replicas hold so
//	    far; once every move is done, removes the throttles
//	--cancel --reassignment-json-file F [--preserve-throttles]
//	    cancels the moves (null replicas), then removes the throttles
//	--list
//	    every move in progress, with its progress
//
// Files: topics to move {"version":1,"topics":[{"topic":"t"}]}; a
// reassignment {"version":1,"partitions":[{"topic":"t","partition":0,
// "replicas":[1,2],"log_dirs":["any","any"]}]} (log_dirs optional, "any"
// only).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Throttle configs (Kafka's names; the replication path enforces them).
const (
	leaderThrottleRate       = "leader.replication.throttled.rate"
	followerThrottleRate     = "follower.replication.throttled.rate"
	leaderThrottledReplicas  = "leader.replication.throttled.replicas"
	followerThrottledReplica = "follower.replication.throttled.replicas"
)

func partitionsCmd(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("partitions", []subcommand{
		{"reassign", "(--generate | --execute | --verify | --cancel | --list) [flags]",
			"move partitions between brokers (kafka-reassign-partitions.sh)", reassignCmd},
	}, args, stdout, stderr)
}

// reassignEntry is one partition of a reassignment file.
type reassignEntry struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs"`
}

type reassignFile struct {
	Version    int             `json:"version"`
	Partitions []reassignEntry `json:"partitions"`
}

type topicsToMoveFile struct {
	Version int `json:"version"`
	Topics  []struct {
		Topic string `json:"topic"`
	} `json:"topics"`
}

// tp names a partition in the tool's output: topic-partition.
type tp struct {
	topic string
	part  int32
}

func (p tp) String() string { return p.topic + "-" + strconv.Itoa(int(p.part)) }

func cmpTP(a, b tp) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return int(a.part - b.part)
}

// encodeReassignment writes Kafka's reassignment JSON for assignment, in
// topic and partition order, log_dirs all "any".
func encodeReassignment(assignment map[tp][]int32) string {
	f := reassignFile{Version: 1, Partitions: []reassignEntry{}}
	for _, p := range slices.SortedFunc(maps.Keys(assignment), cmpTP) {
		rs := assignment[p]
		dirs := make([]string, len(rs))
		for i := range dirs {
			dirs[i] = "any"
		}
		f.Partitions = append(f.Partitions, reassignEntry{Topic: p.topic, Partition: p.part, Replicas: rs, LogDirs: dirs})
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// parseReassignment reads a reassignment file as Kafka's tool does: at
// least one partition, none twice, no replica twice, log_dirs (if given)
// one per replica and "any".
func parseReassignment(path string) (map[tp][]int32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f reassignFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: not a reassignment JSON file: %v", path, err)
	}
	if len(f.Partitions) == 0 {
		return nil, fmt.Errorf("%s: partition reassignment list cannot be empty", path)
	}
	out := make(map[tp][]int32, len(f.Partitions))
	for _, e := range f.Partitions {
		p := tp{e.Topic, e.Partition}
		switch {
		case e.Topic == "" || e.Partition < 0:
			return nil, fmt.Errorf("%s: bad partition %q %d", path, e.Topic, e.Partition)
		case len(e.Replicas) == 0:
			return nil, fmt.Errorf("%s: partition %s has no replicas", path, p)
		case e.LogDirs != nil && len(e.LogDirs) != len(e.Replicas):
			return nil, fmt.Errorf("%s: partition %s has %d log_dirs for %d replicas", path, p, len(e.LogDirs), len(e.Replicas))
		}
		if _, dup := out[p]; dup {
			return nil, fmt.Errorf("%s: duplicate reassignment of partition %s", path, p)
		}
		for i, r := range e.Replicas {
			if slices.Contains(e.Replicas[:i], r) {
				return nil, fmt.Errorf("%s: partition %s lists broker %d twice", path, p, r)
			}
		}
		for _, d := range e.LogDirs {
			if d != "any" {
				return nil, fmt.Errorf("%s: partition %s: log dir %q: only \"any\" is supported", path, p, d)
			}
		}
		out[p] = e.Replicas
	}
	return out, nil
}

func reassignCmd(c *adminCmd) error {
	generate := c.flags.Bool("generate", false, "propose an assignment of --topics-to-move-json-file's topics over --broker-list")
	execute := c.flags.Bool("execute", false, "start the moves of --reassignment-json-file")
	verify := c.flags.Bool("verify", false, "report the moves of --reassignment-json-file; remove the throttles once all are done")
	cancel := c.flags.Bool("cancel", false, "cancel the moves of --reassignment-json-file and remove the throttles")
	list := c.flags.Bool("list", false, "list the moves in progress")
	topicsFile := c.flags.String("topics-to-move-json-file", "", "`file` naming the topics to move (--generate)")
	brokerList := c.flags.String("broker-list", "", "comma-separated broker `ids` to place replicas on (--generate)")
	reassignPath := c.flags.String("reassignment-json-file", "", "reassignment `file` (--execute, --verify, --cancel)")
	throttle := c.flags.Int64("throttle", -1, "replication throttle in `bytes/s` for the moves (--execute)")
	additional := c.flags.Bool("additional", false, "start moves while others are in progress (--execute)")
	preserve := c.flags.Bool("preserve-throttles", false, "leave the throttles in place (--verify, --cancel)")
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	n := 0
	for _, b := range []bool{*generate, *execute, *verify, *cancel, *list} {
		if b {
			n++
		}
	}
	if n != 1 {
		return usageErr("give exactly one of --generate, --execute, --verify, --cancel, --list")
	}
	if (*execute || *verify || *cancel) && *reassignPath == "" {
		return usageErr("--reassignment-json-file is required")
	}
	if *throttle != -1 && (!*execute || *throttle < 0) {
		return usageErr("--throttle takes a rate (0 or more) and goes with --execute")
	}
	switch {
	case *generate:
		if *topicsFile == "" || *brokerList == "" {
			return usageErr("--generate needs --topics-to-move-json-file and --broker-list")
		}
		brokers, err := parseBrokerList(*brokerList)
		if err != nil {
			return err
		}
		topics, err := parseTopicsToMove(*topicsFile)
		if err != nil {
			return err
		}
		return c.connect(func(adm *kadm.Client, ctx context.Context) error {
			return reassignGenerate(c, adm, ctx, topics, brokers)
		})
	case *list:
		return c.connect(func(adm *kadm.Client, ctx context.Context) error { return reassignList(c, adm, ctx) })
	}
	target, err := parseReassignment(*reassignPath)
	if err != nil {
		return err
	}
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		switch {
		case *execute:
			return reassignExecute(c, adm, ctx, target, *throttle, *additional)
		case *verify:
			return reassignVerify(c, adm, ctx, target, *preserve)
		default:
			return reassignCancel(c, adm, ctx, target, *preserve)
		}
	})
}

func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || id < 0 {
			return nil, usageErr("--broker-list %q: want broker ids, comma-separated", s)
		}
		if slices.Contains(out, int32(id)) {
			return nil, usageErr("--broker-list %q names broker %d twice", s, id)
		}
		out = append(out, int32(id))
	}
	slices.Sort(out)
	return out, nil
}

func parseTopicsToMove(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f topicsToMoveFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: not a topics-to-move JSON file: %v", path, err)
	}
	var out []string
	for _, t := range f.Topics {
		if t.Topic == "" {
			return nil, fmt.Errorf("%s: a topic without a name", path)
		}
		if !slices.Contains(out, t.Topic) {
			out = append(out, t.Topic)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: names no topic", path)
	}
	return out, nil
}

// currentAssignment returns the replicas of every partition of topics
// (from Metadata); an unknown topic is an error.
func currentAssignment(adm *kadm.Client, ctx context.Context, topics []string) (map[tp][]int32, kadm.Metadata, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, md, err
	}
	out := map[tp][]int32{}
	for _, name := range topics {
		td, ok := md.Topics[name]
		if !ok || td.Err != nil {
			e := error(kerr.UnknownTopicOrPartition)
			if ok {
				e = td.Err
			}
			return nil, md, fmt.Errorf("topic %s: %w", name, e)
		}
		for _, pd := range td.Partitions {
			out[tp{name, pd.Partition}] = slices.Clone(pd.Replicas)
		}
	}
	return out, md, nil
}

func topicsOf(m map[tp][]int32) []string {
	var out []string
	for p := range m {
		if !slices.Contains(out, p.topic) {
			out = append(out, p.topic)
		}
	}
	slices.Sort(out)
	return out
}

func reassignGenerate(c *adminCmd, adm *kadm.Client, ctx context.Context, topics []string, brokers []int32) error {
	cur, md, err := currentAssignment(adm, ctx, topics)
	if err != nil {
		return err
	}
	live := md.Brokers.NodeIDs()
	for _, b := range brokers {
		if !slices.Contains(live, b) {
			return fmt.Errorf("the following brokers are not available: %d", b)
		}
	}
	proposed := map[tp][]int32{}
	for _, name := range topics {
		n, rf := 0, 0
		for p, rs := range cur {
			if p.topic == name {
				n++
				rf = len(rs)
			}
		}
		if rf > len(brokers) {
			return fmt.Errorf("topic %s: replication factor %d is larger than the %d brokers listed", name, rf, len(brokers))
		}
		for p, rs := range assignRackUnaware(brokers, n, rf, rand.IntN(len(brokers)), rand.IntN(len(brokers))) {
			proposed[tp{name, int32(p)}] = rs
		}
	}
	fmt.Fprintf(c.stdout, "Current partition replica assignment\n%s\n\n", encodeReassignment(cur))
	fmt.Fprintf(c.stdout, "Proposed partition reassignment configuration\n%s\n", encodeReassignment(proposed))
	return nil
}

// assignRackUnaware is Kafka's AdminUtils.assignReplicasToBrokersRackUnaware:
// partition p's first replica is brokers[(p+start)%n], the others follow
// at a shift that grows every n partitions.
func assignRackUnaware(brokers []int32, partitions, rf, start, shift int) [][]int32 {
	n := len(brokers)
	out := make([][]int32, partitions)
	for p := range partitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + start) % n
		rs := []int32{brokers[first]}
		for j := range rf - 1 {
			rs = append(rs, brokers[(first+1+(shift+j)%(n-1))%n])
		}
		out[p] = rs
	}
	return out
}

// listAll returns every move in progress (ListPartitionReassignments with
// null topics, which kadm cannot send).
func listAll(c *adminCmd, ctx context.Context) (map[tp]kmsg.ListPartitionReassignmentsResponseTopicPartition, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = int32(min(c.timeout.Milliseconds(), 60000))
	resp, err := req.RequestWith(ctx, c.client())
	if err != nil {
		return nil, c.brokerErr("list partition reassignments", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("list partition reassignments: %s", errText(err, derefString(resp.ErrorMessage)))
	}
	out := map[tp]kmsg.ListPartitionReassignmentsResponseTopicPartition{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[tp{t.Topic, p.Partition}] = p
		}
	}
	return out, nil
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func reassignExecute(c *adminCmd, adm *kadm.Client, ctx context.Context, target map[tp][]int32, throttle int64, additional bool) error {
	cur, _, err := currentAssignment(adm, ctx, topicsOf(target))
	if err != nil {
		return err
	}
	for p := range target {
		if _, ok := cur[p]; !ok {
			return fmt.Errorf("partition %s: %w", p, kerr.UnknownTopicOrPartition)
		}
	}
	moving, err := listAll(c, ctx)
	if err != nil {
		return err
	}
	if len(moving) > 0 && !additional {
		return errors.New("cannot execute because there is an existing partition assignment; use --additional to override this and create a new partition assignment in addition to the existing one")
	}
	rollback := map[tp][]int32{}
	for p := range target {
		rollback[p] = cur[p]
	}
	fmt.Fprintf(c.stdout, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", encodeReassignment(rollback))
	if throttle >= 0 {
		if err := setThrottles(c, adm, ctx, proposedMoves(moving, cur, target), throttle); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
		fmt.Fprintf(c.stdout, "The inter-broker throttle limit was set to %d B/s\n", throttle)
	}
	var req kadm.AlterPartitionAssignmentsReq
	for p, rs := range target {
		req.Assign(p.topic, p.part, rs)
	}
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return c.brokerErr("alter partition reassignments", err)
	}
	var started []string
	var fails failures
	for _, r := range resps.Sorted() {
		p := tp{r.Topic, r.Partition}
		if r.Err != nil {
			fails.add("%s: %s", p, errText(r.Err, r.ErrMessage))
			continue
		}
		started = append(started, p.String())
	}
	if len(started) > 0 {
		fmt.Fprintf(c.stdout, "Successfully started partition reassignment%s for %s\n", plural(len(started)), strings.Join(started, ","))
	}
	if err := fails.err(); err != nil {
		return fmt.Errorf("error reassigning partition(s):\n%w", err)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// partMove is a partition's move as the throttles see it: the replicas
// it copies from and the ones it copies to (Kafka's PartitionMove).
type partMove struct {
	sources, destinations []int32
}

// proposedMoves is Kafka's calculateProposedMoveMap: every move in
// progress (moving; its sources are the replicas before it, RS minus the
// adding ones) and every partition of target, whose sources are those of
// its move in progress if it has one (--additional), else its replicas now
// (cur), and whose destinations are the target replicas not among them.
// The moves already running keep their throttles when --additional starts
// more: the topic configs are replaced as a whole.
func proposedMoves(moving map[tp]kmsg.ListPartitionReassignmentsResponseTopicPartition, cur, target map[tp][]int32) map[tp]partMove {
	out := make(map[tp]partMove, len(moving)+len(target))
	for p, m := range moving {
		out[p] = partMove{sources: without(m.Replicas, m.AddingReplicas), destinations: slices.Clone(m.AddingReplicas)}
	}
	for p, rs := range target {
		sources := cur[p]
		if m, ok := out[p]; ok {
			sources = m.sources
		}
		out[p] = partMove{sources: slices.Clone(sources), destinations: without(rs, sources)}
	}
	return out
}

// without returns xs minus the members of ys, in xs's order.
func without(xs, ys []int32) []int32 {
	out := []int32{}
	for _, x := range xs {
		if !slices.Contains(ys, x) {
			out = append(out, x)
		}
	}
	return out
}

// setThrottles is Kafka's --throttle (modifyReassignmentThrottle): the
// rate on every broker of the moves (sources and destinations), and per
// topic the sources as leader.replication.throttled.replicas and the
// destinations as follower.replication.throttled.replicas,
// "partition:broker,...".
func setThrottles(c *adminCmd, adm *kadm.Client, ctx context.Context, moves map[tp]partMove, rate int64) error {
	var brokers []int32
	leader, follower := map[string][]string{}, map[string][]string{}
	for _, p := range slices.SortedFunc(maps.Keys(moves), cmpTP) {
		m := moves[p]
		for _, r := range append(slices.Clone(m.sources), m.destinations...) {
			if !slices.Contains(brokers, r) {
				brokers = append(brokers, r)
			}
		}
		for _, r := range m.sources {
			leader[p.topic] = append(leader[p.topic], fmt.Sprintf("%d:%d", p.part, r))
		}
		for _, r := range m.destinations {
			follower[p.topic] = append(follower[p.topic], fmt.Sprintf("%d:%d", p.part, r))
		}
	}
	slices.Sort(brokers)
	for _, m := range []map[string][]string{leader, follower} {
		for _, l := range m {
			slices.Sort(l) // as Kafka's TreeSet of "p:b" strings
		}
	}
	v := strconv.FormatInt(rate, 10)
	for _, b := range brokers {
		err := alterOne(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderThrottleRate, Value: &v},
			{Op: kadm.SetConfig, Name: followerThrottleRate, Value: &v},
		}, b))
		if err != nil {
			return fmt.Errorf("set the throttle rate of broker %d: %w", b, err)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(leader)) {
		lv, fv := strings.Join(leader[t], ","), strings.Join(follower[t], ",")
		alters := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: leaderThrottledReplicas, Value: &lv}}
		if fv != "" {
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: followerThrottledReplica, Value: &fv})
		}
		if err := alterOne(adm.AlterTopicConfigs(ctx, alters, t)); err != nil {
			return fmt.Errorf("set the throttled replicas of topic %s: %w", t, err)
		}
	}
	return nil
}

// alterOne checks the answer of an alter configs request for one resource.
func alterOne(resps kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return errors.New(errText(r.Err, r.ErrMessage))
		}
	}
	return nil
}

// clearThrottles removes the throttle rates from every broker and the
// throttled replicas from topics, as Kafka's tool does when the moves are
// done.
func clearThrottles(c *adminCmd, adm *kadm.Client, ctx context.Context, topics []string) error {
	bs, err := adm.ListBrokers(ctx)
	if err != nil {
		return c.brokerErr("list brokers", err)
	}
	ids := bs.NodeIDs()
	slices.Sort(ids)
	for _, b := range ids {
		err := alterOne(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderThrottleRate},
			{Op: kadm.DeleteConfig, Name: followerThrottleRate},
		}, b))
		if err != nil {
			return fmt.Errorf("clear the throttle rate of broker %d: %w", b, err)
		}
	}
	fmt.Fprintf(c.stdout, "Clearing broker-level throttles on broker%s %s\n", plural(len(ids)), int32s(ids))
	for _, t := range topics {
		err := alterOne(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderThrottledReplicas},
			{Op: kadm.DeleteConfig, Name: followerThrottledReplica},
		}, t))
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("clear the throttled replicas of topic %s: %w", t, err)
		}
		fmt.Fprintf(c.stdout, "Clearing topic-level throttles on topic %s\n", t)
	}
	return nil
}

// progress describes how far the adding replicas of a move have copied:
// each one's log size against the largest replica's (DescribeLogDirs).
func progress(adm *kadm.Client, ctx context.Context, moves map[tp]kmsg.ListPartitionReassignmentsResponseTopicPartition) map[tp]string {
	out := map[tp]string{}
	if len(moves) == 0 {
		return out
	}
	set := kadm.TopicsSet{}
	for p := range moves {
		set.Add(p.topic, p.part)
	}
	// Progress is a courtesy: a broker that does not answer within a
	// few seconds is left out (kadm returns the other brokers' answers).
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	dirs, _ := adm.DescribeAllLogDirs(dctx, set)
	cancel()
	sizes := map[tp]map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			k := tp{p.Topic, p.Partition}
			if sizes[k] == nil {
				sizes[k] = map[int32]int64{}
			}
			sizes[k][p.Broker] += p.Size
		})
	})
	for p, m := range moves {
		var full int64
		for _, s := range sizes[p] {
			full = max(full, s)
		}
		var parts []string
		for _, r := range m.AddingReplicas {
			have := sizes[p][r]
			pct := 100
			if full > 0 {
				pct = int(have * 100 / full)
			}
			parts = append(parts, fmt.Sprintf("broker %d has %d of %d bytes (%d%%)", r, have, full, pct))
		}
		if len(parts) > 0 {
			out[p] = strings.Join(parts, "; ")
		}
	}
	return out
}

func reassignVerify(c *adminCmd, adm *kadm.Client, ctx context.Context, target map[tp][]int32, preserve bool) error {
	moving, err := listAll(c, ctx)
	if err != nil {
		return err
	}
	cur, _, err := currentAssignment(adm, ctx, topicsOf(target))
	if err != nil {
		return err
	}
	prog := progress(adm, ctx, moving)
	fmt.Fprintln(c.stdout, "Status of partition reassignment:")
	done := true
	for _, p := range slices.SortedFunc(maps.Keys(target), cmpTP) {
		switch _, inProgress := moving[p]; {
		case inProgress:
			done = false
			fmt.Fprintf(c.stdout, "Reassignment of partition %s is still in progress.\n", p)
			if s := prog[p]; s != "" {
				fmt.Fprintf(c.stdout, "  %s\n", s)
			}
		case slices.Equal(cur[p], target[p]):
			fmt.Fprintf(c.stdout, "Reassignment of partition %s is completed.\n", p)
		default:
			fmt.Fprintf(c.stdout, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n", p, int32s(cur[p]), int32s(target[p]))
		}
	}
	if !done || preserve {
		return nil
	}
	fmt.Fprintln(c.stdout)
	return clearThrottles(c, adm, ctx, topicsOf(target))
}

func reassignCancel(c *adminCmd, adm *kadm.Client, ctx context.Context, target map[tp][]int32, preserve bool) error {
	var req kadm.AlterPartitionAssignmentsReq
	for p := range target {
		req.CancelAssign(p.topic, p.part)
	}
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return c.brokerErr("cancel partition reassignments", err)
	}
	var cancelled []string
	var fails failures
	for _, r := range resps.Sorted() {
		p := tp{r.Topic, r.Partition}
		switch {
		case r.Err == nil:
			cancelled = append(cancelled, p.String())
		case errors.Is(r.Err, kerr.NoReassignmentInProgress):
		default:
			fails.add("%s: %s", p, errText(r.Err, r.ErrMessage))
		}
	}
	fmt.Fprintf(c.stdout, "Successfully cancelled partition reassignments for: %s\n", strings.Join(cancelled, ","))
	if err := fails.err(); err != nil {
		return fmt.Errorf("error cancelling partition reassignment(s):\n%w", err)
	}
	if preserve {
		return nil
	}
	return clearThrottles(c, adm, ctx, topicsOf(target))
}

func reassignList(c *adminCmd, adm *kadm.Client, ctx context.Context) error {
	moving, err := listAll(c, ctx)
	if err != nil {
		return err
	}
	if len(moving) == 0 {
		fmt.Fprintln(c.stdout, "No partition reassignments found.")
		return nil
	}
	prog := progress(adm, ctx, moving)
	fmt.Fprintln(c.stdout, "Current partition reassignments:")
	for _, p := range slices.SortedFunc(maps.Keys(moving), cmpTP) {
		m := moving[p]
		fmt.Fprintf(c.stdout, "%s: replicas: %s. adding: %s. removing: %s.\n", p, int32s(m.Replicas), int32s(m.AddingReplicas), int32s(m.RemovingReplicas))
		if s := prog[p]; s != "" {
			fmt.Fprintf(c.stdout, "  %s\n", s)
		}
	}
	return nil
}
