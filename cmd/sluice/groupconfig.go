package main

// sluice group config set|describe|delete --group G: per-group configs
// (KIP-848 GroupConfig: consumer.session.timeout.ms,
// consumer.heartbeat.interval.ms), as kafka-configs.sh --entity-type
// groups does them, through IncrementalAlterConfigs and DescribeConfigs on
// GROUP resources. Which keys and values are allowed is the broker's
// answer (INVALID_CONFIG with Kafka's message).

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const groupConfigResource = kmsg.ConfigResourceType(32)

func groupConfigCmd(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("group config", []subcommand{
		{"set", "--group G key=value...",
			"set configs of one consumer group (consumer.session.timeout.ms, consumer.heartbeat.interval.ms)", groupConfigSet},
		{"delete", "--group G key...",
			"delete configs of one consumer group (back to the broker's)", groupConfigDelete},
		{"describe", "--group G [--all]",
			"show the group's configs (--all: with the broker's values) with their sources and synonyms", groupConfigDescribe},
	}, args, stdout, stderr)
}

// groupFlag registers --group (alias --entity-name) on c and returns what
// reads it after parse.
func groupFlag(c *adminCmd) func() (string, error) {
	g := c.flags.String("group", "", "the consumer `GROUP` whose configs to change or show")
	c.flags.StringVar(g, "entity-name", "", "alias of --group (kafka-configs.sh)")
	return func() (string, error) {
		if *g == "" {
			return "", usageErr("give --group GROUP")
		}
		return *g, nil
	}
}

func groupConfigSet(c *adminCmd) error {
	group := groupFlag(c)
	pos, err := c.parse(oneOrMore("key=value"))
	if err != nil {
		return err
	}
	g, err := group()
	if err != nil {
		return err
	}
	kvs, err := parseKVs("key=value", pos)
	if err != nil {
		return err
	}
	var ops []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for _, k := range slices.Sorted(maps.Keys(kvs)) {
		op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		op.Name, op.Op, op.Value = k, kmsg.IncrementalAlterConfigOpSet, kvs[k]
		ops = append(ops, op)
	}
	return alterGroupConfig(c, g, ops)
}

func groupConfigDelete(c *adminCmd) error {
	group := groupFlag(c)
	pos, err := c.parse(oneOrMore("key"))
	if err != nil {
		return err
	}
	g, err := group()
	if err != nil {
		return err
	}
	var ops []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for _, k := range pos {
		op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		op.Name, op.Op = k, kmsg.IncrementalAlterConfigOpDelete
		ops = append(ops, op)
	}
	return alterGroupConfig(c, g, ops)
}

func alterGroupConfig(c *adminCmd, group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	return c.connect(func(_ *kadm.Client, ctx context.Context) error {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.Configs = groupConfigResource, group, ops
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			return c.brokerErr("alter configs of group "+group, err)
		}
		if len(resp.Resources) != 1 {
			return fmt.Errorf("alter configs of group %s: %d answers, want 1", group, len(resp.Resources))
		}
		r := resp.Resources[0]
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("alter configs of group %s: %s", group, errText(err, deref(r.ErrorMessage)))
		}
		fmt.Fprintf(c.stdout, "Completed updating config for group %s.\n", group)
		return nil
	})
}

func groupConfigDescribe(c *adminCmd) error {
	group := groupFlag(c)
	all := c.flags.Bool("all", false, "every group config, with the broker's values for those the group does not set")
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	g, err := group()
	if err != nil {
		return err
	}
	return c.connect(func(_ *kadm.Client, ctx context.Context) error {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms = true
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = groupConfigResource, g
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			return c.brokerErr("describe configs of group "+g, err)
		}
		if len(resp.Resources) != 1 {
			return fmt.Errorf("describe configs of group %s: %d answers, want 1", g, len(resp.Resources))
		}
		r := resp.Resources[0]
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("describe configs of group %s: %s", g, errText(err, deref(r.ErrorMessage)))
		}
		if *all {
			fmt.Fprintf(c.stdout, "All configs for group %s are:\n", g)
		} else {
			fmt.Fprintf(c.stdout, "Dynamic configs for group %s are:\n", g)
		}
		for _, rc := range r.Configs {
			if !*all && rc.Source != kmsg.ConfigSourceGroupConfig {
				continue
			}
			cfg := kadm.Config{Key: rc.Name, Value: rc.Value, Sensitive: rc.IsSensitive, Source: rc.Source}
			for _, s := range rc.ConfigSynonyms {
				cfg.Synonyms = append(cfg.Synonyms, kadm.ConfigSynonym{Key: s.Name, Value: s.Value, Source: s.Source})
			}
			fmt.Fprintf(c.stdout, "  %s\n", describeLine(cfg))
		}
		return nil
	})
}
