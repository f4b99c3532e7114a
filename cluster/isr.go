package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// WritePartitionState is how a partition leader changes its ISR in
// ZooKeeper mode (Kafka's Partition.shrinkIsr/expandIsr before KIP-497):
// it writes st to the partition's state znode if the znode is still at
// expectedZkVersion (the ZKVersion of the LeaderAndIsr request it acts on,
// or the version this call last returned) and, in the same multi-op,
// creates an /isr_change_notification entry so the controller broadcasts
// the change. st.ControllerEpoch should be the controller epoch of the
// LeaderAndIsr request the leader acts on; st.LeaderEpoch must not change.
// Returns the new znode version, or ErrVersionConflict when someone (the
// controller) wrote the state meanwhile: the leader must wait for the
// controller's LeaderAndIsr rather than retry blindly.
func (n *Node) WritePartitionState(ctx context.Context, topic string, partition int32, st PartitionState, expectedZkVersion int32) (int32, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	note, _ := jsonMarshal(isrChangeNotification{Version: 1, Partitions: []TopicPartition{{Topic: topic, Partition: partition}}})
	path := partitionStatePath(topic, partition)
	res, err := n.zk.multi(
		&zk.SetDataRequest{Path: path, Data: encodePartitionState(st), Version: expectedZkVersion},
		&zk.CreateRequest{Path: isrChangePath + "/" + isrChangePrefix, Data: note, Flags: zk.FlagSequence},
	)
	switch {
	case err == nil:
		return res[0].Stat.Version, nil
	case errors.Is(err, zk.ErrBadVersion):
		return 0, fmt.Errorf("%w: %s not at version %d", ErrVersionConflict, path, expectedZkVersion)
	case errors.Is(err, zk.ErrNoNode):
		return 0, fmt.Errorf("%w: %s-%d", ErrTopicNotFound, topic, partition)
	default:
		return 0, fmt.Errorf("cluster: write %s: %w", path, err)
	}
}

// ReadPartitionState reads a partition's state and its znode version from
// ZooKeeper (for a leader that lost track of the version).
func (n *Node) ReadPartitionState(topic string, partition int32) (PartitionState, int32, error) {
	path := partitionStatePath(topic, partition)
	data, stat, err := n.zk.get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return PartitionState{}, 0, fmt.Errorf("%w: %s-%d", ErrTopicNotFound, topic, partition)
	}
	if err != nil {
		return PartitionState{}, 0, fmt.Errorf("cluster: read %s: %w", path, err)
	}
	st, err := decodePartitionState(path, data)
	return st, stat.Version, err
}
