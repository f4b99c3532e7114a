package main

// sluice partitions reassign: kafka-reassign-partitions.sh, reading and
// writing its JSON files and printing what it prints.
//
//	--generate --topics-to-move-json-file F --broker-list 1,2,3
//	    the current assignment of F's topics and a proposed one over the
//	    brokers listed (Kafka's AdminUtils rack-unaware placement)
//	--execute --reassignment-json-file F [--throttle B/s]
//	          [--replica-alter-log-dirs-throttle B/s] [--additional]
//	    prints the current assignment (for a rollback), then starts the moves
//	    (AlterPartitionReassignments); --throttle sets, as Kafka's tool does,
//	    leader/follower.replication.throttled.rate on every broker of the
//	    moves and leader.replication.throttled.replicas (the replicas now)
//	    and follower.replication.throttled.replicas (the ones added) on the
//	    topics, the moves already in progress included (--additional); 0
//	    is a rate, which holds the moves back. Replicas given a log dir
//	    (log_dirs other than "any") are then moved there with
//	    AlterReplicaLogDirs to their broker, retried while the broker
//	    answers REPLICA_NOT_AVAILABLE (a replica a reassignment is still
//	    creating there) until --timeout; --replica-alter-log-dirs-throttle
//	    sets replica.alter.log.dirs.io.max.bytes.per.second on their brokers
//	--verify --reassignment-json-file F [--preserve-throttles]
//	    each partition's state, with the bytes the added replicas hold so
//	    far, and each log dir move's (DescribeLogDirs); once every move is
//	    done, removes the throttles
//	--cancel --reassignment-json-file F [--preserve-throttles]
//	    cancels the moves (null replicas) and the log dir moves in progress
//	    (each replica sent back to its current dir), then removes the
//	    throttles
//	--list
//	    every move in progress, with its progress
//
// Files: topics to move {"version":1,"topics":[{"topic":"t"}]}; a
// reassignment {"version":1,"partitions":[{"topic":"t","partition":0,
// "replicas":[1,2],"log_dirs":["any","/data/d1"]}]} (log_dirs optional:
// one per replica, an absolute path on that replica's broker or "any").

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
	logDirThrottleRate       = "replica.alter.log.dirs.io.max.bytes.per.second"
)

// anyLogDir in a reassignment's log_dirs leaves the dir to the broker.
const anyLogDir = "any"

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

// tpr names a partition's replica on a broker, as Kafka's
// TopicPartitionReplica: topic-partition-broker.
type tpr struct {
	tp
	broker int32
}

func (r tpr) String() string { return r.tp.String() + "-" + strconv.Itoa(int(r.broker)) }

