package e2e

// Metrics of a running cluster, scraped from each broker's /metrics on its
// http.listeners address and parsed with the Prometheus text parser.

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeMetrics fetches http://<b.httpAddr>/metrics and parses it.
func scrapeMetrics(b *brokerProc) (map[string]*dto.MetricFamily, error) {
	if b.httpAddr == "" {
		return nil, fmt.Errorf("broker has no http.listeners address")
	}
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + b.httpAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// gaugeOrCounter is the value of family name's only (unlabelled) series;
// ok is false when there is none.
func gaugeOrCounter(fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	f := fams[name]
	if f == nil || len(f.Metric) == 0 {
		return 0, false
	}
	m := f.Metric[0]
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// replicaMetrics is what TestClusterMetricsUnderReplicated watches on the
// leader.
type replicaMetrics struct {
	under, shrinks, expands float64
}

func (r replicaMetrics) String() string {
	return fmt.Sprintf("underreplicatedpartitions=%v isrshrinks_total=%v isrexpands_total=%v", r.under, r.shrinks, r.expands)
}

func scrapeReplicaMetrics(b *brokerProc) (replicaMetrics, error) {
	fams, err := scrapeMetrics(b)
	if err != nil {
		return replicaMetrics{}, err
	}
	var r replicaMetrics
	for _, v := range []struct {
		name string
		to   *float64
	}{
		{"kafka_server_replicamanager_underreplicatedpartitions", &r.under},
		{"kafka_server_replicamanager_isrshrinks_total", &r.shrinks},
		{"kafka_server_replicamanager_isrexpands_total", &r.expands},
	} {
		x, ok := gaugeOrCounter(fams, v.name)
		if !ok {
			return r, fmt.Errorf("no %s", v.name)
		}
		*v.to = x
	}
	return r, nil
}

// waitReplicaMetrics scrapes b every 100 ms until cond holds or within
// passes, and returns the last scrape.
func (c *testCluster) waitReplicaMetrics(b *brokerProc, within time.Duration, what string, cond func(replicaMetrics) bool) replicaMetrics {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, err := scrapeReplicaMetrics(b)
		if err == nil && cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %s on %s: last scrape %v, err %v\n%s", within, what, b.httpAddr, r, err, c.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterMetricsUnderReplicated: in a 3-broker cluster, one controller
// reports activecontrollercount 1; a topic with RF 3 is fully replicated on
// its leader; a follower paused with SIGSTOP leaves the ISR after
// replica.lag.time.max.ms, which the leader's
// kafka_server_replicamanager_underreplicatedpartitions (1) and
// isrshrinks_total show; after SIGCONT it is back to 0 and
// isrexpands_total grew.
func TestClusterMetricsUnderReplicated(t *testing.T) {
	c := startCluster(t, 3, "replica.lag.time.max.ms=1500", "zookeeper.session.timeout.ms=40000")
	c.createTopic("um", 1, 3, nil)
	leader, followers := c.followersOf("um")
	c.produceN("um", "a", 100)

	active := 0.0
	for id := int32(1); id <= 3; id++ {
		fams, err := scrapeMetrics(c.brokers[id])
		if err != nil {
			t.Fatalf("scrape broker %d: %v", id, err)
		}
		v, ok := gaugeOrCounter(fams, "kafka_controller_kafkacontroller_activecontrollercount")
		if !ok {
			t.Fatalf("broker %d: no activecontrollercount", id)
		}
		active += v
	}
	if active != 1 {
		t.Errorf("activecontrollercount summed over the brokers = %v, want 1", active)
	}

	lb := c.brokers[leader]
	before := c.waitReplicaMetrics(lb, 30*time.Second, "no under-replicated partition", func(r replicaMetrics) bool { return r.under == 0 })

	// Pause a follower that is not the controller, as
	// TestClusterFollowerPaused does.
	ctrl := c.controllerID()
	f := followers[0]
	if f == ctrl {
		f = followers[1]
	}
	c.brokers[f].pause()
	paused := c.waitReplicaMetrics(lb, 25*time.Second, "one under-replicated partition and an ISR shrink", func(r replicaMetrics) bool {
		return r.under == 1 && r.shrinks > before.shrinks
	})
	t.Logf("follower %d paused; leader %d: %v", f, leader, paused)

	c.brokers[f].resume()
	after := c.waitReplicaMetrics(lb, 30*time.Second, "no under-replicated partition and an ISR expansion", func(r replicaMetrics) bool {
		return r.under == 0 && r.expands > paused.expands
	})
	t.Logf("follower %d resumed; leader %d: %v", f, leader, after)
	c.brokers[f].running("after SIGCONT")
}
