package server_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

func quotaEntity(kv ...*string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i+1 < len(kv); i += 2 {
		e = append(e, kadm.ClientQuotaEntityComponent{Type: *kv[i], Name: kv[i+1]})
	}
	return e
}

func sp(s string) *string { return &s }

// TestClientQuotasAdmin drives AlterClientQuotas and DescribeClientQuotas
// through kadm as kafka-configs.sh would: users, client ids, pairs and
// defaults; Kafka's match types and strict; validate_only; removal; and
// the quotas surviving a restart (single node: the metastore).
func TestClientQuotasAdmin(t *testing.T) {
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, "memory")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	alter := func(validateOnly bool, e kadm.ClientQuotaEntity, ops ...kadm.AlterClientQuotaOp) {
		t.Helper()
		do := adm.AlterClientQuotas
		if validateOnly {
			do = adm.ValidateAlterClientQuotas
		}
		res, err := do(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}})
		if err != nil {
			t.Fatalf("alter %v: %v", e, err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("alter %v: %v %s", e, r.Err, r.ErrMessage)
			}
		}
	}
	user, client := sp("user"), sp("client-id")
	set := func(k string, v float64) kadm.AlterClientQuotaOp { return kadm.AlterClientQuotaOp{Key: k, Value: v} }
	alter(false, quotaEntity(user, sp("alice")), set("producer_byte_rate", 5<<20), set("request_percentage", 200))
	alter(false, quotaEntity(user, nil), set("consumer_byte_rate", 1<<20))
	alter(false, quotaEntity(client, sp("app")), set("controller_mutation_rate", 10))
	alter(false, quotaEntity(user, sp("alice"), client, nil), set("producer_byte_rate", 1024))
	alter(false, quotaEntity(client, nil), set("producer_byte_rate", 2048))

	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) map[string]map[string]float64 {
		t.Helper()
		got, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatalf("describe %v: %v", comps, err)
		}
		out := map[string]map[string]float64{}
		for _, q := range got {
			k := ""
			for _, c := range q.Entity {
				name := "<default>"
				if c.Name != nil {
					name = *c.Name
				}
				k += c.Type + "=" + name + ";"
			}
			vs := map[string]float64{}
			for _, v := range q.Values {
				vs[v.Key] = v.Value
			}
			out[k] = vs
		}
		return out
	}
	exact := func(typ, name string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchName: &name, MatchType: kmsg.QuotasMatchTypeExact}
	}
	def := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeDefault}
	}
	anyOf := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeAny}
	}
	check := func(name string, got map[string]map[string]float64, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: got %v, want keys %v", name, got, want)
			return
		}
		for _, w := range want {
			if _, ok := got[w]; !ok {
				t.Errorf("%s: got %v, want keys %v", name, got, want)
			}
		}
	}
	all := describe(false)
	check("everything", all, "user=alice;", "user=<default>;", "client-id=app;", "user=alice;client-id=<default>;", "client-id=<default>;")
	if v := all["user=alice;"]; v["producer_byte_rate"] != 5<<20 || v["request_percentage"] != 200 || len(v) != 2 {
		t.Errorf("alice's values: %v", v)
	}
	check("exact user alice", describe(false, exact("user", "alice")), "user=alice;", "user=alice;client-id=<default>;")
	check("exact user alice, strict", describe(true, exact("user", "alice")), "user=alice;")
	check("default user", describe(false, def("user")), "user=<default>;")
	check("any client-id", describe(false, anyOf("client-id")), "client-id=app;", "user=alice;client-id=<default>;", "client-id=<default>;")
	check("any client-id, strict", describe(true, anyOf("client-id")), "client-id=app;", "client-id=<default>;")
	check("user alice and default client", describe(true, exact("user", "alice"), def("client-id")), "user=alice;client-id=<default>;")
	check("nobody", describe(false, exact("user", "bob")))
	check("strict without components", describe(true))

	// validate_only writes nothing.
	alter(true, quotaEntity(user, sp("carol")), set("producer_byte_rate", 1))
	check("after validate_only", describe(false, exact("user", "carol")))

	// Removing a key keeps the others; removing the last drops the entity.
	alter(false, quotaEntity(user, sp("alice")), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Remove: true})
	if v := describe(true, exact("user", "alice"))["user=alice;"]; len(v) != 1 || v["request_percentage"] != 200 {
		t.Errorf("after removing producer_byte_rate: %v", v)
	}
	alter(false, quotaEntity(user, sp("alice")), kadm.AlterClientQuotaOp{Key: "request_percentage", Remove: true})
	check("after removing all of alice's", describe(true, exact("user", "alice")))

	// They survive a restart.
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = brokertest.StartIn(t, dir, "memory")
	cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm = kadm.NewClient(cl)
	check("after restart", describe(false), "user=<default>;", "client-id=app;", "user=alice;client-id=<default>;", "client-id=<default>;")
}

