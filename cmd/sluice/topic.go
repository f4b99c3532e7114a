package main

// `sluice topic`, after kafka-topics.sh (and kafka-configs.sh for
// alter-config): it manages topics of a running broker through the Kafka
// protocol, so it works against any Kafka-compatible broker.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func topicCmd(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("topic", []subcommand{
		{"create", "NAME [--partitions N] [--replication-factor N] [--config k=v ...]",
			"create a topic", topicCreate},
		{"list", "[--internal]",
			"list topics with their partition count and replication factor", topicList},
		{"describe", "[NAME...]",
			"show partitions, leaders, replicas, ISR, topic id and overridden configs", topicDescribe},
		{"delete", "NAME...",
			"delete topics", topicDelete},
		{"alter-config", "NAME [--set k=v ...] [--delete k ...]",
			"set or delete topic config overrides (IncrementalAlterConfigs)", topicAlterConfig},
	}, args, stdout, stderr)
}

func topicCreate(c *adminCmd) error {
	fs := c.flags
	partitions := fs.Int("partitions", -1, "number of partitions (-1: the broker's num.partitions)")
	rf := fs.Int("replication-factor", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	var configs stringList
	fs.Var(&configs, "config", "topic config `key=value` (repeatable)")
	ifNotExists := fs.Bool("if-not-exists", false, "succeed if the topic already exists")
	assignment := fs.String("replica-assignment", "", "manual replicas, as kafka-topics.sh: `b:b,b:b,...` (partition 0's brokers first, preferred leader first in each)")
	pos, err := c.parse(exactlyOne("topic name"))
	if err != nil {
		return err
	}
	if *partitions == 0 || *partitions < -1 || *partitions > 1<<31-1 {
		return usageErr("--partitions must be positive (or -1 for the broker default)")
	}
	if *rf == 0 || *rf < -1 || *rf > 1<<15-1 {
		return usageErr("--replication-factor must be positive (or -1 for the broker default)")
	}
	cfg, err := parseKVs("--config", configs)
	if err != nil {
		return err
	}
	var asg [][]int32
	if *assignment != "" {
		if *partitions != -1 || *rf != -1 {
			return usageErr("--replica-assignment replaces --partitions and --replication-factor")
		}
		if asg, err = parseReplicaAssignment(*assignment); err != nil {
			return err
		}
	}
	name := pos[0]
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		var r kadm.CreateTopicResponse
		var err error
		if asg != nil {
			r, err = createAssigned(ctx, c.client(), name, asg, cfg)
		} else {
			var resps kadm.CreateTopicResponses
			if resps, err = adm.CreateTopics(ctx, int32(*partitions), int16(*rf), cfg, name); err == nil {
				var ok bool
				if r, ok = resps[name]; !ok {
					return fmt.Errorf("create topic %s: the broker's answer does not mention it", name)
				}
			}
		}
		if err != nil {
			return c.brokerErr("create topic "+name, err)
		}
		if r.Err != nil {
			if *ifNotExists && errors.Is(r.Err, kerr.TopicAlreadyExists) {
				return nil
			}
			return fmt.Errorf("create topic %s: %s", name, errText(r.Err, r.ErrMessage))
		}
		fmt.Fprintf(c.stdout, "Created topic %s.\n", name)
		return nil
	})
}

// parseKVs parses key=value flag values into the config map kadm takes.
func parseKVs(flagName string, kvs []string) (map[string]*string, error) {
	out := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErr("%s %q: want key=value", flagName, kv)
		}
		if _, dup := out[k]; dup {
			return nil, usageErr("%s: %s given twice", flagName, k)
		}
		out[k] = &v
	}
	return out, nil
}

func topicList(c *adminCmd) error {
	internal := c.flags.Bool("internal", false, "include internal topics")
	return c.run(noArgs, func(adm *kadm.Client, ctx context.Context, _ []string) error {
		list := adm.ListTopics
		if *internal {
			list = adm.ListTopicsWithInternal
		}
		tds, err := list(ctx)
		if err != nil {
			return c.brokerErr("list topics", err)
		}
		t := newTable(c.stdout, "TOPIC", "PARTITIONS", "REPLICATION-FACTOR")
		for _, td := range tds.Sorted() {
			if td.Err != nil {
				t.row(td.Topic, "-", "-")
				continue
			}
			t.row(td.Topic, strconv.Itoa(len(td.Partitions)), strconv.Itoa(td.Partitions.NumReplicas()))
		}
		t.flush()
		return nil
	})
}

