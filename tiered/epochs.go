package tiered

import (
	"sort"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/replica"
)

// RemoteEpochForOffset returns the leader epoch of offset in p's remote
// tier, from the leader epochs of the finished remote segment holding it
// (Kafka answers it from a leader epoch cache that still covers the
// remote tier; a Sluice log's cache starts at its local log start, so the
// remote segment metadata is what knows the epochs below). ok is false
// when the topic is not tiered or no remote segment holds offset.
func (m *Manager) RemoteEpochForOffset(t *replica.Topic, p *replica.Partition, offset int64) (epoch int32, ok bool, err error) {
	if !m.TopicTiering(t).Enable {
		return -1, false, nil
	}
	rs, err := m.remote(m.partitionOf(t, p.Index()))
	if err != nil {
		return -1, false, err
	}
	i := sort.Search(len(rs.segs), func(i int) bool { return rs.segs[i].EndOffset >= offset })
	if i == len(rs.segs) || rs.segs[i].StartOffset > offset {
		return -1, false, nil
	}
	epoch, ok = engine.EpochForOffset(rs.segs[i].LeaderEpochs, offset)
	return epoch, ok, nil
}
