package cluster

import "errors"

// Errors. The server maps them to Kafka error codes when it answers.
var (
	// ErrInconsistentClusterID: the broker's data belongs to another
	// cluster than the one whose /cluster/id ZooKeeper holds (Kafka's
	// InconsistentClusterIdException).
	ErrInconsistentClusterID = errors.New("cluster: inconsistent cluster id")
	// ErrElectionNotNeeded: ElectLeaders found the partition already led by
	// the replica the election would choose.
	ErrElectionNotNeeded = errors.New("cluster: leader election not needed")
	// ErrPreferredLeaderNotAvailable: the preferred replica is not live or
	// not in sync, so a preferred election cannot pick it.
	ErrPreferredLeaderNotAvailable = errors.New("cluster: preferred leader not available")
	// ErrEligibleLeadersNotAvailable: an unclean election found no live
	// replica.
	ErrEligibleLeadersNotAvailable = errors.New("cluster: no eligible leader available")
	// ErrBrokerIDInUse: another live broker is registered with this id.
	ErrBrokerIDInUse = errors.New("cluster: broker id already registered by a live broker")
	// ErrTopicExists: the topic exists or is being deleted.
	ErrTopicExists = errors.New("cluster: topic already exists")
	// ErrTopicNotFound: no such topic.
	ErrTopicNotFound = errors.New("cluster: unknown topic")
	// ErrInvalidReplicationFactor: the replication factor is < 1 or larger
	// than the number of live brokers.
	ErrInvalidReplicationFactor = errors.New("cluster: invalid replication factor")
	// ErrInvalidReplicaAssignment: a manual replica assignment with an
	// uneven replication factor, a broker twice, or a broker not live.
	ErrInvalidReplicaAssignment = errors.New("cluster: invalid replica assignment")
	// ErrInvalidPartitions: a partition count < 1, or not above the current
	// count for AddPartitions.
	ErrInvalidPartitions = errors.New("cluster: invalid number of partitions")
	// ErrInvalidTopic: a topic name Kafka would refuse.
	ErrInvalidTopic = errors.New("cluster: invalid topic name")
	// ErrVersionConflict: a partition state changed since the version the
	// writer read (WritePartitionState); re-read and retry.
	ErrVersionConflict = errors.New("cluster: partition state version conflict")
	// ErrNotController: this node is not the controller.
	ErrNotController = errors.New("cluster: not the controller")
	// ErrControllerMoved: a newer controller epoch fenced this controller.
	ErrControllerMoved = errors.New("cluster: controller moved (stale controller epoch)")
	// ErrBrokerNotAvailable: the broker named in a controlled shutdown is
	// not registered.
	ErrBrokerNotAvailable = errors.New("cluster: broker not available")
	// ErrStaleBrokerEpoch: a controlled shutdown named an old broker epoch.
	ErrStaleBrokerEpoch = errors.New("cluster: stale broker epoch")
	// ErrCorruptZnode: a znode's content could not be decoded.
	ErrCorruptZnode = errors.New("cluster: corrupt znode")
	// ErrClosed: the node is closed.
	ErrClosed = errors.New("cluster: node closed")
)