func topicDescribe(c *adminCmd) error {
	return c.run(anyArgs, func(adm *kadm.Client, ctx context.Context, pos []string) error {
		tds, err := adm.ListTopics(ctx, pos...)
		if err != nil {
			return c.brokerErr("describe topics", err)
		}
		var names []string
		var failed failures
		for _, td := range tds.Sorted() {
			if td.Err != nil {
				failed.add("%s: %v", td.Topic, td.Err)
				continue
			}
			names = append(names, td.Topic)
		}
		overrides := map[string][]string{}
		policies := map[string]string{}
		tieredTopics := map[string]bool{} // remote.storage.enable=true (topic_tiered.go)
		var compacted []string
		if len(names) > 0 {
			rcs, err := adm.DescribeTopicConfigs(ctx, names...)
			if err != nil {
				return c.brokerErr("describe topic configs", err)
			}
			for _, rc := range rcs {
				if rc.Err != nil {
					failed.add("%s: configs: %s", rc.Name, errText(rc.Err, rc.ErrMessage))
					continue
				}
				for _, cfg := range rc.Configs {
					if cfg.Key == "remote.storage.enable" && cfg.MaybeValue() == "true" {
						tieredTopics[rc.Name] = true
					}
					if cfg.Key == "cleanup.policy" {
						policies[rc.Name] = cleanupPolicy(cfg)
						if strings.Contains(cfg.MaybeValue(), "compact") {
							compacted = append(compacted, rc.Name)
						}
					}
					if cfg.Source != kmsg.ConfigSourceDynamicTopicConfig {
						continue
					}
					v := "<sensitive>"
					if !cfg.Sensitive {
						v = cfg.MaybeValue()
					}
					overrides[rc.Name] = append(overrides[rc.Name], cfg.Key+"="+v)
				}
				slices.Sort(overrides[rc.Name])
			}
		}
		cleaning := cleanerStatuses(ctx, c.client(), compacted)
		moving, err := reassignmentsOf(ctx, adm, tds, names)
		if err != nil {
			return c.brokerErr("list partition reassignments", err)
		}
		for i, name := range names {
			if i > 0 {
				fmt.Fprintln(c.stdout)
			}
			if st, ok := cleaning[name]; ok {
				policies[name] += "  " + st.String()
			}
			printTopic(c.stdout, tds[name], overrides[name], policies[name], moving[name])
			if tieredTopics[name] {
				printTiered(c.stdout, tieredStatus(ctx, c.client(), adm, tds[name]))
			}
		}
		return failed.err()
	})
}

// reassignmentsOf returns the moves in progress among the partitions of
// the topics named (ListPartitionReassignments), as kafka-topics.sh
// --describe asks for them. As Kafka's TopicCommand, a broker that does
// not serve the request (a single node: nothing can move) or refuses it
// (no Describe on the cluster) means no moves to show; other failures are
// errors.
func reassignmentsOf(ctx context.Context, adm *kadm.Client, tds kadm.TopicDetails, names []string) (kadm.ListPartitionReassignmentsResponses, error) {
	set := kadm.TopicsSet{}
	for _, name := range names {
		for p := range tds[name].Partitions {
			set.Add(name, p)
		}
	}
	moving, err := adm.ListPartitionReassignments(ctx, set)
	switch {
	case err == nil:
		return moving, nil
	case errors.Is(err, kerr.ClusterAuthorizationFailed), errors.Is(err, kerr.UnsupportedVersion),
		strings.Contains(err.Error(), "broker is too old"): // kgo's text for an API not in ApiVersions
		return nil, nil
	}
	return nil, err
}

// cleanerStatus is what the brokers report of a compacted topic's cleaning:
// the highest dirty ratio among its partitions and when one was last
// cleaned (ms; -1: not since the brokers started).
type cleanerStatus struct {
	ratio       float64
	lastCleaned int64
}

