package server_test

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

// TestIPQuotas (KIP-612): connection_creation_rate on ip entities and the
// default ip entity through AlterClientQuotas and DescribeClientQuotas
// (Kafka's filters: exact, default, any, strict), enforced as connections
// are accepted (a connection over its address's rate is closed unserved),
// an address's own quota beating the default, and surviving a restart
// (single node: the metastore).
func TestIPQuotas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, "memory")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cl.Close() }()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.ApiVersions(ctx); err != nil { // the admin connection, before any quota
		t.Fatal(err)
	}
	alter := func(e kadm.ClientQuotaEntity, op kadm.AlterClientQuotaOp) {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: []kadm.AlterClientQuotaOp{op}}})
		if err == nil && res[0].Err != nil {
			err = res[0].Err
		}
		if err != nil {
			t.Fatalf("alter %v: %v", e, err)
		}
	}
	ipType := sp("ip")
	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) []string {
		t.Helper()
		got, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatalf("describe %v: %v", comps, err)
		}
		var out []string
		for _, q := range got {
			var parts []string
			for _, c := range q.Entity {
				name := "<default>"
				if c.Name != nil {
					name = *c.Name
				}
				parts = append(parts, c.Type+"="+name)
			}
			for _, v := range q.Values {
				parts = append(parts, v.Key+"="+strconv.FormatFloat(v.Value, 'f', -1, 64))
			}
			out = append(out, strings.Join(parts, ";"))
		}
		sort.Strings(out)
		return out
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, " | ") != strings.Join(want, " | ") {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	set := kadm.AlterClientQuotaOp{Key: "connection_creation_rate", Value: 1}
	alter(quotaEntity(ipType, nil), set)
	alter(quotaEntity(ipType, sp("192.0.2.7")), kadm.AlterClientQuotaOp{Key: "connection_creation_rate", Value: 20})
	alter(quotaEntity(sp("user"), sp("alice")), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 100})

	exact := kadm.DescribeClientQuotaComponent{Type: "ip", MatchName: sp("192.0.2.7"), MatchType: kmsg.QuotasMatchTypeExact}
	def := kadm.DescribeClientQuotaComponent{Type: "ip", MatchType: kmsg.QuotasMatchTypeDefault}
	anyIP := kadm.DescribeClientQuotaComponent{Type: "ip", MatchType: kmsg.QuotasMatchTypeAny}
	check("exact", describe(false, exact), "ip=192.0.2.7;connection_creation_rate=20")
	check("default", describe(false, def), "ip=<default>;connection_creation_rate=1")
	check("any", describe(true, anyIP), "ip=192.0.2.7;connection_creation_rate=20", "ip=<default>;connection_creation_rate=1")
	check("everything", describe(false), "ip=192.0.2.7;connection_creation_rate=20", "ip=<default>;connection_creation_rate=1", "user=alice;producer_byte_rate=100")
	check("users only", describe(false, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}), "user=alice;producer_byte_rate=100")

	// Enforced: at 1 connection/s from 127.0.0.1 (the default), a burst
	// of ten windows' worth passes (Kafka's Rate spans at least 10 s),
	// then a connection is closed unanswered.
	closedAt := -1
	for i := 0; i < 30 && closedAt < 0; i++ {
		if !answered(t, b.Addr()) {
			closedAt = i
		}
	}
	if closedAt < 0 {
		t.Fatal("30 connections at once all served under connection_creation_rate=1")
	}
	t.Logf("connection %d was refused", closedAt)
	fams := scrape(t, "http://"+b.HTTPAddr()+"/metrics")
	if v := mustValue(t, fams, "kafka_server_socket_server_metrics_ip_connection_accept_throttled_total", nil); v < 1 {
		t.Errorf("ip throttles counted: %v", v)
	}
	// 127.0.0.1's own quota beats the default.
	alter(quotaEntity(ipType, sp("127.0.0.1")), kadm.AlterClientQuotaOp{Key: "connection_creation_rate", Value: 100000})
	for i := 0; i < 5; i++ {
		if !answered(t, b.Addr()) {
			t.Fatalf("connection %d refused with 127.0.0.1's own quota of 100000/s", i)
		}
	}
	// Removing the default keeps the others.
	alter(quotaEntity(ipType, nil), kadm.AlterClientQuotaOp{Key: "connection_creation_rate", Remove: true})
	check("after removing the default", describe(true, anyIP), "ip=127.0.0.1;connection_creation_rate=100000", "ip=192.0.2.7;connection_creation_rate=20")

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
	adm = kadm.NewClient(cl)
	check("after restart", describe(true, anyIP), "ip=127.0.0.1;connection_creation_rate=100000", "ip=192.0.2.7;connection_creation_rate=20")
}

// answered reports whether a new connection to addr answers ApiVersions
// (false: closed unanswered).
func answered(t *testing.T, addr string) bool {
	t.Helper()
	rc := dialRaw(t, addr)
	defer rc.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	rc.Send(req)
	_, err := rc.ReadFrame(10 * time.Second)
	return err == nil
}
