package server_test

// Per-group configs (KIP-848 GroupConfig) through real clients: a GROUP
// resource's consumer.heartbeat.interval.ms reaches the members'
// heartbeats, its consumer.session.timeout.ms removes a silent member,
// DescribeConfigs shows both with their sources, bad values are refused
// with Kafka's errors, and the configs survive a restart.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

const groupResource = kmsg.ConfigResourceType(32)

// groupCfgBroker heartbeats every 200 ms with the broker's 45 s session
// timeout, and lets a group go down to 100 ms / 1 s.
func groupCfgBroker(c *config.Config) {
	c.GroupConsumerMinHeartbeatInterval = 100 * time.Millisecond
	c.GroupConsumerHeartbeatInterval = 200 * time.Millisecond
	c.GroupConsumerMinSessionTimeout = time.Second
	c.GroupConsumerSessionTimeout = 45 * time.Second
}

type groupOp struct {
	op    kmsg.IncrementalAlterConfigOp
	key   string
	value *string
}

// alterGroup sends one IncrementalAlterConfigs on group's resource and
// returns its code and message.
func alterGroup(t *testing.T, ctx context.Context, cl *kgo.Client, group string, validateOnly bool, ops ...groupOp) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = groupResource, group
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = o.key, o.op, o.value
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("incremental alter configs: %v", err)
	}
	r := resp.Resources[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return r.ErrorCode, msg
}

// describeGroup returns group's configs by name, with synonyms.
func describeGroup(t *testing.T, ctx context.Context, cl *kgo.Client, group string) (int16, map[string]kmsg.DescribeConfigsResponseResourceConfig) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = groupResource, group
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return resp.Resources[0].ErrorCode, out
}

// checkGroupConfig fails unless group describes key with value and
// source, and its first synonym has that source too.
func checkGroupConfig(t *testing.T, ctx context.Context, cl *kgo.Client, group, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	code, cfgs := describeGroup(t, ctx, cl, group)
	c, ok := cfgs[key]
	if code != 0 || !ok || c.Value == nil {
		t.Fatalf("describe %s: %s, %s present %v", group, errName(code), key, ok)
	}
	if *c.Value != value || c.Source != source || len(c.ConfigSynonyms) == 0 || c.ConfigSynonyms[0].Source != source {
		t.Fatalf("%s: %s source %d synonyms %+v, want %s source %d", key, *c.Value, c.Source, c.ConfigSynonyms, value, source)
	}
}

