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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func topicCmd(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("topic", []subcommand{
		{"create", "create a topic", topicCreate},
		{"list", "list topics with their partition count and replication factor", topicList},
		{"describe", "show partitions, leaders, replicas, ISR, topic id and overridden configs", topicDescribe},
		{"delete", "delete topics", topicDelete},
		{"alter-config", "set or delete topic config overrides (IncrementalAlterConfigs)", topicAlterConfig},
	}, args, stdout, stderr)
}

func topicCreate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic create", "NAME [--partitions N] [--replication-factor N] [--config k=v ...]", stderr)
	var af adminFlags
	af.register(fs)
	partitions := fs.Int("partitions", -1, "number of partitions (-1: the broker's num.partitions)")
	rf := fs.Int("replication-factor", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	var configs stringList
	fs.Var(&configs, "config", "topic config `key=value` (repeatable)")
	ifNotExists := fs.Bool("if-not-exists", false, "succeed if the topic already exists")
	assignment := fs.String("replica-assignment", "", "manual replicas, as kafka-topics.sh: `b:b,b:b,...` (partition 0's brokers first, preferred leader first in each)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one topic name, got %d", len(pos))
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
	adm, ctx, cancel, err := af.connect()
	if err != nil {
		return err
	}
	defer adm.Close()
	defer cancel()
	var r kadm.CreateTopicResponse
	if asg != nil {
		r, err = createAssigned(ctx, af.client(), name, asg, cfg)
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
		return af.brokerErr("create topic "+name, err)
	}
	if r.Err != nil {
		if *ifNotExists && errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return nil
		}
		return fmt.Errorf("create topic %s: %s", name, errText(r.Err, r.ErrMessage))
	}
	fmt.Fprintf(stdout, "Created topic %s.\n", name)
	return nil
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

func topicList(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic list", "[--internal]", stderr)
	var af adminFlags
	af.register(fs)
	internal := fs.Bool("internal", false, "include internal topics")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	adm, ctx, cancel, err := af.connect()
	if err != nil {
		return err
	}
	defer adm.Close()
	defer cancel()
	var tds kadm.TopicDetails
	if *internal {
		tds, err = adm.ListTopicsWithInternal(ctx)
	} else {
		tds, err = adm.ListTopics(ctx)
	}
	if err != nil {
		return af.brokerErr("list topics", err)
	}
	t := newTable(stdout, "TOPIC", "PARTITIONS", "REPLICATION-FACTOR")
	for _, td := range tds.Sorted() {
		if td.Err != nil {
			t.row(td.Topic, "-", "-")
			continue
		}
		t.row(td.Topic, strconv.Itoa(len(td.Partitions)), strconv.Itoa(td.Partitions.NumReplicas()))
	}
	t.flush()
	return nil
}

func topicDescribe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic describe", "[NAME...]", stderr)
	var af adminFlags
	af.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	adm, ctx, cancel, err := af.connect()
	if err != nil {
		return err
	}
	defer adm.Close()
	defer cancel()
	tds, err := adm.ListTopics(ctx, pos...)
	if err != nil {
		return af.brokerErr("describe topics", err)
	}
	var names, failed []string
	for _, td := range tds.Sorted() {
		if td.Err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", td.Topic, td.Err))
			continue
		}
		names = append(names, td.Topic)
	}
	overrides := map[string][]string{}
	if len(names) > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, names...)
		if err != nil {
			return af.brokerErr("describe topic configs", err)
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				failed = append(failed, fmt.Sprintf("%s: configs: %s", rc.Name, errText(rc.Err, rc.ErrMessage)))
				continue
			}
			for _, c := range rc.Configs {
				if c.Source != kmsg.ConfigSourceDynamicTopicConfig {
					continue
				}
				v := "<sensitive>"
				if !c.Sensitive {
					v = c.MaybeValue()
				}
				overrides[rc.Name] = append(overrides[rc.Name], c.Key+"="+v)
			}
			slices.Sort(overrides[rc.Name])
		}
	}
	for i, name := range names {
		td := tds[name]
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "Topic: %s  TopicId: %s  PartitionCount: %d  ReplicationFactor: %d  Configs: %s\n",
			td.Topic, topicIDString(td.ID), len(td.Partitions), td.Partitions.NumReplicas(), strings.Join(overrides[name], ","))
		// OFFLINE only when some partition has offline replicas or an
		// error, so the healthy case stays narrow.
		showOffline := false
		for _, p := range td.Partitions {
			showOffline = showOffline || len(p.OfflineReplicas) > 0 || p.Err != nil
		}
		header := []string{"  PARTITION", "LEADER", "REPLICAS", "ISR"}
		if showOffline {
			header = append(header, "OFFLINE")
		}
		t := newTable(stdout, header...)
		for _, p := range td.Partitions.Sorted() {
			leader := strconv.Itoa(int(p.Leader))
			if p.Leader < 0 {
				leader = "none"
			}
			row := []string{"  " + strconv.Itoa(int(p.Partition)), leader, int32s(p.Replicas), int32s(p.ISR)}
			if showOffline {
				offline := orDash(int32s(p.OfflineReplicas))
				if p.Err != nil {
					offline += " (" + p.Err.Error() + ")"
				}
				row = append(row, offline)
			}
			t.row(row...)
		}
		t.flush()
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}

func topicDelete(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic delete", "NAME...", stderr)
	var af adminFlags
	af.register(fs)
	ifExists := fs.Bool("if-exists", false, "succeed for topics that do not exist")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("name at least one topic")
	}
	adm, ctx, cancel, err := af.connect()
	if err != nil {
		return err
	}
	defer adm.Close()
	defer cancel()
	resps, err := adm.DeleteTopics(ctx, pos...)
	if err != nil {
		return af.brokerErr("delete topics", err)
	}
	var failed []string
	for _, name := range pos {
		r, ok := resps[name]
		switch {
		case !ok:
			failed = append(failed, name+": the broker's answer does not mention it")
		case r.Err == nil:
			fmt.Fprintf(stdout, "Deleted topic %s.\n", name)
		case *ifExists && errors.Is(r.Err, kerr.UnknownTopicOrPartition):
		default:
			failed = append(failed, name+": "+errText(r.Err, r.ErrMessage))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}

func topicAlterConfig(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic alter-config", "NAME [--set k=v ...] [--delete k ...]", stderr)
	var af adminFlags
	af.register(fs)
	var sets, dels stringList
	fs.Var(&sets, "set", "set topic config `key=value` (repeatable)")
	fs.Var(&dels, "delete", "remove the override of `key`, back to the broker's value (repeatable)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one topic name, got %d", len(pos))
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
	adm, ctx, cancel, err := af.connect()
	if err != nil {
		return err
	}
	defer adm.Close()
	defer cancel()
	resps, err := adm.AlterTopicConfigs(ctx, alters, name)
	if err != nil {
		return af.brokerErr("alter configs of "+name, err)
	}
	r, err := resps.On(name, nil)
	if err != nil {
		return fmt.Errorf("alter configs of %s: the broker's answer does not mention it", name)
	}
	if r.Err != nil {
		return fmt.Errorf("alter configs of %s: %s", name, errText(r.Err, r.ErrMessage))
	}
	fmt.Fprintf(stdout, "Completed updating config for topic %s.\n", name)
	return nil
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
