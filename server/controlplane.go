package server

// The control plane: what differs between a single-node broker and a member
// of a ZooKeeper cluster, in narrow parts, so that each API's handler (the
// NN_name.go files) is written once and never asks which mode it runs in:
//
//   - metadataView (Server.md): what handlers read: the brokers, the
//     controller, the topics and their partitions.
//   - topicAdmin (Server.admin): topic administration: create, delete,
//     add partitions, configs, leader elections.
//   - replica.Hooks: what the replica manager (package replica) tells a
//     cluster of its replicas' lives: their options, roles and stops.
//   - interBroker (Server.ib): the controller's requests and follower
//     fetches. Only a cluster has one: a single node's dispatch table lacks
//     LeaderAndIsr, StopReplica, UpdateMetadata and ControlledShutdown, so
//     a client sending one is closed as for any API Sluice does not serve.
//
// The modes:
//
//   - localPlane (this file): the broker is the whole cluster. Its view is
//     the replica manager's registry (this broker leads every partition,
//     the only replica and the whole ISR), and topic administration changes
//     the registry, the metastore and the logs at once.
//   - zkPlane (clustermode.go): the view is the metadata cache fed by the
//     controller's UpdateMetadata requests, administration writes to
//     ZooKeeper (the controller carries it out through LeaderAndIsr and
//     StopReplica), and it implements interBroker and replica.Hooks.
//
// The local replicas themselves (the registry, opening and closing
// partition logs, applying LeaderAndIsr and StopReplica to them) are the
// replica manager's in both modes.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replica"
)

// metadataView is what the handlers read of the cluster. Implementations
// are safe for concurrent use. Slices returned are the caller's.
type metadataView interface {
	// brokers returns the live brokers, never empty: at least this one.
	brokers() []metadata.Broker
	// controllerID returns the controller's broker id, -1 when unknown.
	controllerID() int32
	// topicNames returns every topic of the cluster, sorted.
	topicNames() []string
	// topicID returns a topic's id; false when the cluster has no such topic.
	topicID(name string) ([16]byte, bool)
	// partitions returns every partition of a topic in partition order
	// (nil: no such topic). Leader is -1 (or a broker not in brokers())
	// when the partition has no live leader.
	partitions(name string) []metadata.PartitionInfo
	// controllerStats is the controller's counts for the metrics
	// (kafka_controller_kafkacontroller_*).
	controllerStats() metadata.ControllerStats
}

// topicAdmin administers the cluster's topics. Implementations are safe
// for concurrent use; maps returned are the caller's.
type topicAdmin interface {
	// createTopic creates a validated topic (see checkNewTopic) with a
	// new id and returns it. It does not wait for leaders: callers watch
	// partitions() for that. cluster.ErrTopicExists or errTopicExists when
	// the name is taken.
	createTopic(ctx context.Context, spec topicSpec) ([16]byte, error)
	// deleteTopic deletes a topic (in cluster mode: requests the deletion
	// the controller carries out).
	deleteTopic(ctx context.Context, name string) error
	// addPartitions raises a topic's partition count to count; assignment
	// (nil: automatic) places the new partitions, validated by the caller.
	addPartitions(ctx context.Context, name string, count int32, assignment [][]int32) error
	// topicConfigs returns a topic's config overrides (never nil on
	// success); errUnknownTopicOrPartition or cluster.ErrTopicNotFound for a
	// topic the cluster does not have.
	topicConfigs(name string) (map[string]string, error)
	// setTopicConfigs replaces a topic's overrides (validated by the
	// caller) and applies them to the local replicas.
	// REQUIRES: s.rm.Lock held.
	setTopicConfigs(ctx context.Context, name string, overrides map[string]string) error
	// electLeaders runs a preferred (or unclean) election of tps (nil: all
	// partitions) and returns each partition's outcome; a non-nil error is
	// for the whole request (not the controller, timed out).
	electLeaders(ctx context.Context, tps []metadata.TopicPartition, unclean bool) (map[metadata.TopicPartition]error, error)
}

// coordinatorRoute is where the mode's coordinators are.
type coordinatorRoute interface {
	// findCoordinator answers FindCoordinator.
	findCoordinator(ctx context.Context, req *kmsg.FindCoordinatorRequest) (*kmsg.FindCoordinatorResponse, error)
}