// cmpTPR orders replicas by broker, then partition (Kafka's
// compareTopicPartitionReplicas).
func cmpTPR(a, b tpr) int {
	if a.broker != b.broker {
		return int(a.broker - b.broker)
	}
	return cmpTP(a.tp, b.tp)
}

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
// one per replica. It returns the replicas of each partition and the log
// dir of each replica given one (Kafka's replicaAssignment: "any" is left
// out).
func parseReassignment(path string) (map[tp][]int32, map[tpr]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var f reassignFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("%s: not a reassignment JSON file: %v", path, err)
	}
	if len(f.Partitions) == 0 {
		return nil, nil, fmt.Errorf("%s: partition reassignment list cannot be empty", path)
	}
	out := make(map[tp][]int32, len(f.Partitions))
	dirs := map[tpr]string{}
	for _, e := range f.Partitions {
		p := tp{e.Topic, e.Partition}
		switch {
		case e.Topic == "" || e.Partition < 0:
			return nil, nil, fmt.Errorf("%s: bad partition %q %d", path, e.Topic, e.Partition)
		case len(e.Replicas) == 0:
			return nil, nil, fmt.Errorf("%s: partition %s has no replicas", path, p)
		case e.LogDirs != nil && len(e.LogDirs) != len(e.Replicas):
			return nil, nil, fmt.Errorf("%s: partition %s has %d log_dirs for %d replicas", path, p, len(e.LogDirs), len(e.Replicas))
		}
		if _, dup := out[p]; dup {
			return nil, nil, fmt.Errorf("%s: duplicate reassignment of partition %s", path, p)
		}
		for i, r := range e.Replicas {
			if slices.Contains(e.Replicas[:i], r) {
				return nil, nil, fmt.Errorf("%s: partition %s lists broker %d twice", path, p, r)
			}
		}
		for i, d := range e.LogDirs {
			switch {
			case d == anyLogDir:
			case d == "":
				return nil, nil, fmt.Errorf("%s: partition %s: an empty log dir for broker %d (\"any\" leaves it to the broker)", path, p, e.Replicas[i])
			default:
				dirs[tpr{p, e.Replicas[i]}] = d
			}
		}
		out[p] = e.Replicas
	}
	return out, dirs, nil
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
	logDirThrottle := c.flags.Int64("replica-alter-log-dirs-throttle", -1, "throttle in `bytes/s` of the moves between log dirs on a broker (--execute)")
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
	if *logDirThrottle != -1 && (!*execute || *logDirThrottle < 0) {
		return usageErr("--replica-alter-log-dirs-throttle takes a rate (0 or more) and goes with --execute")
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
	target, dirs, err := parseReassignment(*reassignPath)
	if err != nil {
		return err
	}
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		switch {
		case *execute:
			return reassignExecute(c, adm, ctx, target, dirs, *throttle, *logDirThrottle, *additional)
		case *verify:
			return reassignVerify(c, adm, ctx, target, dirs, *preserve)
		default:
			return reassignCancel(c, adm, ctx, target, dirs, *preserve)
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

func reassignExecute(c *adminCmd, adm *kadm.Client, ctx context.Context, target map[tp][]int32, dirs map[tpr]string, throttle, logDirThrottle int64, additional bool) error {
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
	if throttle >= 0 || logDirThrottle >= 0 {
		fmt.Fprintln(c.stdout, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
	}
	if throttle >= 0 {
		if err := setThrottles(c, adm, ctx, proposedMoves(moving, cur, target), throttle); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "The inter-broker throttle limit was set to %d B/s\n", throttle)
	}
	if logDirThrottle >= 0 {
		if err := setLogDirThrottle(adm, ctx, dirs, logDirThrottle); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "The replica-alter-dir throttle limit was set to %d B/s\n", logDirThrottle)
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
	return executeLogDirMoves(c, adm, ctx, dirs)
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
			{Op: kadm.DeleteConfig, Name: logDirThrottleRate},
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

func reassignVerify(c *adminCmd, adm *kadm.Client, ctx context.Context, target map[tp][]int32, dirs map[tpr]string, preserve bool) error {
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
	// As Kafka's verifyReplicaMoves: the log dir moves, one line each
	// (none: an empty line).
	states, err := logDirMoveStates(c, adm, ctx, dirs)
	if err != nil {
		return err
	}
	for _, r := range slices.SortedFunc(maps.Keys(states), cmpTPR) {
		st := states[r]
		if !st.done() {
			done = false
		}
		fmt.Fprintln(c.stdout, st.describe(r))
	}
	if len(states) == 0 {
		fmt.Fprintln(c.stdout)
	}
	if !done || preserve {
		return nil
	}
	return clearThrottles(c, adm, ctx, topicsOf(target))
}

func reassignCancel(c *adminCmd, adm *kadm.Client, ctx context.Context, target map[tp][]int32, dirs map[tpr]string, preserve bool) error {
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
	// The log dir moves in progress go back: each replica is sent to the
	// dir it is in (Kafka's cancelAssignment), which drops its future
	// replica.
	states, err := logDirMoveStates(c, adm, ctx, dirs)
	if err != nil {
		return err
	}
	back := map[tpr]string{}
	for r, st := range states {
		if st.future != "" && st.current != "" {
			back[r] = st.current
		}
	}
	if len(back) == 0 {
		fmt.Fprintln(c.stdout, "None of the specified partition moves are active.")
	} else if err := executeLogDirMoves(c, adm, ctx, back); err != nil {
		return err
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

// setLogDirThrottle is Kafka's modifyLogDirThrottle:
// replica.alter.log.dirs.io.max.bytes.per.second on every broker a log
// dir move names.
func setLogDirThrottle(adm *kadm.Client, ctx context.Context, dirs map[tpr]string, rate int64) error {
	var brokers []int32
	for r := range dirs {
		if !slices.Contains(brokers, r.broker) {
			brokers = append(brokers, r.broker)
		}
	}
	slices.Sort(brokers)
	v := strconv.FormatInt(rate, 10)
	for _, b := range brokers {
		if err := alterOne(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: logDirThrottleRate, Value: &v}}, b)); err != nil {
			return fmt.Errorf("set the log dir throttle of broker %d: %w", b, err)
		}
	}
	return nil
}

// logDirRetry is how long executeLogDirMoves waits before it asks again
// for the replicas not there yet (Kafka's tool: 100 ms).
const logDirRetry = 100 * time.Millisecond

// executeLogDirMoves is Kafka's executeMoves: AlterReplicaLogDirs for
// each replica of dirs, sent to its broker, again every logDirRetry for
// those whose broker answers REPLICA_NOT_AVAILABLE (a reassignment has
// not created the replica there yet; the broker keeps the dir for when it
// does, but the tool waits to see it taken) until ctx ends (--timeout).
// Any other error fails the command.
func executeLogDirMoves(c *adminCmd, adm *kadm.Client, ctx context.Context, dirs map[tpr]string) error {
	pending := maps.Clone(dirs)
	for len(pending) > 0 {
		byBroker := map[int32]kadm.AlterReplicaLogDirsReq{}
		for r, d := range pending {
			req := byBroker[r.broker]
			if req == nil {
				req = kadm.AlterReplicaLogDirsReq{}
				byBroker[r.broker] = req
			}
			req.Add(d, kadm.TopicsSet{r.topic: {r.part: {}}})
		}
		var started []tpr
		for _, b := range slices.Sorted(maps.Keys(byBroker)) {
			resps, err := adm.AlterBrokerReplicaLogDirs(ctx, b, byBroker[b])
			if err != nil {
				return c.brokerErr(fmt.Sprintf("alter replica log dirs on broker %d", b), err)
			}
			var fail error
			resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
				k := tpr{tp{r.Topic, r.Partition}, b}
				switch {
				case r.Err == nil:
					started = append(started, k)
				case errors.Is(r.Err, kerr.ReplicaNotAvailable):
				case fail == nil:
					fail = fmt.Errorf("failed to alter dir for %s: %w", k, r.Err)
				}
			})
			if fail != nil {
				return fail
			}
		}
		slices.SortFunc(started, cmpTPR)
		for _, r := range started {
			fmt.Fprintf(c.stdout, "Successfully started moving log directory to %s for replica %s with broker %d \n", pending[r], r.tp, r.broker)
			delete(pending, r)
		}
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			left := slices.SortedFunc(maps.Keys(pending), cmpTPR)
			names := make([]string, len(left))
			for i, r := range left {
				names[i] = r.String()
			}
			return fmt.Errorf("timed out before log directory move%s could be started for: %s", plural(len(left)), strings.Join(names, ","))
		case <-time.After(logDirRetry):
		}
	}
	return nil
}

