package server

// The server's side of package metrics: the hot paths count into handles
// (partition.stats, conn.lst, metrics.Request in conn.go), and the state
// gauges are computed here at scrape time by stateCollector, from what the
// server already holds, so they cost nothing between scrapes:
//
//	kafka_server_replicamanager_{partitioncount,leadercount,
//	    underreplicatedpartitions,underminisrpartitioncount,
//	    offlinereplicacount (local replicas whose log failed)}
//	kafka_controller_kafkacontroller_{activecontrollercount,
//	    offlinepartitionscount,globaltopiccount,globalpartitioncount}
//	kafka_log_log_{size,logstartoffset,logendoffset,numlogsegments}{topic,partition}
//	kafka_log_logmanager_offlinelogdirectorycount,
//	kafka_log_logmanager_logdirectoryoffline{logDirectory}
//	kafka_consumergroup_{current_offset,lag}{consumergroup,topic,partition},
//	kafka_consumergroup_lag_sum{consumergroup,topic},
//	kafka_consumergroup_members{consumergroup}
//	kafka_coordinator_group_groupmetadatamanager_numgroups[state] (classic
//	    groups, as Kafka 4.x), _numoffsets
//	kafka_server_group_coordinator_metrics_group_count{protocol},
//	    _consumer_group_count{state}, _group_completed_rebalance_count,
//	    _consumer_group_rebalance_count (Kafka 4.x's GroupCoordinatorMetrics)
//	sluice_group_coordinator_members{protocol}
//	kafka_log_logcleaner_{max_clean_time_secs,cleaner_recopy_percent},
//	kafka_log_logcleanermanager_uncleanable_partitions_count
//	kafka_network_socketserver_{memorypoolused,memorypoolavailable}
//	sluice_metrics_partition_series_suppressed,
//	sluice_metrics_consumergroup_lag_series_suppressed,
//	sluice_metrics_consumergroup_groups_suppressed
//	sluice_transaction_coordinator_transactions{state} (and, in package
//	    metrics, sluice_transaction_coordinator_completed_total{result}):
//	    Kafka has no MBean for these, so they carry Sluice's prefix
//
// Cardinality is bounded, since partitions and group ids are many and
// group ids are chosen (and minted freely) by clients:
//
//   - kafka_log_log_* are exported while the local partitions number at
//     most metrics.partition.series.max (0: never);
//     sluice_metrics_partition_series_suppressed is 1 otherwise.
//   - kafka_consumergroup_{lag,current_offset}, one series per group and
//     partition, are exported while the committed offsets of the exported
//     groups number at most the same metrics.partition.series.max (0:
//     never); sluice_metrics_consumergroup_lag_series_suppressed is 1
//     otherwise. lag_sum stays.
//   - kafka_consumergroup_{lag_sum,members} cover at most
//     maxExportedGroups groups: those with members first, then by name;
//     sluice_metrics_consumergroup_groups_suppressed counts the rest.
//
// Consumer lag is kafka-exporter's: for each group this broker
// coordinates and each partition it has committed an offset for, the
// partition's high watermark minus the committed offset (never below 0).
// The high watermark is the local replica's where this broker leads the
// partition; for any other partition (a follower's high watermark may
// trail the leader's by a fetch, or lag far behind a follower that is out
// of the ISR) it is asked of the leader with ListOffsets, cached a few
// seconds (metrics_lag.go). A partition whose end is unknown (no leader,
// or the leader did not answer in time) has no lag series and is left out
// of lag_sum for that scrape.

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/txn"
)

// register registers c, the scrape-time collector, in the server's
// Metrics (none kept: nothing) and returns what unregisters it. A second
// server on the same Metrics is refused: its series would collide.
func (c *stateCollector) register() (unregister func() error, err error) {
	m := c.s.metrics
	if m == nil {
		return nil, nil
	}
	if err := m.Register(c); err != nil {
		return nil, fmt.Errorf("server: register metrics: %w", err)
	}
	return func() error {
		m.Unregister(c)
		c.remote.close()
		return nil
	}, nil
}

// listenerLabel names a listener in the metrics: its name in listeners,
// or its security protocol for the unnamed listener of Serve.
func listenerLabel(name string, sec ListenerSecurity) string {
	if name != "" {
		return name
	}
	return sec.Protocol
}

