package e2e

// Metrics of a running cluster, scraped from each broker's /metrics on its
// http.listeners address and parsed with the Prometheus text parser.

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/metrics/metricstest"
)

// scrapeMetrics fetches http://<b.httpAddr>/metrics and parses it.
func scrapeMetrics(b *brokerProc) (map[string]*dto.MetricFamily, error) {
	if b.httpAddr == "" {
		return nil, fmt.Errorf("broker has no http.listeners address")
	}
	return metricstest.Scrape("http://" + b.httpAddr + "/metrics")
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
	t.Parallel()
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

// TestClusterMetricsConsumerLag: the group coordinator computes the lag of
// its group on partitions led by other brokers too (asking their leaders
// for the end offsets): a topic of 3 partitions with one replica each, so
// that two of them live elsewhere, p+1 records short of the end on each
// partition p. Then a broker is killed: the controller reports the
// partition it alone held offline.
func TestClusterMetricsConsumerLag(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	const topic, group = "lagged", "lagging"
	c.createTopic(topic, 3, 1, nil)
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	end := map[int32]int64{}
	commit := kadm.Offsets{}
	for p := int32(0); p < 3; p++ {
		end[p] = int64(10 * (p + 1))
		var recs []*kgo.Record
		for i := int64(0); i < end[p]; i++ {
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte("v")})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s-%d: %v", topic, p, err)
		}
		commit.Add(kadm.Offset{Topic: topic, Partition: p, At: end[p] - int64(p+1), LeaderEpoch: -1})
	}
	adm := kadm.NewClient(cl)
	if err := adm.CommitAllOffsets(ctx, group, commit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	coords := adm.FindGroupCoordinators(ctx, group)
	coord, ok := coords[group]
	if !ok || coord.Err != nil {
		t.Fatalf("find coordinator of %s: %+v", group, coords)
	}
	remote := 0
	for p := int32(0); p < 3; p++ {
		if c.mustPartition(topic, p).Leader != coord.NodeID {
			remote++
		}
	}
	t.Logf("coordinator %d; %d of 3 partitions led elsewhere", coord.NodeID, remote)

	deadline := time.Now().Add(30 * time.Second)
	for {
		fams, err := scrapeMetrics(c.brokers[coord.NodeID])
		var problems []string
		if err != nil {
			problems = append(problems, err.Error())
		}
		var sum int64
		for p := int32(0); p < 3; p++ {
			want := int64(p + 1)
			sum += want
			got, ok := metricstest.Value(fams, "kafka_consumergroup_lag", map[string]string{"consumergroup": group, "topic": topic, "partition": strconv.Itoa(int(p))})
			if !ok || got != float64(want) {
				problems = append(problems, fmt.Sprintf("lag of partition %d = %v (present %v), want %d", p, got, ok, want))
			}
		}
		if got, _ := metricstest.Value(fams, "kafka_consumergroup_lag_sum", map[string]string{"consumergroup": group, "topic": topic}); got != float64(sum) {
			problems = append(problems, fmt.Sprintf("lag_sum = %v, want %d", got, sum))
		}
		if len(problems) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("coordinator %d after 30s: %v", coord.NodeID, problems)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A broker that is not the controller goes: the partition of the
	// topic it alone held has no live leader, which the controller (and
	// only it) reports.
	ctrl := c.controllerID()
	victim := ctrl%3 + 1
	c.brokers[victim].kill()
	ctrlFams := func() map[string]*dto.MetricFamily {
		fams, err := scrapeMetrics(c.brokers[ctrl])
		if err != nil {
			t.Logf("scrape controller %d: %v", ctrl, err)
		}
		return fams
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		fams := ctrlFams()
		offline, _ := gaugeOrCounter(fams, "kafka_controller_kafkacontroller_offlinepartitionscount")
		if offline >= 1 {
			topics, _ := gaugeOrCounter(fams, "kafka_controller_kafkacontroller_globaltopiccount")
			parts, _ := gaugeOrCounter(fams, "kafka_controller_kafkacontroller_globalpartitioncount")
			if topics < 1 || parts < 3 {
				t.Errorf("controller %d: globaltopiccount %v, globalpartitioncount %v; want >= 1 and >= 3", ctrl, topics, parts)
			}
			t.Logf("broker %d killed; controller %d: offlinepartitionscount %v, %v topics, %v partitions", victim, ctrl, offline, topics, parts)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("controller %d: offlinepartitionscount %v 30s after broker %d went", ctrl, offline, victim)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for id := int32(1); id <= 3; id++ {
		if id == ctrl || id == victim {
			continue
		}
		fams, err := scrapeMetrics(c.brokers[id])
		if err != nil {
			t.Fatalf("scrape broker %d: %v", id, err)
		}
		if v, _ := gaugeOrCounter(fams, "kafka_controller_kafkacontroller_offlinepartitionscount"); v != 0 {
			t.Errorf("broker %d, not the controller, reports %v offline partitions; want 0", id, v)
		}
	}
}
