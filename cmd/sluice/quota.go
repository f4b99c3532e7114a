package main

// `sluice quota`, after kafka-configs.sh --entity-type users|clients|ips:
// it sets, describes and removes client quotas (producer_byte_rate,
// consumer_byte_rate, request_percentage, controller_mutation_rate) and
// ip quotas (connection_creation_rate, KIP-612) through AlterClientQuotas
// and DescribeClientQuotas (KIP-546).
//
//	sluice quota set --user alice --add-config 'producer_byte_rate=5242880,consumer_byte_rate=10485760'
//	sluice quota set --user-default --client-id app --add-config request_percentage=50
//	sluice quota describe [--user U | --user-default] [--client-id C | --client-id-default]
//	sluice quota remove --client-id app [--delete-config producer_byte_rate]
//	sluice quota set --ip 10.0.0.7 --add-config connection_creation_rate=10
//	sluice quota set --entity-type ips --entity-default --add-config connection_creation_rate=100
//
// kafka-configs.sh's --entity-type users|clients|ips with --entity-name N
// or --entity-default are accepted too.

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quotaCmd(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("quota", []subcommand{
		{"set", "--user U|--user-default and/or --client-id C|--client-id-default, or --ip A|--ip-default; --add-config k=v[,k=v]",
			"set quotas of a user, a client id, a (user, client id) pair, an ip address or a default", quotaSet},
		{"describe", "[--user U|--user-default] [--client-id C|--client-id-default] | [--ip A|--ip-default]",
			"list quotas: of one entity, or every entity (no flags)", quotaDescribe},
		{"remove", "--user U|--user-default and/or --client-id C|--client-id-default, or --ip A|--ip-default; [--delete-config k[,k]]",
			"remove quotas of an entity (default: all of them)", quotaRemove},
	}, args, stdout, stderr)
}

// quotaKeys are the quota config keys, Kafka's names; ipQuotaKeys those of
// ip entities.
var (
	quotaKeys   = []string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}
	ipQuotaKeys = []string{"connection_creation_rate"}
)

// entityFlags are the flags that name a quota entity.
type entityFlags struct {
	user, clientID, ip                      string
	userDefault, clientIDDefault, ipDefault bool
	entityType, entityName                  string
	entityDefault                           bool
}

func addEntityFlags(c *adminCmd) *entityFlags {
	e := &entityFlags{}
	c.flags.StringVar(&e.user, "user", "", "the user (principal name without User:)")
	c.flags.BoolVar(&e.userDefault, "user-default", false, "the default user entity (<default>)")
	c.flags.StringVar(&e.clientID, "client-id", "", "the client id")
	c.flags.BoolVar(&e.clientIDDefault, "client-id-default", false, "the default client id entity (<default>)")
	c.flags.StringVar(&e.ip, "ip", "", "an ip entity: a client's IP address (connection_creation_rate)")
	c.flags.BoolVar(&e.ipDefault, "ip-default", false, "the default ip entity (<default>)")
	c.flags.StringVar(&e.entityType, "entity-type", "", "kafka-configs.sh style: users, clients or ips (with --entity-name or --entity-default)")
	c.flags.StringVar(&e.entityName, "entity-name", "", "kafka-configs.sh style: the entity's name")
	c.flags.BoolVar(&e.entityDefault, "entity-default", false, "kafka-configs.sh style: the default entity")
	return e
}

// entity returns the entity named; required says one must be.
func (e *entityFlags) entity(required bool) (kadm.ClientQuotaEntity, error) {
	if e.entityType != "" {
		if e.entityName == "" && !e.entityDefault || e.entityName != "" && e.entityDefault {
			return nil, usageErr("--entity-type wants exactly one of --entity-name or --entity-default")
		}
		switch e.entityType {
		case "users":
			if e.user != "" || e.userDefault {
				return nil, usageErr("--entity-type users with --user")
			}
			e.user, e.userDefault = e.entityName, e.entityDefault
		case "clients":
			if e.clientID != "" || e.clientIDDefault {
				return nil, usageErr("--entity-type clients with --client-id")
			}
			e.clientID, e.clientIDDefault = e.entityName, e.entityDefault
		case "ips":
			if e.ip != "" || e.ipDefault {
				return nil, usageErr("--entity-type ips with --ip")
			}
			e.ip, e.ipDefault = e.entityName, e.entityDefault
		default:
			return nil, usageErr("--entity-type %q: want users, clients or ips", e.entityType)
		}
	} else if e.entityName != "" || e.entityDefault {
		return nil, usageErr("--entity-name and --entity-default need --entity-type")
	}
	if e.user != "" && e.userDefault || e.clientID != "" && e.clientIDDefault || e.ip != "" && e.ipDefault {
		return nil, usageErr("give a name or the default, not both")
	}
	var out kadm.ClientQuotaEntity
	if e.ip != "" || e.ipDefault {
		if e.user != "" || e.userDefault || e.clientID != "" || e.clientIDDefault {
			return nil, usageErr("an ip entity does not combine with a user or client id")
		}
		c := kadm.ClientQuotaEntityComponent{Type: "ip"}
		if e.ip != "" {
			c.Name = &e.ip
		}
		return append(out, c), nil
	}
	switch {
	case e.user != "":
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "user", Name: &e.user})
	case e.userDefault:
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "user"})
	}
	switch {
	case e.clientID != "":
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "client-id", Name: &e.clientID})
	case e.clientIDDefault:
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "client-id"})
	}
	if required && len(out) == 0 {
		return nil, usageErr("name an entity: --user, --user-default, --client-id, --client-id-default, --ip or --ip-default")
	}
	return out, nil
}