// TestGroupConfigs: IncrementalAlterConfigs on a GROUP resource sets the
// heartbeat interval its members are told and the session timeout that
// removes a silent one (1.5 s where the broker's is 45 s); DescribeConfigs
// shows them (DYNAMIC_GROUP_CONFIG) and the broker's for another group;
// values outside the broker's bounds, unknown keys and list operations are
// refused with Kafka's errors; validate_only stores nothing; AlterConfigs
// replaces the set; and the configs survive a restart.
func TestGroupConfigs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, "segment", groupCfgBroker)
	ctx := testCtx(t, 90*time.Second)
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "gc848", 4, nil)
	const group = "gcfg848"
	s := func(v string) *string { return &v }

	// The broker's values before any group config.
	checkGroupConfig(t, ctx, cl, group, "consumer.heartbeat.interval.ms", "200", kmsg.ConfigSource(4))
	if code, _ := describeGroup(t, ctx, cl, ""); code != kerr.InvalidRequest.Code {
		t.Fatalf("describe the empty group name: %s, want INVALID_REQUEST", errName(code))
	}

	for _, tc := range []struct {
		name string
		ops  []groupOp
		code int16
		msg  string
	}{
		{"heartbeat below min", []groupOp{{0, "consumer.heartbeat.interval.ms", s("50")}}, kerr.InvalidConfig.Code,
			"consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{"heartbeat above max", []groupOp{{0, "consumer.heartbeat.interval.ms", s("15001")}}, kerr.InvalidConfig.Code,
			"consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{"session below min", []groupOp{{0, "consumer.session.timeout.ms", s("999")}}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{"session above max", []groupOp{{0, "consumer.session.timeout.ms", s("60001")}}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{"session not above heartbeat", []groupOp{{0, "consumer.session.timeout.ms", s("1000")}, {0, "consumer.heartbeat.interval.ms", s("1000")}},
			kerr.InvalidConfig.Code, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{"unknown key", []groupOp{{0, "share.session.timeout.ms.typo", s("1")}}, kerr.InvalidConfig.Code, "Unknown group config name: share.session.timeout.ms.typo"},
		{"not a number", []groupOp{{0, "consumer.session.timeout.ms", s("soon")}}, kerr.InvalidConfig.Code, "Invalid value soon for configuration consumer.session.timeout.ms"},
		{"append", []groupOp{{2, "consumer.session.timeout.ms", s("1")}}, kerr.InvalidConfig.Code, "because its type is not LIST"},
		{"null set", []groupOp{{0, "consumer.session.timeout.ms", nil}}, kerr.InvalidRequest.Code, "Null value not supported"},
		{"twice", []groupOp{{0, "consumer.session.timeout.ms", s("2000")}, {1, "consumer.session.timeout.ms", nil}}, kerr.InvalidRequest.Code, "duplicate config keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := alterGroup(t, ctx, cl, group, false, tc.ops...)
			if code != tc.code || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%s %q, want %s %q", errName(code), msg, errName(tc.code), tc.msg)
			}
		})
	}
	if code, msg := alterGroup(t, ctx, cl, group, true, groupOp{0, "consumer.heartbeat.interval.ms", s("300")}); code != 0 {
		t.Fatalf("validate only: %s %s", errName(code), msg)
	}
	checkGroupConfig(t, ctx, cl, group, "consumer.heartbeat.interval.ms", "200", kmsg.ConfigSource(4))

	if code, msg := alterGroup(t, ctx, cl, group, false,
		groupOp{0, "consumer.heartbeat.interval.ms", s("700")}, groupOp{0, "consumer.session.timeout.ms", s("1500")}); code != 0 {
		t.Fatalf("alter: %s %s", errName(code), msg)
	}
	checkGroupConfig(t, ctx, cl, group, "consumer.heartbeat.interval.ms", "700", kmsg.ConfigSource(8))
	checkGroupConfig(t, ctx, cl, group, "consumer.session.timeout.ms", "1500", kmsg.ConfigSource(8))
	checkGroupConfig(t, ctx, cl, "other", "consumer.session.timeout.ms", "45000", kmsg.ConfigSource(5))

	// A member is told the group's interval; a silent one is removed after
	// the group's session timeout, long before the broker's 45 s.
	a := heartbeat848(t, ctx, cl, group, hb848{member: "a", topics: []string{"gc848"}})
	if a.ErrorCode != 0 || a.HeartbeatIntervalMillis != 700 {
		t.Fatalf("join a: %s, interval %d ms, want 700", errName(a.ErrorCode), a.HeartbeatIntervalMillis)
	}
	if r := heartbeat848(t, ctx, cl, "other", hb848{member: "o", topics: []string{"gc848"}}); r.HeartbeatIntervalMillis != 200 {
		t.Fatalf("another group's interval %d ms, want the broker's 200", r.HeartbeatIntervalMillis)
	}
	if silent := heartbeat848(t, ctx, cl, group, hb848{member: "silent", topics: []string{"gc848"}}); silent.ErrorCode != 0 {
		t.Fatalf("join silent: %s", errName(silent.ErrorCode))
	}
	epoch, owned := a.MemberEpoch, ownedFrom(a.Assignment)
	waitUntil(t, 30*time.Second, func() bool {
		r := heartbeat848(t, ctx, cl, group, hb848{member: "a", epoch: epoch, owned: owned})
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat a: %s", errName(r.ErrorCode))
		}
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			owned = ownedFrom(r.Assignment)
		}
		d, err := describe848(ctx, cl, group)
		time.Sleep(100 * time.Millisecond)
		return err == nil && len(d.Members) == 1
	}, func() string { return "the silent member is still in the group" })

	// DELETE returns to the broker's value; AlterConfigs replaces the set.
	if code, msg := alterGroup(t, ctx, cl, group, false, groupOp{1, "consumer.session.timeout.ms", nil}); code != 0 {
		t.Fatalf("delete: %s %s", errName(code), msg)
	}
	checkGroupConfig(t, ctx, cl, group, "consumer.session.timeout.ms", "45000", kmsg.ConfigSource(5))
	legacy := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = groupResource, group
	lc := kmsg.NewAlterConfigsRequestResourceConfig()
	lc.Name, lc.Value = "consumer.session.timeout.ms", s("2000")
	lr.Configs = append(lr.Configs, lc)
	legacy.Resources = append(legacy.Resources, lr)
	if resp, err := legacy.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter configs: %v %v", err, resp)
	}
	checkGroupConfig(t, ctx, cl, group, "consumer.session.timeout.ms", "2000", kmsg.ConfigSource(8))
	checkGroupConfig(t, ctx, cl, group, "consumer.heartbeat.interval.ms", "200", kmsg.ConfigSource(4))
	if code, msg := alterGroup(t, ctx, cl, group, false, groupOp{0, "consumer.heartbeat.interval.ms", s("900")}); code != 0 {
		t.Fatalf("alter: %s %s", errName(code), msg)
	}

	// A restart keeps them.
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := brokertest.StartIn(t, dir, "segment", groupCfgBroker)
	cl2 := newClient(t, b2.Addr())
	checkGroupConfig(t, ctx, cl2, group, "consumer.heartbeat.interval.ms", "900", kmsg.ConfigSource(8))
	checkGroupConfig(t, ctx, cl2, group, "consumer.session.timeout.ms", "2000", kmsg.ConfigSource(8))
	var r *kmsg.ConsumerGroupHeartbeatResponse
	waitUntil(t, 20*time.Second, func() bool {
		r = heartbeat848(t, ctx, cl2, group, hb848{member: "c", topics: []string{"gc848"}})
		return r.ErrorCode != kerr.CoordinatorLoadInProgress.Code && r.ErrorCode != kerr.NotCoordinator.Code
	}, func() string { return errName(r.ErrorCode) })
	if r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 900 {
		t.Fatalf("join after restart: %s, interval %d ms, want 900", errName(r.ErrorCode), r.HeartbeatIntervalMillis)
	}
}