// interBroker serves what only a cluster member is sent: the controller's
// requests and other brokers' follower fetches. Implementations are safe
// for concurrent use.
type interBroker interface {
	// acceptControllerRequest checks who sent a LeaderAndIsr, StopReplica
	// or UpdateMetadata request: the controller ZooKeeper names, at its
	// current epoch, addressing this broker's current registration
	// (brokerEpoch). Refusals: cluster.ErrStaleControllerEpoch,
	// cluster.ErrNotFromController, cluster.ErrStaleBrokerEpoch.
	acceptControllerRequest(controllerID, controllerEpoch int32, brokerEpoch int64) error
	// checkReplicaDelete refuses a StopReplica that would delete a local
	// replica the topic's assignment still places here (the controller
	// deletes only replicas of deleted topics or moved partitions).
	checkReplicaDelete(topic string, partition int32) error
	// checkFollower checks a follower fetch's sender: a registered broker
	// naming its current registration epoch (-1, none, is refused).
	checkFollower(replicaID int32, replicaEpoch int64) error
	// applyUpdateMetadata applies an UpdateMetadata request to the view.
	applyUpdateMetadata(r *kmsg.UpdateMetadataRequest) error
	// controlledShutdown serves a ControlledShutdown request (on the
	// controller): the partitions whose leadership could not be moved.
	controlledShutdown(brokerID int32, brokerEpoch int64) ([]metadata.TopicPartition, error)
	// liveLeaders records the leaders' addresses a LeaderAndIsr request
	// names, for followers that start before UpdateMetadata names them.
	liveLeaders(ls []kmsg.LeaderAndISRRequestLiveLeader)
}

// controlPlane is one mode, as New takes it apart: its view, its topic
// administration, where its coordinators are, and close, which stops its
// background work (the partitions are still open). A cluster's plane also
// implements interBroker and replica.Hooks.
type controlPlane interface {
	metadataView
	topicAdmin
	coordinatorRoute
	close()
}

var (
	// errClusterOnly refuses a follower fetch sent to a single-node
	// broker, which has no followers (CLUSTER_AUTHORIZATION_FAILED).
	errClusterOnly = errors.New("server: follower fetch refused: this broker is not in a cluster (no zookeeper.connect)")
	// errStaleControllerEpoch: a controller request from an older epoch.
	errStaleControllerEpoch = errors.New("server: stale controller epoch")
)

// errNotControlPlaneListener refuses a controller request that came in on
// another listener than control.plane.listener.name.
var errNotControlPlaneListener = errors.New("server: controller requests are served only on control.plane.listener.name")

// logRefused logs a refused inter-broker request with who sent it.
func (rc *reqCtx) logRefused(log *slog.Logger, req kmsg.Request, controllerID, controllerEpoch int32, err error) {
	from := ""
	if rc.conn != nil {
		from = rc.conn.nc.RemoteAddr().String()
	}
	log.Warn("server: refused "+kmsg.NameForKey(req.Key()), "from", from, "client_id", rc.clientID,
		"controller", controllerID, "controller_epoch", controllerEpoch, "err", err)
}

// localPlane is the control plane of a single-node broker.
type localPlane struct{ s *Server }

func (lp localPlane) brokers() []metadata.Broker { return []metadata.Broker{lp.s.self} }

func (lp localPlane) controllerID() int32 { return lp.s.nodeID }

func (lp localPlane) topicNames() []string {
	ts := lp.s.rm.Topics()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}

func (lp localPlane) topicID(name string) ([16]byte, bool) {
	if t := lp.s.rm.Topic(name); t != nil {
		return t.ID, true
	}
	return [16]byte{}, false
}