func (st cleanerStatus) String() string {
	last := "never (since the brokers started)"
	if st.lastCleaned >= 0 {
		last = time.UnixMilli(st.lastCleaned).UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("DirtyRatio: %.2f  LastCleaned: %s", st.ratio, last)
}

// cleanerStatuses asks every broker for the cleaner status of topics (each
// broker knows its own replicas: read-only sluice.cleaner.* entries that
// DescribeConfigs returns when they are named) and merges the answers.
// Brokers that do not answer are left out.
func cleanerStatuses(ctx context.Context, cl *kgo.Client, topics []string) map[string]cleanerStatus {
	out := map[string]cleanerStatus{}
	if len(topics) == 0 {
		return out
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range topics {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = t
		r.ConfigNames = []string{"sluice.cleaner.dirty.ratio", "sluice.cleaner.last.cleaned.ms"}
		req.Resources = append(req.Resources, r)
	}
	for _, b := range cl.DiscoveredBrokers() {
		kr, err := b.Request(ctx, req)
		if err != nil {
			continue
		}
		resp := kr.(*kmsg.DescribeConfigsResponse)
		for _, r := range resp.Resources {
			if r.ErrorCode != 0 {
				continue
			}
			st, seen := out[r.ResourceName]
			if !seen {
				st.lastCleaned = -1
			}
			for _, c := range r.Configs {
				v := ""
				if c.Value != nil {
					v = *c.Value
				}
				switch c.Name {
				case "sluice.cleaner.dirty.ratio":
					if f, err := strconv.ParseFloat(v, 64); err == nil && f > st.ratio {
						st.ratio = f
					}
					seen = true
				case "sluice.cleaner.last.cleaned.ms":
					if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > st.lastCleaned {
						st.lastCleaned = n
					}
					seen = true
				}
			}
			if seen {
				out[r.ResourceName] = st
			}
		}
	}
	return out
}

// cleanupPolicy is the described cleanup.policy with where it comes from:
// "compact (topic)", "delete (default)", "compact,delete (broker)".
func cleanupPolicy(cfg kadm.Config) string {
	src := "broker"
	switch cfg.Source {
	case kmsg.ConfigSourceDynamicTopicConfig:
		src = "topic"
	case kmsg.ConfigSourceDefaultConfig:
		src = "default"
	}
	return cfg.MaybeValue() + " (" + src + ")"
}

// printTopic writes what kafka-topics.sh --describe shows of a topic: a
// header line with its overridden configs, its cleanup policy when the
// broker described it (policy "": no line), then a table of its
// partitions. moving holds the partitions being reassigned: when there is
// one, the table gains ADDING and REMOVING columns (kafka-topics.sh's
// "Adding Replicas" and "Removing Replicas"), "-" for the others, and a
// moving partition's REPLICAS are the reassignment's, so that the three
// columns agree.
func printTopic(w io.Writer, td kadm.TopicDetail, overrides []string, policy string, moving map[int32]kadm.ListPartitionReassignmentsResponse) {
	fmt.Fprintf(w, "Topic: %s  TopicId: %s  PartitionCount: %d  ReplicationFactor: %d  Configs: %s\n",
		td.Topic, topicIDString(td.ID), len(td.Partitions), td.Partitions.NumReplicas(), strings.Join(overrides, ","))
	if policy != "" {
		fmt.Fprintf(w, "  CleanupPolicy: %s\n", policy)
	}
	// OFFLINE only when some partition has offline replicas or an error, so
	// the healthy case stays narrow.
	showOffline := false
	for _, p := range td.Partitions {
		showOffline = showOffline || len(p.OfflineReplicas) > 0 || p.Err != nil
	}
	header := []string{"  PARTITION", "LEADER", "REPLICAS", "ISR"}
	if showOffline {
		header = append(header, "OFFLINE")
	}
	showMoving := len(moving) > 0
	if showMoving {
		header = append(header, "ADDING", "REMOVING")
	}
	t := newTable(w, header...)
	for _, p := range td.Partitions.Sorted() {
		leader := strconv.Itoa(int(p.Leader))
		if p.Leader < 0 {
			leader = "none"
		}
		replicas := p.Replicas
		if m, ok := moving[p.Partition]; ok && len(m.Replicas) > 0 {
			// The controller's set, answered with the move: the
			// metadata of the broker asked may not hold it yet.
			replicas = m.Replicas
		}
		row := []string{"  " + strconv.Itoa(int(p.Partition)), leader, int32s(replicas), int32s(p.ISR)}
		if showOffline {
			offline := orDash(int32s(p.OfflineReplicas))
			if p.Err != nil {
				offline += " (" + p.Err.Error() + ")"
			}
			row = append(row, offline)
		}
		if showMoving {
			m := moving[p.Partition]
			row = append(row, orDash(int32s(m.AddingReplicas)), orDash(int32s(m.RemovingReplicas)))
		}
		t.row(row...)
	}
	t.flush()
}

func topicDelete(c *adminCmd) error {
	ifExists := c.flags.Bool("if-exists", false, "succeed for topics that do not exist")
	return c.run(oneOrMore("topic"), func(adm *kadm.Client, ctx context.Context, names []string) error {
		resps, err := adm.DeleteTopics(ctx, names...)
		if err != nil {
			return c.brokerErr("delete topics", err)
		}
		return eachNamed(names, resps, func(name string, r kadm.DeleteTopicResponse) error {
			switch {
			case r.Err == nil:
				fmt.Fprintf(c.stdout, "Deleted topic %s.\n", name)
			case *ifExists && errors.Is(r.Err, kerr.UnknownTopicOrPartition):
			default:
				return errors.New(name + ": " + errText(r.Err, r.ErrMessage))
			}
			return nil
		})
	})
}

func topicAlterConfig(c *adminCmd) error {
	var sets, dels stringList
	c.flags.Var(&sets, "set", "set topic config `key=value` (repeatable)")
	c.flags.Var(&dels, "delete", "remove the override of `key`, back to the broker's value (repeatable)")
	pos, err := c.parse(exactlyOne("topic name"))
	if err != nil {
		return err
	}
	if len(sets)+len(dels) == 0 {
		return usageErr("nothing to do: give --set key=value or --delete key")
	}
	kvs, err := parseKVs("--set", sets)
	if err != nil {
		return err
	}
	var alters []kadm.AlterConfig
	for _, k := range slices.Sorted(maps.Keys(kvs)) {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kvs[k]})
	}
	for _, k := range dels {
		if _, both := kvs[k]; both {
			return usageErr("%s is both set and deleted", k)
		}
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	name := pos[0]
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		resps, err := adm.AlterTopicConfigs(ctx, alters, name)
		if err != nil {
			return c.brokerErr("alter configs of "+name, err)
		}
		r, err := resps.On(name, nil)
		if err != nil {
			return fmt.Errorf("alter configs of %s: the broker's answer does not mention it", name)
		}
		if r.Err != nil {
			return fmt.Errorf("alter configs of %s: %s", name, errText(r.Err, r.ErrMessage))
		}
		fmt.Fprintf(c.stdout, "Completed updating config for topic %s.\n", name)
		return nil
	})
}

