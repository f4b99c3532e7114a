package e2e

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/metrics/metricstest"
)

// dashboardMetrics returns the metric names docs/grafana/sluice.json
// queries (a histogram's _bucket is its family's name).
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../docs/grafana/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("docs/grafana/sluice.json: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	name := regexp.MustCompile(`\b(?:kafka|process|go)_[a-z0-9_]+`)
	set := map[string]bool{}
	for _, e := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			set[strings.TrimSuffix(n, "_bucket")] = true
		}
	}
	var names []string
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestGrafanaDashboardMetricsExist runs a small workload (produce, a
// consumer group that commits) and checks that every metric the Grafana
// dashboard queries is in the broker's /metrics: a renamed metric would
// otherwise leave an empty panel that nobody notices.
func TestGrafanaDashboardMetricsExist(t *testing.T) {
	names := dashboardMetrics(t)
	if len(names) < 15 {
		t.Fatalf("only %d metric names found in the dashboard: %v", len(names), names)
	}
	b := startBroker(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.AllowAutoTopicCreation(),
		kgo.ConsumerGroup("dash-group"), kgo.ConsumeTopics("dash"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dash", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < 10 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 10: %v", got, err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	families, err := metricstest.Scrape("http://" + b.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, ok := families[n]; !ok {
			t.Errorf("the dashboard queries %s, which /metrics does not export", n)
		}
	}
}