// TestGroupConfigsCluster: a group config altered through a broker that
// is not the group's coordinator reaches the coordinator (which had read
// and cached the group's configs on a member's join) through the
// /config/changes notification: the member's next heartbeats are told the
// new interval, and both brokers describe it.
func TestGroupConfigsCluster(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 2, "memory", zk.Addr(), groupCfgBroker)
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.Addr())
	}
	ctx := testCtx(t, 90*time.Second)
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, "gcc848"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	const group = "gcfgc848"
	var a *kmsg.ConsumerGroupHeartbeatResponse
	waitUntil(t, 60*time.Second, func() bool {
		var err error
		a, err = tryHeartbeat848(ctx, cl, group, hb848{member: "a", topics: []string{"gcc848"}})
		return err == nil && a.ErrorCode == 0
	}, func() string { return "member a never joined" })
	if a.HeartbeatIntervalMillis != 200 {
		t.Fatalf("interval %d ms before any group config, want 200", a.HeartbeatIntervalMillis)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = group
	fcr, err := fc.RequestWith(ctx, cl)
	if err != nil || fcr.ErrorCode != 0 {
		t.Fatalf("find coordinator: %v %v", err, fcr)
	}
	other := int32(1)
	if fcr.NodeID == 1 {
		other = 2
	}
	v, v2 := "700", "50000"
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = groupResource, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "consumer.heartbeat.interval.ms", &v
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := cl.Broker(int(other)).Request(ctx, req)
	if err != nil || resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode != 0 {
		t.Fatalf("alter through broker %d: %v %+v", other, err, resp)
	}

	epoch, owned := a.MemberEpoch, ownedFrom(a.Assignment)
	var got int32
	waitUntil(t, 30*time.Second, func() bool {
		r := heartbeat848(t, ctx, cl, group, hb848{member: "a", epoch: epoch, owned: owned})
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat a: %s", errName(r.ErrorCode))
		}
		epoch, got = r.MemberEpoch, r.HeartbeatIntervalMillis
		if r.Assignment != nil {
			owned = ownedFrom(r.Assignment)
		}
		return got == 700
	}, func() string { return fmt.Sprintf("coordinator %d still tells %d ms", fcr.NodeID, got) })
	for _, id := range []int32{1, 2} {
		d := kmsg.NewPtrDescribeConfigsRequest()
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName = groupResource, group
		dr.ConfigNames = []string{"consumer.heartbeat.interval.ms"}
		d.Resources = append(d.Resources, dr)
		resp, err := cl.Broker(int(id)).Request(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		res := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
		if res.ErrorCode != 0 || len(res.Configs) != 1 || *res.Configs[0].Value != "700" || res.Configs[0].Source != 8 {
			t.Fatalf("broker %d describes %+v", id, res)
		}
	}
	// Group ids ZooKeeper would not take as a path component as they are.
	for _, g := range []string{".", "..", "a/b", "ü *+%"} {
		if code, msg := alterGroup(t, ctx, cl, g, false, groupOp{0, "consumer.session.timeout.ms", &v2}); code != 0 {
			t.Fatalf("alter group %q: %s %s", g, errName(code), msg)
		}
		checkGroupConfig(t, ctx, cl, g, "consumer.session.timeout.ms", v2, kmsg.ConfigSource(8))
	}
	checkGroupConfig(t, ctx, cl, "a", "consumer.session.timeout.ms", "45000", kmsg.ConfigSource(5))
}