// countProduceError counts one failed partition of a produce request.
// Like Kafka (ReplicaManager.appendToLocalLog), FailedProduceRequests
// counts unexpected failures only: a client routed to the wrong broker, a
// batch too large or corrupt, a storage error and the waits that ended
// without the ISR count as requests, not failures.
func countProduceError(t *metrics.Topic, code int16) {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.MessageTooLarge.Code,
		kerr.RecordListTooLarge.Code, kerr.CorruptMessage.Code, kerr.KafkaStorageError.Code,
		kerr.RequestTimedOut.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		t.Produced(0, 0)
	default:
		t.ProduceFailed()
	}
}

// countFetch counts each partition of an answered fetch that reached a
// partition here: its record bytes (BytesOut for a consumer,
// ReplicationBytesOut for a follower) or its failure. As in Kafka
// (ReplicaManager.readFromLocalLog), routing and epoch errors and an
// offset out of range are not failures.
func countFetch(api *metrics.API, targets [][]fetchTarget, out *fetchresp.Response, follower bool) {
	for i := range targets {
		for j := range targets[i] {
			ft := &targets[i][j]
			op := &out.Topics[i].Partitions[j]
			api.Error(op.ErrorCode)
			if ft.p == nil {
				continue
			}
			switch op.ErrorCode {
			case 0:
				if follower {
					ft.p.Stats.ReplicationFetched(op.Records.Len())
				} else {
					ft.p.Stats.Fetched(op.Records.Len())
				}
			case kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.FencedLeaderEpoch.Code,
				kerr.UnknownLeaderEpoch.Code, kerr.OffsetOutOfRange.Code, kerr.KafkaStorageError.Code,
				kerr.ReplicaNotAvailable.Code, kerr.InconsistentTopicID.Code:
				ft.p.Stats.Fetched(0)
			default:
				ft.p.Stats.FetchFailed()
			}
		}
	}
}

func gaugeDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descPartitionCount   = gaugeDesc("kafka_server_replicamanager_partitioncount", "Partitions with a replica on this broker.")
	descLeaderCount      = gaugeDesc("kafka_server_replicamanager_leadercount", "Partitions this broker leads.")
	descUnderReplicated  = gaugeDesc("kafka_server_replicamanager_underreplicatedpartitions", "Partitions led here whose ISR is smaller than their replica set.")
	descUnderMinISR      = gaugeDesc("kafka_server_replicamanager_underminisrpartitioncount", "Partitions led here whose ISR is below min.insync.replicas.")
	descFetchSessions    = gaugeDesc("kafka_server_fetchsessioncache_numincrementalfetchsessions", "Incremental fetch sessions (KIP-227) cached here.")
	descFetchSessParts   = gaugeDesc("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached", "Partitions in the cached incremental fetch sessions.")
	descFetchSessEvicted = prometheus.NewDesc("kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total", "Incremental fetch sessions evicted to make room for new ones.", nil, nil)
	descOfflineReplicas  = gaugeDesc("kafka_server_replicamanager_offlinereplicacount", "Replicas here whose log has failed (a storage error), as Kafka counts the replicas of an offline log dir.")
	descOfflineLogDirs   = gaugeDesc("kafka_log_logmanager_offlinelogdirectorycount", "Log dirs of log.dirs that failed (an I/O error, or missing at start).")
	descLogDirOffline    = gaugeDesc("kafka_log_logmanager_logdirectoryoffline", "1 when the log dir has failed, else 0.", "logDirectory")
	descActiveController = gaugeDesc("kafka_controller_kafkacontroller_activecontrollercount", "1 on the active controller, else 0 (a single node is its own controller).")
	descOfflinePartition = gaugeDesc("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a live leader, as the controller sees them (0 elsewhere); on a single node, those whose log has failed.")
	descGlobalTopics     = gaugeDesc("kafka_controller_kafkacontroller_globaltopiccount", "Topics in the cluster, as the controller sees them (0 elsewhere).")
	descGlobalPartitions = gaugeDesc("kafka_controller_kafkacontroller_globalpartitioncount", "Partitions in the cluster, as the controller sees them (0 elsewhere).")
	descLogSize          = gaugeDesc("kafka_log_log_size", "Bytes of the partition's log on disk.", "topic", "partition")
	descLogStart         = gaugeDesc("kafka_log_log_logstartoffset", "The partition's log start offset (Kafka's logStartOffset: below the local log start while a tiered partition's first records are remote).", "topic", "partition")
	descLogEnd           = gaugeDesc("kafka_log_log_logendoffset", "The partition's log end offset.", "topic", "partition")
	descLogSegments      = gaugeDesc("kafka_log_log_numlogsegments", "Segments of the partition's log (segment backend).", "topic", "partition")
	descSuppressed       = gaugeDesc("sluice_metrics_partition_series_suppressed", "1 when the kafka_log_log_* series are left out: more local partitions than metrics.partition.series.max, or it is 0.")
	descLagSuppressed    = gaugeDesc("sluice_metrics_consumergroup_lag_series_suppressed", "1 when the per-partition kafka_consumergroup_lag and current_offset series are left out: more committed offsets in the exported groups than metrics.partition.series.max, or it is 0.")
	descGroupsSuppressed = gaugeDesc("sluice_metrics_consumergroup_groups_suppressed", "Groups coordinated here left out of kafka_consumergroup_lag_sum and _members: those beyond the first 1000 (groups with members first, then by name).")
	descGroupOffset      = gaugeDesc("kafka_consumergroup_current_offset", "Committed offset of a group on a partition.", "consumergroup", "topic", "partition")
	descGroupLag         = gaugeDesc("kafka_consumergroup_lag", "High watermark minus committed offset.", "consumergroup", "topic", "partition")
	descGroupLagSum      = gaugeDesc("kafka_consumergroup_lag_sum", "Lag of a group summed over a topic's partitions.", "consumergroup", "topic")
	descGroupMembers     = gaugeDesc("kafka_consumergroup_members", "Members of a group.", "consumergroup")
	descNumGroups        = gaugeDesc("kafka_coordinator_group_groupmetadatamanager_numgroups", "Groups this broker coordinates.")
	descNumOffsets       = gaugeDesc("kafka_coordinator_group_groupmetadatamanager_numoffsets", "Committed offsets of the groups this broker coordinates.")
	descCleanTime        = gaugeDesc("kafka_log_logcleaner_max_clean_time_secs", "Longest of the last cleaning rounds of the compacted logs here, in seconds.")
	descRecopy           = gaugeDesc("kafka_log_logcleaner_cleaner_recopy_percent", "Bytes written as a percentage of bytes read by the latest cleaning round.")
	descUncleanable      = gaugeDesc("kafka_log_logcleanermanager_uncleanable_partitions_count", "Compacted logs whose last cleaning round failed.")
	// Kafka 4.x's GroupCoordinatorMetrics (group-coordinator-metrics), by
	// group type; the rate meters are rate() of the counts here.
	descGroupCount         = gaugeDesc("kafka_server_group_coordinator_metrics_group_count", "Groups this broker coordinates, by rebalance protocol (classic, consumer).", "protocol")
	descConsumerGroupCount = gaugeDesc("kafka_server_group_coordinator_metrics_consumer_group_count", "Consumer groups (KIP-848) this broker coordinates, by state (Empty, Assigning, Reconciling, Stable, Dead).", "state")
	descClassicRebalances  = prometheus.NewDesc("kafka_server_group_coordinator_metrics_group_completed_rebalance_count", "Rebalances of classic groups completed here (a SyncGroup that made the group Stable).", nil, nil)
	descConsumerRebalances = prometheus.NewDesc("kafka_server_group_coordinator_metrics_consumer_group_rebalance_count", "Rebalances of consumer groups (KIP-848) here: bumps of a group epoch.", nil, nil)
	descShareGroupCount    = gaugeDesc("kafka_server_group_coordinator_metrics_share_group_count", "Share groups (KIP-932) this broker coordinates, by state (Empty, Stable, Dead).", "state")
	descShareRebalances    = prometheus.NewDesc("kafka_server_group_coordinator_metrics_share_group_rebalance_count", "Rebalances of share groups (KIP-932) here: bumps of a group epoch.", nil, nil)
	descShareDLQWritten    = prometheus.NewDesc("sluice_share_dlq_written_total", "Records of share groups written to their dead-letter topics (KIP-1191).", nil, nil)
	descShareDLQSkipped    = prometheus.NewDesc("sluice_share_dlq_skipped_total", "Dead letters of share groups skipped: the dead-letter topic is missing (and not auto-created) or not led here.", nil, nil)
	descMembersByType      = gaugeDesc("sluice_group_coordinator_members", "Members of the groups this broker coordinates, by rebalance protocol (classic, consumer); Kafka has no such gauge.", "protocol")
	descTxns               = gaugeDesc("sluice_transaction_coordinator_transactions", "Transactional ids this broker coordinates, by state (Ongoing, PrepareCommit, ...).", "state")

	// Accept delays of max.connection.creation.rate (Kafka's
	// socket-server-metrics connection-accept-throttle-time{listener}, an
	// average of the non-zero delays: rate(time)/rate(throttled) here).
	descAcceptThrottled    = prometheus.NewDesc("kafka_server_socket_server_metrics_connection_accept_throttled_total", "Connections whose accept a connection creation rate delayed (max.connection.creation.rate, listener.name.<l>.max.connection.creation.rate).", []string{"listener"}, nil)
	descAcceptThrottleTime = prometheus.NewDesc("kafka_server_socket_server_metrics_connection_accept_throttle_time_ms_total", "Milliseconds of those delays, summed (Kafka's connection-accept-throttle-time is their average).", []string{"listener"}, nil)
	// Failed-login limit (auth/loginlimit): Sluice's own, Kafka has none.
	descLoginRefused = prometheus.NewDesc("sluice_failed_authentication_refused_total", "Logins refused without being checked, from addresses over max.failed.authentications.per.ip (Kafka listeners and the HTTP side together).", nil, nil)
	descLoginTracked = gaugeDesc("sluice_failed_authentication_tracked_addresses", "Client addresses (IPv6: /64 prefixes) whose failed logins are being counted.")
	// The request memory pool (KIP-72, queued.max.request.bytes): Kafka's
	// kafka.network:type=SocketServer,name=MemoryPoolUsed and
	// MemoryPoolAvailable. Available is left out when the pool is
	// unbounded (Kafka reports Long.MAX_VALUE there).
	descPoolUsed      = gaugeDesc("kafka_network_socketserver_memorypoolused", "Bytes of request memory in use: the buffers of requests being read or handled (queued.max.request.bytes bounds them).")
	descPoolAvailable = gaugeDesc("kafka_network_socketserver_memorypoolavailable", "Bytes of request memory left under queued.max.request.bytes.")
)

