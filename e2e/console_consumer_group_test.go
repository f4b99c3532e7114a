package e2e

// The console's page of a consumer group (KIP-848) in a browser, against
// `sluice group describe` of the same group.

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsoleConsumerGroupMatchesCLI: two franz-go members of a consumer
// group with the server-side assignor; once `sluice group describe` shows
// them reconciled, the group's page shows the same type, assignor, group
// and assignment epochs, and for each member the same epoch, client id,
// host, assignment and target assignment; the groups page gives its type.
func TestConsoleConsumerGroupMatchesCLI(t *testing.T) {
	b := startBroker(t, filepath.Join(t.TempDir(), "data"),
		"group.consumer.min.heartbeat.interval.ms=100", "group.consumer.heartbeat.interval.ms=200")
	const topic, group = "cg-orders", "console-848"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 5, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	for _, id := range []string{"console-a", "console-b"} {
		m, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ClientID(id), kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic), kgo.ServerSideBalancer())
		if err != nil {
			t.Fatal(err)
		}
		mctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for mctx.Err() == nil {
				m.PollFetches(mctx)
			}
		}()
		defer func() { stop(); <-done; m.Close() }()
	}

	// The CLI's view once both members hold their targets: the group's
	// row and member id -> "epoch client host assignment target".
	var head map[string]string
	var cliMembers map[string]string
	deadline := time.Now().Add(60 * time.Second)
	for {
		out := cliOK(t, b.addr, "group", "describe", group).stdout
		head = table(t, out, "GROUP", "COORDINATOR (ID)", "STATE")[0]
		cliMembers = map[string]string{}
		reconciled := head["STATE"] == "Stable"
		if rows := table(t, out, "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST"); len(rows) == 2 && reconciled {
			for _, r := range rows {
				reconciled = reconciled && r["CURRENT-ASSIGNMENT"] == r["TARGET-ASSIGNMENT"] && r["CURRENT-EPOCH"] == r["TARGET-EPOCH"]
				cliMembers[r["CONSUMER-ID"]] = fmt.Sprintf("%s %s %s %s %s", r["CURRENT-EPOCH"], r["CLIENT-ID"], r["HOST"], r["CURRENT-ASSIGNMENT"], r["TARGET-ASSIGNMENT"])
			}
		} else {
			reconciled = false
		}
		if reconciled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice group describe never showed 2 reconciled members:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("sluice group describe: %v, members %v", head, cliMembers)

	tab := browserTab(t)
	browse(t, tab, consoleURL(b, "groups"))
	typ := waitJS(t, tab, "the group's row", `(() => {
		const c = document.querySelector(`+jsStr("tr"+attrSel("data-group", group)+" [data-col=type]")+`);
		return c ? c.textContent : "";
	})()`, func(s string) bool { return s != "" })
	if typ != "consumer" {
		t.Errorf("groups page: type of %s is %q, want consumer", group, typ)
	}
	screenshot(t, tab, "groups-848")

	browse(t, tab, consoleURL(b, "groups/"+group))
	type page struct {
		Type, Protocol, Epoch, AssignmentEpoch string
		Members                                map[string]string
	}
	want := page{Type: "consumer", Protocol: "consumer / " + head["ASSIGNMENT-STRATEGY"], Epoch: head["GROUP-EPOCH"],
		AssignmentEpoch: head["TARGET-ASSIGNMENT-EPOCH"], Members: cliMembers}
	got := waitJS(t, tab, fmt.Sprintf("the group's page as the CLI shows it, %+v", want), `(() => {
		const text = (id) => { const e = document.getElementById(id); return e ? e.textContent : ""; };
		const cell = (r, col) => r.querySelector("[data-col=" + col + "]");
		return {
			Type: text("group-type"), Protocol: text("group-protocol"),
			Epoch: text("group-epoch"), AssignmentEpoch: text("group-assignment-epoch"),
			Members: Object.fromEntries(Array.from(document.querySelectorAll("tr[data-member]")).map((r) => [r.dataset.member,
				[cell(r, "epoch").textContent, cell(r, "client").textContent, cell(r, "host").textContent,
				 cell(r, "assignments").dataset.assignment, cell(r, "target").dataset.assignment].join(" ")])),
		};
	})()`, func(p page) bool {
		return p.Type == want.Type && p.Protocol == want.Protocol && p.Epoch == want.Epoch &&
			p.AssignmentEpoch == want.AssignmentEpoch && maps.Equal(p.Members, want.Members)
	})
	t.Logf("group page: %+v", got)
	screenshot(t, tab, "group-848")
}