func (lp localPlane) partitions(name string) []metadata.PartitionInfo {
	t := lp.s.rm.Topic(name)
	if t == nil {
		return nil
	}
	id := lp.s.nodeID
	out := make([]metadata.PartitionInfo, len(t.Parts))
	for i, p := range t.Parts {
		if p == nil {
			// Its log dir failed: no leader, as Kafka's controller
			// leaves a partition whose only replica is offline.
			out[i] = metadata.PartitionInfo{
				Topic: name, Partition: int32(i), TopicID: t.ID, Leader: -1,
				Replicas: []int32{id}, ISR: []int32{id}, OfflineReplicas: []int32{id},
			}
			continue
		}
		out[i] = metadata.PartitionInfo{
			Topic: name, Partition: int32(i), TopicID: t.ID, Leader: id, LeaderEpoch: p.LeaderEpoch(),
			Replicas: []int32{id}, ISR: []int32{id}, OfflineReplicas: []int32{},
		}
	}
	return out
}

func (lp localPlane) createTopic(_ context.Context, spec topicSpec) ([16]byte, error) {
	s := lp.s
	s.rm.Lock()
	defer s.rm.Unlock()
	if s.rm.Topic(spec.name) != nil { // created since the caller checked
		return [16]byte{}, fmt.Errorf("%w: topic %q already exists", errTopicExists, spec.name)
	}
	t, err := s.rm.CreateTopicLocked(metastore.Topic{
		Name: spec.name, ID: newTopicID(), Partitions: spec.partitions, ReplicationFactor: spec.rf, Configs: spec.configs,
	})
	if err != nil {
		return [16]byte{}, err
	}
	return t.ID, nil
}

func (lp localPlane) deleteTopic(_ context.Context, name string) error {
	return lp.withTopic(name, func(t *replica.Topic) error {
		err := lp.s.rm.DeleteTopicLocked(t)
		lp.s.topicDeletedRemote(t) // tiered storage (tiered.go)
		return err
	})
}

func (lp localPlane) addPartitions(_ context.Context, name string, count int32, _ [][]int32) error {
	return lp.withTopic(name, func(t *replica.Topic) error { return lp.s.rm.AddPartitionsLocked(t, count) })
}

// withTopic runs fn on topic name with s.rm.Lock held.
func (lp localPlane) withTopic(name string, fn func(*replica.Topic) error) error {
	s := lp.s
	s.rm.Lock()
	defer s.rm.Unlock()
	t := s.rm.Topic(name)
	if t == nil {
		return errUnknownTopicOrPartition
	}
	return fn(t)
}

func (lp localPlane) topicConfigs(name string) (map[string]string, error) {
	t := lp.s.rm.Topic(name)
	if t == nil {
		if err := validateTopicName(name); err != nil {
			return nil, err
		}
		return nil, errUnknownTopicOrPartition
	}
	if t.Meta.Configs == nil {
		return map[string]string{}, nil
	}
	return t.Meta.Configs, nil
}

func (lp localPlane) setTopicConfigs(_ context.Context, name string, overrides map[string]string) error {
	t := lp.s.rm.Topic(name)
	if t == nil {
		return errUnknownTopicOrPartition
	}
	return lp.s.rm.SetTopicConfigsLocked(t, overrides)
}

// electLeaders: a single broker leads every partition and is each one's
// only replica, so no election is ever needed.
func (lp localPlane) electLeaders(_ context.Context, tps []metadata.TopicPartition, _ bool) (map[metadata.TopicPartition]error, error) {
	s := lp.s
	if tps == nil {
		for _, t := range s.rm.Topics() {
			for p := range t.Parts {
				tps = append(tps, metadata.TopicPartition{Topic: t.Name, Partition: int32(p)})
			}
		}
	}
	results := make(map[metadata.TopicPartition]error, len(tps))
	for _, tp := range tps {
		if s.rm.Partition(tp.Topic, tp.Partition) == nil {
			results[tp] = cluster.ErrTopicNotFound
		} else {
			results[tp] = cluster.ErrElectionNotNeeded
		}
	}
	return results, nil
}

// findCoordinator: the group coordinator answers with this broker, which
// leads every __consumer_offsets partition (created on the first request,
// offsets_topic_find.go).
func (lp localPlane) findCoordinator(ctx context.Context, req *kmsg.FindCoordinatorRequest) (*kmsg.FindCoordinatorResponse, error) {
	lp.s.localOffsetsReady(ctx)
	resp, err := lp.s.groups.Handle(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.FindCoordinatorResponse), nil
}

func (lp localPlane) close() {}