// groupStateGauges are Kafka's NumGroups<State> gauges by state name.
var groupStateGauges = map[string]*prometheus.Desc{
	"PreparingRebalance":  gaugeDesc("kafka_coordinator_group_groupmetadatamanager_numgroupspreparingrebalance", "Groups preparing a rebalance."),
	"CompletingRebalance": gaugeDesc("kafka_coordinator_group_groupmetadatamanager_numgroupscompletingrebalance", "Groups completing a rebalance."),
	"Stable":              gaugeDesc("kafka_coordinator_group_groupmetadatamanager_numgroupsstable", "Stable groups."),
	"Dead":                gaugeDesc("kafka_coordinator_group_groupmetadatamanager_numgroupsdead", "Dead groups."),
	"Empty":               gaugeDesc("kafka_coordinator_group_groupmetadatamanager_numgroupsempty", "Empty groups."),
}

// stateCollector computes the state gauges at scrape time.
type stateCollector struct {
	s *Server
	// remote caches the end offsets of partitions without a replica here
	// (metrics_lag.go).
	remote remoteEnds
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPartitionCount, descLeaderCount, descUnderReplicated, descUnderMinISR, descOfflineReplicas,
		descOfflineLogDirs, descLogDirOffline, descFetchSessions, descFetchSessParts, descFetchSessEvicted, descActiveController, descOfflinePartition, descGlobalTopics, descGlobalPartitions,
		descLogSize, descLogStart, descLogEnd, descLogSegments, descSuppressed, descLagSuppressed, descGroupsSuppressed,
		descGroupOffset, descGroupLag, descGroupLagSum, descGroupMembers, descNumGroups, descNumOffsets,
		descGroupCount, descConsumerGroupCount, descClassicRebalances, descConsumerRebalances, descMembersByType,
		descShareGroupCount, descShareRebalances, descShareDLQWritten, descShareDLQSkipped,
		descCleanTime, descRecopy, descUncleanable, descTxns,
		descAcceptThrottled, descAcceptThrottleTime, descLoginRefused, descLoginTracked, descPoolUsed, descPoolAvailable} {
		ch <- d
	}
	for _, d := range shareStatDescs { // metrics_share.go
		ch <- d
	}
	for _, d := range groupStateGauges {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		for i := range labels {
			labels[i] = metrics.LabelValue(labels[i])
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	topics := s.rm.Topics()
	local := 0
	for _, t := range topics {
		for _, p := range t.Parts {
			if p != nil {
				local++
			}
		}
	}
	limit := s.cfg.MetricsPartitionSeriesMax
	perPartition := limit > 0 && local <= limit
	suppressed := 0.0
	if !perPartition {
		suppressed = 1
	}
	gauge(descSuppressed, suppressed)

	var leaders, under, underMin, offline int
	for _, t := range topics {
		for _, p := range t.Parts {
			if p == nil {
				continue
			}
			if p.Failure() != nil {
				offline++ // as /readyz counts it (readiness.go)
			}
			if p.IsLeader() {
				leaders++
				replicas, isr, minISR := p.ReplicaCounts()
				if isr < replicas {
					under++
				}
				if isr < minISR {
					underMin++
				}
			}
			if !perPartition {
				continue
			}
			part := strconv.Itoa(int(p.Index()))
			gauge(descLogSize, float64(p.Size()), t.Name, part)
			gauge(descLogStart, float64(p.LogStart()), t.Name, part) // Kafka's logStartOffset, below the local start on a tiered partition
			gauge(descLogEnd, float64(p.LogEndOffset()), t.Name, part)
			if n, ok := p.Segments(); ok {
				gauge(descLogSegments, float64(n), t.Name, part)
			}
		}
	}
	gauge(descPartitionCount, float64(local))
	gauge(descLeaderCount, float64(leaders))
	gauge(descUnderReplicated, float64(under))
	gauge(descUnderMinISR, float64(underMin))
	gauge(descOfflineReplicas, float64(offline+s.rm.OfflinePartitionCount()))
	dirs, dirOffline := s.rm.LogDirPaths()
	offlineDirs := 0
	for i, d := range dirs {
		v := 0.0
		if dirOffline[i] {
			v, offlineDirs = 1, offlineDirs+1
		}
		gauge(descLogDirOffline, v, d)
	}
	gauge(descOfflineLogDirs, float64(offlineDirs))
	sessions, sessParts, evicted := s.fetchSessions.stats()
	gauge(descFetchSessions, float64(sessions))
	gauge(descFetchSessParts, float64(sessParts))
	ch <- prometheus.MustNewConstMetric(descFetchSessEvicted, prometheus.CounterValue, float64(evicted))

	cs := s.md.controllerStats()
	active := 0.0
	if cs.Active {
		active = 1
	}
	gauge(descActiveController, active)
	gauge(descOfflinePartition, float64(cs.OfflinePartitions))
	gauge(descGlobalTopics, float64(cs.Topics))
	gauge(descGlobalPartitions, float64(cs.Partitions))

	for _, a := range s.limits.throttleStats() {
		ch <- prometheus.MustNewConstMetric(descAcceptThrottled, prometheus.CounterValue, float64(a.throttled), a.listener)
		ch <- prometheus.MustNewConstMetric(descAcceptThrottleTime, prometheus.CounterValue, float64(a.time.Milliseconds()), a.listener)
	}
	ch <- prometheus.MustNewConstMetric(descLoginRefused, prometheus.CounterValue, float64(s.failedLogins.RefusedTotal()))
	gauge(descLoginTracked, float64(s.failedLogins.Len()))
	poolUsed, poolLimit := s.limits.poolUsage()
	gauge(descPoolUsed, float64(poolUsed))
	if poolLimit > 0 {
		gauge(descPoolAvailable, float64(max(poolLimit-poolUsed, 0)))
	}

	c.collectGroups(ch, limit)
	c.collectShare(ch, limit) // metrics_share.go
	c.collectCleaner(ch)
	txns := s.txn.CountByState()
	for st := txn.Empty; st <= txn.PrepareEpochFence; st++ {
		if st != txn.Dead {
			gauge(descTxns, float64(txns[st]), st.String())
		}
	}
}

// maxExportedGroups bounds the groups in kafka_consumergroup_lag_sum and
// _members: group ids are the client's to choose, and one client could
// otherwise add series without end by committing under new ids.
const maxExportedGroups = 1000

// exportedGroups sorts groups into the order of export (groups with
// members first, so that empty groups minted by a client cannot push live
// ones out; then by name) and returns the first maxExportedGroups.
func exportedGroups(groups []group.GroupStats) []group.GroupStats {
	sort.Slice(groups, func(i, j int) bool {
		if (groups[i].Members > 0) != (groups[j].Members > 0) {
			return groups[i].Members > 0
		}
		return groups[i].Name < groups[j].Name
	})
	return groups[:min(len(groups), maxExportedGroups)]
}

// collectGroups emits the consumer-group gauges of the groups coordinated
// here, with the lag over the high watermarks of the partitions they
// committed to: the local replica's where it leads, else the leader's
// (metrics_lag.go). Only those partitions are looked up, not every
// partition here (a scrape at 100,000 partitions and a few groups would
// otherwise build a map of them all). limit is
// metrics.partition.series.max.
func (c *stateCollector) collectGroups(ch chan<- prometheus.Metric, limit int) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		for i := range labels {
			labels[i] = metrics.LabelValue(labels[i])
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	groups := c.s.groups.Stats()
	byState := map[string]int{}         // classic groups
	consumerByState := map[string]int{} // consumer groups
	shareByState := map[string]int{}    // share groups
	count := map[string]int{}           // group type -> groups
	members := map[string]int{}         // group type -> members
	offsets := 0
	for _, g := range groups {
		if g.Type == group.ConsumerGroupType {
			consumerByState[g.State]++
		} else if g.Type == group.ShareGroupType {
			shareByState[g.State]++
		} else {
			byState[g.State]++
		}
		count[g.Type]++
		members[g.Type] += g.Members
		offsets += len(g.Offsets)
	}
	// Kafka 4.x's NumGroups and NumGroups<State> count classic groups.
	gauge(descNumGroups, float64(count[group.ClassicGroupType]))
	gauge(descNumOffsets, float64(offsets))
	for state, d := range groupStateGauges {
		gauge(d, float64(byState[state]))
	}
	for _, t := range []string{group.ClassicGroupType, group.ConsumerGroupType, group.ShareGroupType} {
		gauge(descGroupCount, float64(count[t]), t)
		gauge(descMembersByType, float64(members[t]), t)
	}
	for _, st := range []string{"Empty", "Assigning", "Reconciling", "Stable", "Dead"} {
		gauge(descConsumerGroupCount, float64(consumerByState[st]), st)
	}
	rb := c.s.groups.Rebalances()
	ch <- prometheus.MustNewConstMetric(descClassicRebalances, prometheus.CounterValue, float64(rb.ClassicCompleted))
	ch <- prometheus.MustNewConstMetric(descConsumerRebalances, prometheus.CounterValue, float64(rb.Consumer))
	for _, st := range []string{"Empty", "Stable", "Dead"} {
		gauge(descShareGroupCount, float64(shareByState[st]), st)
	}
	ch <- prometheus.MustNewConstMetric(descShareRebalances, prometheus.CounterValue, float64(c.s.groups.ShareRebalances()))
	if sd := c.s.share; sd != nil {
		ch <- prometheus.MustNewConstMetric(descShareDLQWritten, prometheus.CounterValue, float64(sd.dlqWritten.Load()))
		ch <- prometheus.MustNewConstMetric(descShareDLQSkipped, prometheus.CounterValue, float64(sd.dlqSkipped.Load()))
	}

	all := len(groups)
	groups = exportedGroups(groups)
	gauge(descGroupsSuppressed, float64(all-len(groups)))
	pairs := 0 // group x partition: the per-partition lag series
	// hw: the high watermarks of the partitions led here that the groups
	// committed to; missing: the others.
	hw := map[metastore.TopicPartition]int64{}
	var missing []metastore.TopicPartition
	seen := map[metastore.TopicPartition]bool{}
	for _, g := range groups {
		pairs += len(g.Offsets)
		for tp := range g.Offsets {
			if seen[tp] {
				continue
			}
			seen[tp] = true
			if p := c.s.rm.Partition(tp.Topic, tp.Partition); p != nil && p.IsLeader() {
				hw[tp] = p.HighWatermark()
			} else {
				missing = append(missing, tp)
			}
		}
	}
	perPartition := limit > 0 && pairs <= limit
	lagSuppressed := 0.0
	if !perPartition {
		lagSuppressed = 1
	}
	gauge(descLagSuppressed, lagSuppressed)
	if len(missing) > 0 {
		for tp, end := range c.remote.lookup(c.s, missing) {
			hw[tp] = end
		}
	}
	for _, g := range groups {
		gauge(descGroupMembers, float64(g.Members), g.Name)
		sums := map[string]int64{}
		for tp, committed := range g.Offsets {
			end, ok := hw[tp]
			if !ok {
				continue // unknown partition, or its leader did not answer
			}
			lag := max(end-committed, 0)
			sums[tp.Topic] += lag
			if perPartition {
				part := strconv.Itoa(int(tp.Partition))
				gauge(descGroupOffset, float64(committed), g.Name, tp.Topic, part)
				gauge(descGroupLag, float64(lag), g.Name, tp.Topic, part)
			}
		}
		for topic, sum := range sums {
			gauge(descGroupLagSum, float64(sum), g.Name, topic)
		}
	}
}

// collectCleaner emits the cleaner gauges from the cleaner's status of
// each compacted log here (nothing when the cleaner is off).
func (c *stateCollector) collectCleaner(ch chan<- prometheus.Metric) {
	s := c.s
	if !s.rm.Cleaning() {
		return
	}
	var maxTook float64
	var recopy float64
	var latest time.Time // the end of the latest round seen
	uncleanable := 0
	for _, t := range s.rm.Topics() {
		if !t.Config.Log.Compact {
			continue
		}
		for _, p := range t.Parts {
			if p == nil {
				continue
			}
			st, ok := s.rm.CleanerStatus(t, p)
			if !ok {
				continue
			}
			if st.LastError != "" {
				uncleanable++
				continue
			}
			if st.LastCleaned.IsZero() {
				continue
			}
			maxTook = max(maxTook, st.LastResult.Took.Seconds())
			if st.LastCleaned.After(latest) {
				latest = st.LastCleaned
				if r := st.LastResult.Stats; r.BytesRead > 0 {
					recopy = 100 * float64(r.BytesWritten) / float64(r.BytesRead)
				} else {
					recopy = 0
				}
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(descCleanTime, prometheus.GaugeValue, maxTook)
	ch <- prometheus.MustNewConstMetric(descRecopy, prometheus.GaugeValue, recopy)
	ch <- prometheus.MustNewConstMetric(descUncleanable, prometheus.GaugeValue, float64(uncleanable))
}

// controllerStats: a single node is its own controller and leads every
// partition; one whose log has failed is offline (as /readyz says).
func (lp localPlane) controllerStats() metadata.ControllerStats {
	st := metadata.ControllerStats{Active: true}
	for _, t := range lp.s.rm.Topics() {
		st.Topics++
		st.Partitions += len(t.Parts)
		for _, p := range t.Parts {
			if p == nil || p.Failure() != nil {
				st.OfflinePartitions++
			}
		}
	}
	return st
}

// controllerStats: the controller's own view; zero unless this broker is
// the active controller.
func (zp *zkPlane) controllerStats() metadata.ControllerStats { return zp.node.ControllerStats() }

// errorCodeField[key] is the index of the top-level ErrorCode field of
// API key's kmsg response struct, -1 when it has none.
var errorCodeField = func() (out [128]int) {
	for key := range out {
		out[key] = -1
		resp := kmsg.ResponseForKey(int16(key))
		if resp == nil {
			continue
		}
		t := reflect.TypeOf(resp)
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			continue
		}
		if f, ok := t.Elem().FieldByName("ErrorCode"); ok && len(f.Index) == 1 && f.Type.Kind() == reflect.Int16 {
			out[key] = f.Index[0]
		}
	}
	return out
}()

// countResponseErrors counts the error codes of an answer of API key
// (Kafka's ErrorsPerSec): a produce's per partition, another API's
// top-level code when its response has one. No allocation: the field is
// found by index.
func countResponseErrors(api *metrics.API, key int16, resp kmsg.Response) {
	if api == nil {
		return
	}
	if r, ok := resp.(*kmsg.ProduceResponse); ok {
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				api.Error(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
		return
	}
	if key < 0 || int(key) >= len(errorCodeField) || errorCodeField[key] < 0 {
		return
	}
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().NumField() <= errorCodeField[key] {
		return
	}
	if f := v.Elem().Field(errorCodeField[key]); f.Kind() == reflect.Int16 {
		api.Error(int16(f.Int()))
	}
}