// logDirMove is where a replica is and is going, as DescribeLogDirs tells
// (Kafka's LogDirMoveState): current is the dir of its replica and future
// that of its future replica ("" for none: a replica its broker does not
// list has neither, as in Kafka's describeReplicaLogDirs).
type logDirMove struct {
	target, current, future string
}

// done reports whether the replica is in its target dir, or its move was
// cancelled (Kafka: CompletedMoveState and CancelledMoveState are done).
func (m logDirMove) done() bool { return m.current != "" && m.future == "" }

// describe is the line Kafka's tool prints for the move of r.
func (m logDirMove) describe(r tpr) string {
	switch {
	case m.current == "":
		return fmt.Sprintf("Partition %s is not found in any live log dir on broker %d. There is likely an offline log directory on the broker.", r.tp, r.broker)
	case m.future != "" && m.future == m.target:
		return fmt.Sprintf("Reassignment of replica %s is still in progress.", r)
	case m.future != "":
		return fmt.Sprintf("Partition %s on broker %d is being moved to log dir %s instead of %s.", r.tp, r.broker, m.future, m.target)
	case m.current == m.target:
		return fmt.Sprintf("Reassignment of replica %s completed successfully.", r)
	default:
		return fmt.Sprintf("Partition %s on broker %d is not being moved from log dir %s to %s.", r.tp, r.broker, m.current, m.target)
	}
}

// logDirMoveStates is Kafka's findLogDirMoveStates: DescribeLogDirs of
// the replicas of dirs, asked of their brokers. A broker that does not
// answer fails the command.
func logDirMoveStates(c *adminCmd, adm *kadm.Client, ctx context.Context, dirs map[tpr]string) (map[tpr]logDirMove, error) {
	out := make(map[tpr]logDirMove, len(dirs))
	sets := map[int32]kadm.TopicsSet{}
	for r, d := range dirs {
		out[r] = logDirMove{target: d}
		if sets[r.broker] == nil {
			sets[r.broker] = kadm.TopicsSet{}
		}
		set := sets[r.broker]
		set.Add(r.topic, r.part)
	}
	for _, b := range slices.Sorted(maps.Keys(sets)) {
		described, err := adm.DescribeBrokerLogDirs(ctx, b, sets[b])
		if err != nil {
			return nil, c.brokerErr(fmt.Sprintf("describe the log dirs of broker %d", b), err)
		}
		described.Each(func(d kadm.DescribedLogDir) {
			if d.Err != nil {
				return // an offline dir lists nothing
			}
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				k := tpr{tp{p.Topic, p.Partition}, b}
				m, ok := out[k]
				if !ok {
					return
				}
				if p.IsFuture {
					m.future = d.Dir
				} else {
					m.current = d.Dir
				}
				out[k] = m
			})
		})
	}
	return out, nil
}