// TestClientQuotasRefuseBadInput: hostile and malformed alterations and
// filters get Kafka's error codes, per entry, and change nothing; a huge
// entity list is answered entry by entry, past the bound with
// INVALID_REQUEST.
func TestClientQuotasRefuseBadInput(t *testing.T) {
	b := brokertest.Start(t, "memory")
	rc := dialRaw(t, b.Addr())
	ent := func(kv ...*string) []kmsg.AlterClientQuotasRequestEntryEntity {
		var out []kmsg.AlterClientQuotasRequestEntryEntity
		for i := 0; i+1 < len(kv); i += 2 {
			e := kmsg.NewAlterClientQuotasRequestEntryEntity()
			e.Type, e.Name = *kv[i], kv[i+1]
			out = append(out, e)
		}
		return out
	}
	op := func(k string, v float64, remove bool) kmsg.AlterClientQuotasRequestEntryOp {
		o := kmsg.NewAlterClientQuotasRequestEntryOp()
		o.Key, o.Value, o.Remove = k, v, remove
		return o
	}
	user := sp("user")
	for _, tc := range []struct {
		name   string
		entity []kmsg.AlterClientQuotasRequestEntryEntity
		ops    []kmsg.AlterClientQuotasRequestEntryOp
		want   *kerr.Error
	}{
		{"ok", ent(user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 100, false)}, nil},
		{"unknown key", ent(user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rat", 100, false)}, kerr.InvalidRequest},
		{"SCRAM key", ent(user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("SCRAM-SHA-256", 1, false)}, kerr.InvalidRequest},
		{"negative", ent(user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("consumer_byte_rate", -5, false)}, kerr.InvalidRequest},
		{"zero", ent(user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("request_percentage", 0, false)}, kerr.InvalidRequest},
		{"fractional byte rate", ent(user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1.5, false)}, kerr.InvalidRequest},
		{"too large", ent(user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1e300, false)}, kerr.InvalidRequest},
		{"empty entity", nil, []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1, false)}, kerr.InvalidRequest},
		{"duplicate type", ent(user, sp("a"), user, sp("b")), nil, kerr.InvalidRequest},
		{"ip", ent(sp("ip"), sp("1.2.3.4")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, nil},
		{"ip v6", ent(sp("ip"), sp("2001:db8::1")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, nil},
		{"ip default", ent(sp("ip"), nil), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, nil},
		{"ip host name", ent(sp("ip"), sp("localhost")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip five parts", ent(sp("ip"), sp("1.2.3.4.5")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip octet too large", ent(sp("ip"), sp("256.1.1.1")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip with prefix", ent(sp("ip"), sp("10.0.0.0/8")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip with zone", ent(sp("ip"), sp("fe80::1%eth0")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip path", ent(sp("ip"), sp("../../brokers/ids/1")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip NUL", ent(sp("ip"), sp("1.2.3.4\x00")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip huge", ent(sp("ip"), sp(strings.Repeat("1", 1<<14))), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip spaces", ent(sp("ip"), sp(" 1.2.3.4")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip empty", ent(sp("ip"), sp("")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip twice", ent(sp("ip"), sp("1.2.3.4"), sp("ip"), sp("1.2.3.5")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip with user", ent(sp("ip"), sp("1.2.3.4"), user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"ip byte rate", ent(sp("ip"), sp("1.2.3.4")), []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1, false)}, kerr.InvalidRequest},
		{"ip fraction", ent(sp("ip"), sp("1.2.3.4")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1.5, false)}, kerr.InvalidRequest},
		{"ip too large for an INT", ent(sp("ip"), sp("1.2.3.4")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 3000000000.0, false)}, kerr.InvalidRequest},
		{"ip zero", ent(sp("ip"), sp("1.2.3.4")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 0, false)}, kerr.InvalidRequest},
		{"ip NaN", ent(sp("ip"), sp("1.2.3.4")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", math.NaN(), false)}, kerr.InvalidRequest},
		{"ip remove unknown key", ent(sp("ip"), sp("1.2.3.4")), []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 0, true)}, kerr.InvalidRequest},
		{"connection rate on a user", ent(user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1, false)}, kerr.InvalidRequest},
		{"unknown type", ent(sp("group"), sp("g")), nil, kerr.InvalidRequest},
		{"empty name", ent(user, sp("")), nil, kerr.InvalidRequest},
		{"remove unknown key", ent(user, sp("u")), []kmsg.AlterClientQuotasRequestEntryOp{op("nope", 0, true)}, kerr.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			e := kmsg.NewAlterClientQuotasRequestEntry()
			e.Entity, e.Ops = tc.entity, tc.ops
			req.Entries = append(req.Entries, e)
			got := rc.Do(req).(*kmsg.AlterClientQuotasResponse)
			if len(got.Entries) != 1 {
				t.Fatalf("%d entries", len(got.Entries))
			}
			if err := kerr.ErrorForCode(got.Entries[0].ErrorCode); err != tc.want && !(tc.want == nil && err == nil) {
				t.Fatalf("error %v (%v), want %v", err, got.Entries[0].ErrorMessage, tc.want)
			}
		})
	}
	// A huge list: every entry answered; past the bound refused.
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = true
	for i := 0; i < 12_000; i++ {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		e.Entity = ent(user, sp("u"))
		e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1, false)}
		req.Entries = append(req.Entries, e)
	}
	got := rc.Do(req).(*kmsg.AlterClientQuotasResponse)
	if len(got.Entries) != 12_000 || got.Entries[0].ErrorCode != 0 || got.Entries[11_999].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("huge list: %d entries, first %d, last %d", len(got.Entries), got.Entries[0].ErrorCode, got.Entries[len(got.Entries)-1].ErrorCode)
	}

	// Describe filters.
	comp := func(typ string, match int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = typ, kmsg.QuotasMatchType(match), name
		return c
	}
	for _, tc := range []struct {
		name  string
		comps []kmsg.DescribeClientQuotasRequestComponent
		want  *kerr.Error
	}{
		{"ok", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, sp("u"))}, nil},
		{"duplicate type", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil), comp("user", 1, nil)}, kerr.InvalidRequest},
		{"exact without name", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, nil)}, kerr.InvalidRequest},
		{"default with name", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, sp("x"))}, kerr.InvalidRequest},
		{"any with name", []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", 2, sp("x"))}, kerr.InvalidRequest},
		{"unknown match type", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 7, nil)}, kerr.InvalidRequest},
		{"empty type", []kmsg.DescribeClientQuotasRequestComponent{comp("", 2, nil)}, kerr.InvalidRequest},
		{"unknown type", []kmsg.DescribeClientQuotasRequestComponent{comp("group", 2, nil)}, kerr.UnsupportedVersion},
		{"ip with user", []kmsg.DescribeClientQuotasRequestComponent{comp("ip", 2, nil), comp("user", 2, nil)}, kerr.InvalidRequest},
	} {
		t.Run("describe "+tc.name, func(t *testing.T) {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			req.Components = tc.comps
			got := rc.Do(req).(*kmsg.DescribeClientQuotasResponse)
			if err := kerr.ErrorForCode(got.ErrorCode); err != tc.want && !(tc.want == nil && err == nil) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if tc.want == nil && len(got.Entries) != 1 {
				t.Fatalf("ok filter: %d entries", len(got.Entries))
			}
		})
	}
}
