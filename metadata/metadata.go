// Package metadata holds the neutral types of cluster metadata: brokers,
// partitions and their state, as a single node and a ZooKeeper cluster
// (package cluster) both describe them to the protocol handlers. It
// depends on nothing in Sluice.
package metadata

import (
	"net"
	"strconv"
)

// Broker is a live broker as the cluster knows it.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack string // "" when none
	// Epoch is the broker epoch: the creation zxid of its registration
	// znode, which changes on every registration (Kafka's KIP-380); 0 on
	// a single node.
	Epoch int64
	// Endpoints are the registration's listeners by name (host:port);
	// nil for a broker known from UpdateMetadata, and on a single node.
	Endpoints map[string]string
}

// EndpointFor returns the broker's host and port on listener.
func (b Broker) EndpointFor(listener string) (string, int32, bool) {
	hp, ok := b.Endpoints[listener]
	if !ok || listener == "" {
		return "", 0, false
	}
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, false
	}
	return h, int32(n), true
}

// AddrFor returns the broker's address on listener (its Addr when listener
// is "" or not registered).
func (b Broker) AddrFor(listener string) string {
	if a, ok := b.Endpoints[listener]; ok && listener != "" {
		return a
	}
	return b.Addr()
}

// Addr is "host:port".
func (b Broker) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))) }

// PartitionInfo is a partition's state: who leads it, at which epoch,
// its replicas and in-sync replicas.
type PartitionInfo struct {
	Topic           string
	Partition       int32
	TopicID         [16]byte
	ControllerEpoch int32
	Leader          int32 // -1: offline
	LeaderEpoch     int32
	ISR             []int32
	Replicas        []int32
	OfflineReplicas []int32
	ZkVersion       int32 // the state znode's version (cluster mode)
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// ControllerStats is what the controller knows of the cluster, for the
// broker's kafka_controller_kafkacontroller_* gauges. Only the active
// controller reports counts; elsewhere they are 0, as in Kafka.
type ControllerStats struct {
	Active bool
	// Topics and Partitions count what the controller manages;
	// OfflinePartitions those without a live leader.
	Topics, Partitions, OfflinePartitions int
}
