package tiered

// RemoteSizes returns, for partitions 0..partitions-1 of the topic with
// id and name, the bytes of their finished remote segments (Kafka's
// RemoteLogSizeBytes). Any broker answers for any partition in a cluster
// (each replays all of __remote_log_metadata); on a single node the
// metastore answers. ErrMetadataNotReady while the metadata loads.
func (m *Manager) RemoteSizes(id [16]byte, name string, partitions int) ([]int64, error) {
	out := make([]int64, partitions)
	for i := range out {
		rs, err := m.remote(TopicIDPartition{TopicID: id, Topic: name, Partition: int32(i)})
		if err != nil {
			return nil, err
		}
		out[i] = rs.bytes
	}
	return out, nil
}
