package server

// Share partition counters (group/share Stats), per group and partition,
// Sluice's own names (Kafka 4.2's ShareGroupMetrics are per broker and
// ack type, without the partition): see docs/metrics.md. Read at scrape
// time under each partition's lock; nothing is counted per record beyond
// the partition's own counters.

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/metrics"
)

var shareLabels = []string{"group", "topic", "partition"}

var (
	descShareAcquired   = prometheus.NewDesc("sluice_share_partition_acquired_records_total", "Records delivered to share group members (acquired), per share partition; a redelivery counts again.", shareLabels, nil)
	descShareAccepted   = prometheus.NewDesc("sluice_share_partition_accepted_records_total", "Records acknowledged with Accept, per share partition.", shareLabels, nil)
	descShareReleased   = prometheus.NewDesc("sluice_share_partition_released_records_total", "Records given back: acknowledged with Release, or held by a member that left or whose connection closed.", shareLabels, nil)
	descShareRejected   = prometheus.NewDesc("sluice_share_partition_rejected_records_total", "Records acknowledged with Reject, per share partition.", shareLabels, nil)
	descShareArchived   = prometheus.NewDesc("sluice_share_partition_archived_records_total", "Records archived: rejected, at the delivery-count limit, or of an aborted transaction under read_committed.", shareLabels, nil)
	descShareLockExpiry = prometheus.NewDesc("sluice_share_partition_lock_expiries_total", "Acquisition locks that ran out before an acknowledgement, per share partition.", shareLabels, nil)
	descShareLimitHits  = prometheus.NewDesc("sluice_share_partition_delivery_count_limit_hits_total", "Records archived because they reached the delivery-count limit, per share partition.", shareLabels, nil)
	shareStatDescs      = []*prometheus.Desc{descShareAcquired, descShareAccepted, descShareReleased, descShareRejected, descShareArchived, descShareLockExpiry, descShareLimitHits}
)

// collectShare emits the counters of the share partitions held here,
// when there are at most limit (metrics.partition.series.max) of them.
func (c *stateCollector) collectShare(ch chan<- prometheus.Metric, limit int) {
	s := c.s
	if s.share == nil || limit <= 0 {
		return
	}
	type row struct {
		k  share.Key
		st share.Stats
	}
	var rows []row
	s.share.parts.Each("", func(k share.Key, h *share.Held) {
		h.Lock()
		rows = append(rows, row{k, h.P.Stats()})
		h.Unlock()
	})
	// Partitions forgotten while their group is idle here keep their
	// series (shareGroupIdle).
	s.share.dlqMu.Lock()
	for k, st := range s.share.idleStats {
		if s.share.parts.Lookup(k) == nil {
			rows = append(rows, row{k, st})
		}
	}
	s.share.dlqMu.Unlock()
	if len(rows) > limit {
		return
	}
	for _, r := range rows {
		t := s.rm.TopicByID(r.k.Topic)
		if t == nil {
			continue
		}
		labels := []string{metrics.LabelValue(r.k.Group), metrics.LabelValue(t.Name), strconv.Itoa(int(r.k.Partition))}
		for i, v := range []uint64{r.st.Acquired, r.st.Accepted, r.st.Released, r.st.Rejected, r.st.Archived, r.st.LockExpiries, r.st.DeliveryLimitHits} {
			ch <- prometheus.MustNewConstMetric(shareStatDescs[i], prometheus.CounterValue, float64(v), labels...)
		}
	}
}
