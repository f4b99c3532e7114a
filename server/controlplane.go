package server

// The control plane: what differs between a single-node broker and a member
// of a ZooKeeper cluster, behind one interface, so that each API's handler
// (the NN_name.go files) is written once and never asks which mode it runs
// in.
//
//   - localPlane (this file): the broker is the whole cluster. Its view is
//     the local topic registry (this broker leads every partition, the only
//     replica and the whole ISR), topic administration changes the registry,
//     the metastore and the logs at once, and inter-broker requests are
//     refused.
//   - zkPlane (clustermode.go): the view is the metadata cache fed by the
//     controller's UpdateMetadata requests, administration writes to
//     ZooKeeper (the controller carries it out through LeaderAndIsr and
//     StopReplica), and the inter-broker requests are obeyed.
//
// The local replicas themselves (the topic registry, opening and closing
// partition logs, applying LeaderAndIsr and StopReplica to them) are the
// server's in both modes (replicas.go).

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/group"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
)

// controlPlane is the seam between the protocol handlers and the mode the
// broker runs in. Implementations are safe for concurrent use. Slices and
// maps returned are the caller's.
type controlPlane interface {
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
	// findCoordinator answers FindCoordinator.
	findCoordinator(ctx context.Context, req *kmsg.FindCoordinatorRequest) (*kmsg.FindCoordinatorResponse, error)
	// groupHooks returns the group coordinator's persistence hooks (all
	// nil: the metastore alone keeps group state).
	groupHooks() (group.OwnsFunc, group.PersistFunc, group.PersistGroupFunc)

	// interBrokerAPIs reports whether LeaderAndIsr, StopReplica,
	// UpdateMetadata and ControlledShutdown are served (and advertised).
	interBrokerAPIs() bool
	// acceptControllerRequest checks who sent a LeaderAndIsr, StopReplica
	// or UpdateMetadata request: the controller ZooKeeper names, at its
	// current epoch, addressing this broker's current registration
	// (brokerEpoch). Refusals: errClusterOnly on a single node,
	// cluster.ErrStaleControllerEpoch, cluster.ErrNotFromController,
	// cluster.ErrStaleBrokerEpoch.
	acceptControllerRequest(controllerID, controllerEpoch int32, brokerEpoch int64) error
	// checkReplicaDelete refuses a StopReplica that would delete a local
	// replica the topic's assignment still places here (the controller
	// deletes only replicas of deleted topics or moved partitions).
	checkReplicaDelete(topic string, partition int32) error
	// checkFollower checks a follower fetch's sender: a registered broker
	// naming its current registration epoch (-1, none, is refused in
	// cluster mode). errClusterOnly on a single node.
	checkFollower(replicaID int32, replicaEpoch int64) error
	// applyUpdateMetadata applies an UpdateMetadata request to the view.
	applyUpdateMetadata(r *kmsg.UpdateMetadataRequest) error
	// controlledShutdown serves a ControlledShutdown request (on the
	// controller): the partitions whose leadership could not be moved.
	controlledShutdown(brokerID int32, brokerEpoch int64) ([]metadata.TopicPartition, error)
	// topicAssignment returns a topic's id, replica assignment and config
	// overrides, for opening a local replica the controller names.
	topicAssignment(name string) (id [16]byte, assignment [][]int32, configs map[string]string, err error)
	// replicaOptions returns o with the mode's settings added, for a
	// local partition being opened. (By value: a pointer through this
	// interface made every partition's Options escape, ~240 bytes of
	// garbage per partition created.)
	replicaOptions(t *replica.Topic, o replication.Options) replication.Options
	// controllerStats is the controller's counts for the metrics
	// (kafka_controller_kafkacontroller_*).
	controllerStats() metadata.ControllerStats
	// liveLeaders records the leaders' addresses a LeaderAndIsr request
	// names, for followers that start before UpdateMetadata names them.
	liveLeaders(ls []kmsg.LeaderAndISRRequestLiveLeader)
	// roleChanging is told of the role LeaderAndIsr is about to give a
	// local replica (a new leader's fetcher stops first, so no fetch lands
	// after MakeLeader); roleChanged once it is applied (a follower's
	// fetcher starts; the internal topics' coordinators load or unload).
	roleChanging(p *replica.Partition, st kmsg.LeaderAndISRRequestTopicPartition)
	roleChanged(p *replica.Partition, st kmsg.LeaderAndISRRequestTopicPartition)
	// replicaStopped is told that a local replica stopped (StopReplica),
	// before it is closed.
	replicaStopped(p *replica.Partition)
	// close stops the plane's background work; the partitions are still
	// open.
	close()
}