func entityString(e kadm.ClientQuotaEntity) string {
	var parts []string
	for _, c := range e {
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		parts = append(parts, c.Type+"="+name)
	}
	return strings.Join(parts, ",")
}

func alterQuotas(c *adminCmd, e kadm.ClientQuotaEntity, ops []kadm.AlterClientQuotaOp, done string) error {
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}})
		if err != nil {
			return c.brokerErr("alter client quotas", err)
		}
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("%s: %s", entityString(e), errText(r.Err, r.ErrMessage))
			}
		}
		fmt.Fprintf(c.stdout, "%s quotas for %s.\n", done, entityString(e))
		return nil
	})
}

func quotaSet(c *adminCmd) error {
	ef := addEntityFlags(c)
	add := c.flags.String("add-config", "", "`k=v[,k=v]`: "+strings.Join(quotaKeys, ", ")+"; for ips "+strings.Join(ipQuotaKeys, ", "))
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	e, err := ef.entity(true)
	if err != nil {
		return err
	}
	if *add == "" {
		return usageErr("--add-config is required")
	}
	var ops []kadm.AlterClientQuotaOp
	for _, kv := range strings.Split(*add, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return usageErr("--add-config %q: want key=value", kv)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return usageErr("--add-config %s: %q is not a number", k, v)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: strings.TrimSpace(k), Value: x})
	}
	return alterQuotas(c, e, ops, "Set")
}

func quotaRemove(c *adminCmd) error {
	ef := addEntityFlags(c)
	del := c.flags.String("delete-config", "", "`k[,k]` to remove (default: every quota key)")
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	e, err := ef.entity(true)
	if err != nil {
		return err
	}
	keys := quotaKeys
	if len(e) == 1 && e[0].Type == "ip" {
		keys = ipQuotaKeys
	}
	if *del != "" {
		keys = strings.Split(*del, ",")
	}
	var ops []kadm.AlterClientQuotaOp
	for _, k := range keys {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: strings.TrimSpace(k), Remove: true})
	}
	return alterQuotas(c, e, ops, "Removed")
}

func quotaDescribe(c *adminCmd) error {
	ef := addEntityFlags(c)
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	e, err := ef.entity(false)
	if err != nil {
		return err
	}
	var comps []kadm.DescribeClientQuotaComponent
	for _, ec := range e {
		dc := kadm.DescribeClientQuotaComponent{Type: ec.Type, MatchName: ec.Name, MatchType: kmsg.QuotasMatchTypeExact}
		if ec.Name == nil {
			dc.MatchType = kmsg.QuotasMatchTypeDefault
		}
		comps = append(comps, dc)
	}
	return c.connect(func(adm *kadm.Client, ctx context.Context) error {
		// One entity named: only it (strict), as kafka-configs.sh
		// --describe --entity-name shows.
		got, err := adm.DescribeClientQuotas(ctx, len(comps) > 0, comps)
		if err != nil {
			return c.brokerErr("describe client quotas", err)
		}
		rows := make([][2]string, 0, len(got))
		for _, q := range got {
			var vs []string
			for _, v := range q.Values {
				vs = append(vs, v.Key+"="+strconv.FormatFloat(v.Value, 'f', -1, 64))
			}
			sort.Strings(vs)
			rows = append(rows, [2]string{entityString(q.Entity), strings.Join(vs, ",")})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
		t := newTable(c.stdout, "ENTITY", "QUOTAS")
		for _, r := range rows {
			t.row(r[0], r[1])
		}
		t.flush()
		return nil
	})
}