// parseReplicaAssignment parses kafka-topics.sh's --replica-assignment:
// partitions separated by commas, each a colon-separated list of broker ids.
func parseReplicaAssignment(v string) ([][]int32, error) {
	var out [][]int32
	for i, part := range strings.Split(v, ",") {
		var reps []int32
		for _, b := range strings.Split(part, ":") {
			id, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
			if err != nil || id < 0 {
				return nil, usageErr("--replica-assignment: partition %d: %q is not a broker id", i, b)
			}
			reps = append(reps, int32(id))
		}
		out = append(out, reps)
	}
	return out, nil
}

// createAssigned sends CreateTopics with a manual replica assignment, which
// kadm has no call for.
func createAssigned(ctx context.Context, cl *kgo.Client, name string, asg [][]int32, cfg map[string]*string) (kadm.CreateTopicResponse, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for p, reps := range asg {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), reps
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range cfg {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, v
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kadm.CreateTopicResponse{}, err
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != name {
		return kadm.CreateTopicResponse{}, fmt.Errorf("the broker's answer does not mention %s", name)
	}
	t := resp.Topics[0]
	r := kadm.CreateTopicResponse{Topic: name, ID: t.TopicID, Err: kerr.ErrorForCode(t.ErrorCode)}
	if t.ErrorMessage != nil {
		r.ErrMessage = *t.ErrorMessage
	}
	return r, nil
}