var (
	// errClusterOnly refuses an inter-broker request (or a follower fetch)
	// sent to a single-node broker, which does not advertise those APIs
	// (CLUSTER_AUTHORIZATION_FAILED).
	errClusterOnly = errors.New("server: inter-broker request refused: this broker is not in a cluster (no zookeeper.connect)")
	// errStaleControllerEpoch: a controller request from an older epoch.
	errStaleControllerEpoch = errors.New("server: stale controller epoch")
)

// errNotControlPlaneListener refuses a controller request that came in on
// another listener than control.plane.listener.name.
var errNotControlPlaneListener = errors.New("server: controller requests are served only on control.plane.listener.name")

// checkControlListener refuses an inter-broker request on a connection
// that did not come in on control.plane.listener.name, when one is set
// (KIP-291). Handlers called without a connection (tests) pass.
func (s *Server) checkControlListener(rc *reqCtx) error {
	if !s.az.allowedCluster(rc, acl.OpClusterAction) {
		return errClusterAuthorization
	}
	cp := s.cfg.ControlPlaneListenerName
	if cp == "" || rc.conn == nil || rc.conn.listener == cp {
		return nil
	}
	return fmt.Errorf("%w (%s), not on %s", errNotControlPlaneListener, cp, cmp.Or(rc.conn.listener, "the client listener"))
}

// acceptControllerRequestOn is checkControlListener, then the control
// plane's acceptControllerRequest.
func (s *Server) acceptControllerRequestOn(rc *reqCtx, controllerID, controllerEpoch int32, brokerEpoch int64) error {
	if err := s.checkControlListener(rc); err != nil {
		return err
	}
	return s.cp.acceptControllerRequest(controllerID, controllerEpoch, brokerEpoch)
}

// refuseControllerRequest logs a refused inter-broker request with who
// sent it.
func (s *Server) refuseControllerRequest(rc *reqCtx, req kmsg.Request, controllerID, controllerEpoch int32, err error) {
	from := ""
	if rc.conn != nil {
		from = rc.conn.nc.RemoteAddr().String()
	}
	s.log.Warn("server: refused "+kmsg.NameForKey(req.Key()), "from", from, "client_id", rc.clientID,
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
	return lp.withTopic(name, lp.s.rm.DeleteTopicLocked)
}

func (lp localPlane) addPartitions(_ context.Context, name string, count int32, _ [][]int32) error {
	return lp.withTopic(name, func(t *replica.Topic) error { return lp.s.rm.AddPartitionsLocked(t, count) })
}

// withTopic runs fn on topic name with s.topics.admin held.
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

// findCoordinator: the group coordinator answers with this broker.
func (lp localPlane) findCoordinator(ctx context.Context, req *kmsg.FindCoordinatorRequest) (*kmsg.FindCoordinatorResponse, error) {
	resp, err := lp.s.groups.Handle(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.FindCoordinatorResponse), nil
}

func (lp localPlane) groupHooks() (group.OwnsFunc, group.PersistFunc, group.PersistGroupFunc) {
	return nil, nil, nil
}

func (lp localPlane) interBrokerAPIs() bool { return false }

func (lp localPlane) acceptControllerRequest(int32, int32, int64) error { return errClusterOnly }

func (lp localPlane) checkReplicaDelete(string, int32) error { return errClusterOnly }

func (lp localPlane) checkFollower(int32, int64) error { return errClusterOnly }

func (lp localPlane) applyUpdateMetadata(*kmsg.UpdateMetadataRequest) error { return errClusterOnly }

func (lp localPlane) controlledShutdown(int32, int64) ([]metadata.TopicPartition, error) {
	return nil, errClusterOnly
}

func (lp localPlane) topicAssignment(string) ([16]byte, [][]int32, map[string]string, error) {
	return [16]byte{}, nil, nil, errClusterOnly
}

func (lp localPlane) replicaOptions(_ *replica.Topic, o replication.Options) replication.Options {
	return o
}

func (lp localPlane) liveLeaders([]kmsg.LeaderAndISRRequestLiveLeader) {}

func (lp localPlane) roleChanging(*replica.Partition, kmsg.LeaderAndISRRequestTopicPartition) {}

func (lp localPlane) roleChanged(*replica.Partition, kmsg.LeaderAndISRRequestTopicPartition) {}

func (lp localPlane) replicaStopped(*replica.Partition) {}

func (lp localPlane) close() {}

// replicaHooks adapts a cluster's control plane to the replica manager's
// lifecycle hooks.
type replicaHooks struct{ cp controlPlane }

func (h replicaHooks) ReplicaOptions(t *replica.Topic, o replication.Options) replication.Options {
	return h.cp.replicaOptions(t, o)
}

func (h replicaHooks) ReplicaStopped(p *replica.Partition) { h.cp.replicaStopped(p) }

func (h replicaHooks) TopicAssignment(name string) ([16]byte, [][]int32, map[string]string, error) {
	return h.cp.topicAssignment(name)
}
