package main

// sluice broker config set|describe|delete: dynamic broker configs, as
// kafka-configs.sh --entity-type brokers does them (--entity-name ID or
// --entity-default; --alter --add-config / --delete-config; --describe
// [--all]), through IncrementalAlterConfigs and DescribeConfigs on BROKER
// resources. Which keys are dynamic is the broker's answer
// (INVALID_REQUEST "Cannot update these configs dynamically: ...").

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func brokerCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "config" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stderr, "usage: sluice broker config set|describe|delete [flags]")
			return 0
		}
		fmt.Fprintln(stderr, "usage: sluice broker config set|describe|delete [flags]")
		return 2
	}
	return runSubcommand("broker config", []subcommand{
		{"set", "(--broker ID | --entity-default) key=value...",
			"set dynamic broker configs of one broker or the cluster-wide default", brokerConfigSet},
		{"delete", "(--broker ID | --entity-default) key...",
			"delete dynamic broker configs (back to the default, or the static value)", brokerConfigDelete},
		{"describe", "(--broker ID | --entity-default) [--all]",
			"show the dynamic configs (--all: every config) with their sources and synonyms", brokerConfigDescribe},
	}, args[1:], stdout, stderr)
}

// brokerEntity registers --broker and --entity-default on c and returns
// what reads them after parse: the broker ids to address (nil: the
// cluster-wide default) and a description for messages.
func brokerEntity(c *adminCmd) func() ([]int32, string, error) {
	broker := c.flags.String("broker", "", "the broker `ID` whose own configs to change or show")
	c.flags.StringVar(broker, "entity-name", "", "alias of --broker (kafka-configs.sh)")
	def := c.flags.Bool("entity-default", false, "the cluster-wide default instead of one broker")
	return func() ([]int32, string, error) {
		switch {
		case *def && *broker != "":
			return nil, "", usageErr("give --broker or --entity-default, not both")
		case *def:
			return nil, "the cluster-wide default", nil
		case *broker == "":
			return nil, "", usageErr("give --broker ID or --entity-default")
		}
		id, err := strconv.ParseInt(*broker, 10, 32)
		if err != nil || id < 0 {
			return nil, "", usageErr("--broker %q: want a broker id", *broker)
		}
		return []int32{int32(id)}, "broker " + *broker, nil
	}
}

func brokerConfigSet(c *adminCmd) error {
	entity := brokerEntity(c)
	pos, err := c.parse(oneOrMore("key=value"))
	if err != nil {
		return err
	}
	ids, what, err := entity()
	if err != nil {
		return err
	}
	kvs, err := parseKVs("key=value", pos)
	if err != nil {
		return err
	}
	var alters []kadm.AlterConfig
	for _, k := range slices.Sorted(maps.Keys(kvs)) {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kvs[k]})
	}
	return alterBroker(c, ids, what, alters)
}

func brokerConfigDelete(c *adminCmd) error {
	entity := brokerEntity(c)
	pos, err := c.parse(oneOrMore("key"))
	if err != nil {
		return err
	}
	ids, what, err := entity()
	if err != nil {
		return err
	}
	var alters []kadm.AlterConfig
	for _, k := range pos {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return alterBroker(c, ids, what, alters)
}

// alterBroker sends alters to broker ids (nil: the cluster-wide default).
func alterBroker(c *adminCmd, ids []int32, what string, alters []kadm.AlterConfig) error {
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		resps, err := adm.AlterBrokerConfigs(ctx, alters, ids...)
		if err != nil {
			return c.brokerErr("alter configs of "+what, err)
		}
		if len(resps) != 1 {
			return fmt.Errorf("alter configs of %s: %d answers, want 1", what, len(resps))
		}
		if r := resps[0]; r.Err != nil {
			return fmt.Errorf("alter configs of %s: %s", what, errText(r.Err, r.ErrMessage))
		}
		if ids == nil {
			fmt.Fprintln(c.stdout, "Completed updating default config for brokers in the cluster.")
		} else {
			fmt.Fprintf(c.stdout, "Completed updating config for broker %d.\n", ids[0])
		}
		return nil
	})
}

func brokerConfigDescribe(c *adminCmd) error {
	entity := brokerEntity(c)
	all := c.flags.Bool("all", false, "every config of the broker, not only its dynamic ones")
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	ids, what, err := entity()
	if err != nil {
		return err
	}
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		rcs, err := adm.DescribeBrokerConfigs(ctx, ids...)
		if err != nil {
			return c.brokerErr("describe configs of "+what, err)
		}
		if len(rcs) != 1 {
			return fmt.Errorf("describe configs of %s: %d answers, want 1", what, len(rcs))
		}
		rc := rcs[0]
		if rc.Err != nil {
			return fmt.Errorf("describe configs of %s: %s", what, errText(rc.Err, rc.ErrMessage))
		}
		switch {
		case ids == nil:
			fmt.Fprintln(c.stdout, "Default configs for brokers in the cluster are:")
		case *all:
			fmt.Fprintf(c.stdout, "All configs for broker %d are:\n", ids[0])
		default:
			fmt.Fprintf(c.stdout, "Dynamic configs for broker %d are:\n", ids[0])
		}
		for _, cfg := range rc.Configs {
			if ids != nil && !*all && cfg.Source != kmsg.ConfigSourceDynamicBrokerConfig && cfg.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
				continue
			}
			fmt.Fprintf(c.stdout, "  %s\n", describeLine(cfg))
		}
		return nil
	})
}

// describeLine renders a config as kafka-configs.sh --describe does:
// "key=value sensitive=false synonyms={SOURCE:key=value, ...}".
func describeLine(cfg kadm.Config) string {
	v := cfg.MaybeValue()
	if cfg.Sensitive {
		v = "null"
	}
	syns := make([]string, 0, len(cfg.Synonyms))
	for _, s := range cfg.Synonyms {
		sv := "null"
		if s.Value != nil {
			sv = *s.Value
		}
		syns = append(syns, s.Source.String()+":"+s.Key+"="+sv)
	}
	return fmt.Sprintf("%s=%s sensitive=%t synonyms={%s}", cfg.Key, v, cfg.Sensitive, strings.Join(syns, ", "))
}
