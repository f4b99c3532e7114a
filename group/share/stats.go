package share

// Stats counts what happened to a share partition's records on this
// broker, for the metrics (kafka_server_share_group_metrics_*): plain
// counters bumped under the partition's lock, no allocation per record.
type Stats struct {
	Acquired          uint64 // deliveries handed out (ShareFetch)
	Accepted          uint64 // acknowledged with Accept
	Released          uint64 // given back: Release acknowledgements and members gone
	Rejected          uint64 // acknowledged with Reject
	Archived          uint64 // records archived: rejected, at the delivery-count limit, aborted
	LockExpiries      uint64 // acquisition locks that ran out
	DeliveryLimitHits uint64 // records archived because they reached the delivery-count limit
}

// Stats returns p's counters.
func (p *Partition) Stats() Stats { return p.stats }

// KeepStats sets p's counters to s: a partition replacing another (a
// reset) continues its counts, which never go back.
func (p *Partition) KeepStats(s Stats) { p.stats = s }
