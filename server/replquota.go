package server

// Replication throttles (KIP-73), enforced as Kafka's
// ReplicationQuotaManager by package quota: leader.replication.throttled.rate
// on the leader's side of a follower fetch (01_fetch.go: a throttled
// partition of a follower out of the ISR is answered with no data while the
// leader's rate is exceeded), follower.replication.throttled.rate on the
// fetcher's side (replication/fetcher.go: a throttled partition not caught
// up is left out of the fetches while the follower's rate is exceeded). Which
// replicas are throttled is each topic's leader.replication.throttled.replicas
// and follower.replication.throttled.replicas, read from the topic's current
// config on every fetch, so AlterConfigs on the topic and on the broker
// (dynamic) apply without a restart.
//
// Metrics, as the JMX exporter names Kafka's (kafka.server:type=
// LeaderReplication byte-rate, kafka.server:type=FollowerReplication
// byte-rate): kafka_server_leaderreplication_byte_rate and
// kafka_server_followerreplication_byte_rate (bytes/s of the throttled
// replicas), and Sluice's sluice_replication_throttled_partitions_total{type}
// (partition fetches the throttle held back; Kafka keeps no such count).

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/quota"
)

// replQuotas are a broker's two replication throttles.
type replQuotas struct {
	leader, follower *quota.Replication
}

// newReplQuotas makes the throttles of a broker with config c.
func newReplQuotas(c *config.Config, nodeID int32, now func() time.Time) replQuotas {
	rc := quota.ReplicationConfig{
		BrokerID: nodeID, Samples: int(c.ReplicationQuotaWindowNum),
		Window: time.Duration(c.ReplicationQuotaWindowSizeSeconds) * time.Second, Now: now,
	}
	q := replQuotas{leader: quota.NewReplication(rc), follower: quota.NewReplication(rc)}
	q.reconfigure(c)
	return q
}

// reconfigure applies the rates of c (a dynamic config change).
func (q replQuotas) reconfigure(c *config.Config) {
	if q.leader == nil {
		return
	}
	q.leader.SetBound(c.LeaderReplicationThrottledRate)
	q.follower.SetBound(c.FollowerReplicationThrottledRate)
}

// followerQuota is the fetchers' replication.ReplicaQuota: the follower
// throttle over the topics' follower.replication.throttled.replicas.
type followerQuota struct {
	s *Server
	*quota.Replication
}

func (f followerQuota) Throttled(topic string, partition int32) bool {
	t := f.s.rm.Topic(topic)
	if t == nil {
		return false
	}
	return f.Replication.Throttled(topic, t.Meta.Configs[config.FollowerThrottledReplicas], partition)
}

// replQuotaCollector exports the throttles at scrape time.
type replQuotaCollector struct{ q replQuotas }

var (
	descLeaderReplRate   = gaugeDesc("kafka_server_leaderreplication_byte_rate", "Bytes per second a leader sent for its throttled replicas (leader.replication.throttled.replicas), over the replication quota window.")
	descFollowerReplRate = gaugeDesc("kafka_server_followerreplication_byte_rate", "Bytes per second a follower fetched for its throttled replicas (follower.replication.throttled.replicas), over the replication quota window.")
	descReplThrottled    = prometheus.NewDesc("sluice_replication_throttled_partitions_total", "Partition fetches a replication throttle held back: answered with no data by the leader (type=leader), or left out of a fetch by the follower (type=follower).", []string{"type"}, nil)
)

func (c replQuotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLeaderReplRate
	ch <- descFollowerReplRate
	ch <- descReplThrottled
}

func (c replQuotaCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descLeaderReplRate, prometheus.GaugeValue, c.q.leader.Rate())
	ch <- prometheus.MustNewConstMetric(descFollowerReplRate, prometheus.GaugeValue, c.q.follower.Rate())
	ch <- prometheus.MustNewConstMetric(descReplThrottled, prometheus.CounterValue, float64(c.q.leader.Skipped()), "leader")
	ch <- prometheus.MustNewConstMetric(descReplThrottled, prometheus.CounterValue, float64(c.q.follower.Skipped()), "follower")
}

// registerReplQuotaMetrics registers the collector (cluster mode only:
// a single node replicates nothing).
func (s *Server) registerReplQuotaMetrics() error {
	if s.metrics == nil {
		return nil
	}
	col := replQuotaCollector{s.repl}
	if err := s.metrics.Register(col); err != nil {
		return err
	}
	s.life.Push("replication quota metrics", func() error { s.metrics.Unregister(col); return nil })
	return nil
}
