package server

// zkPlane is the control plane of a broker in a ZooKeeper cluster
// (zookeeper.connect set): an adapter over cluster.Node, which runs the
// registration, the controller election and the controller itself.
//
//   - The view (Metadata, DescribeCluster, leaders) is the node's
//     MetadataCache, fed only by the controller's UpdateMetadata requests,
//     as Kafka's ZkMetadataCache is. Before the first one it knows this
//     broker alone.
//   - Topic administration writes to ZooKeeper: CreateTopic (the
//     controller assigns replicas and sends LeaderAndIsr), DeleteTopic (the
//     controller sends StopReplica with delete), AddPartitions, and topic
//     configs in /config/topics/<t> with a /config/changes notification.
//     Any broker describes any topic's configs from ZooKeeper.
//   - Controller requests are obeyed only from the controller ZooKeeper
//     names, at its current epoch, addressed to this broker's current
//     registration (acceptControllerRequest, cluster.Node.VerifyController);
//     a StopReplica deletes only replicas no longer assigned here. Followers replicate through the
//     replication.FetcherManager started and stopped by RoleChanging and
//     RoleChanged (replica.Hooks, called by the replica manager). A leader changes the ISR by writing the partition state
//     itself (replication.Options.AlterISR -> Node.WritePartitionState,
//     guarded by the znode version of the LeaderAndIsr it acts on), and
//     shrinkLoop calls MaybeShrinkISR.
//   - Topic config changes notified through ZooKeeper are applied to the
//     local replicas by configLoop (Kafka's ZkConfigManager): the named
//     topic's config is re-read and applied if it differs from the local
//     one; when the watch (re)starts, every local topic is re-read. Two
//     concurrent alters of one topic through different brokers are not
//     serialized (as in Kafka's ZooKeeper mode): the last write wins.
//   - Replicas restart at their checkpointed high watermark (the replica
//     manager keeps the checkpoints, package replica).
//   - Consumer offsets live in the replicated __consumer_offsets topic
//     (package offsets); FindCoordinator names the leader of a group's
//     partition (offsets_topic_find.go).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/txn"
)

// zkPlane serves the inter-broker requests and hears of the replicas' lives.
var (
	_ interBroker   = (*zkPlane)(nil)
	_ replica.Hooks = (*zkPlane)(nil)
)

type zkPlane struct {
	s        *Server
	node     *cluster.Node
	fetchers *replication.FetcherManager

	mu sync.Mutex
	// partCtrlEpoch is the controller epoch of the partition state each
	// leader acts on (written back with its ISR changes).
	partCtrlEpoch map[engine.PartitionID]int32
	// leaderAddrs are the LiveLeaders of LeaderAndIsr requests, for
	// fetchers that start before UpdateMetadata names the leader.
	leaderAddrs map[int32]string

	stop chan struct{}
	wg   sync.WaitGroup
}

// newZKPlane returns the cluster-mode machinery of s over node, with its
// fetchers; start starts its loops.
func newZKPlane(s *Server, node *cluster.Node) *zkPlane {
	zp := &zkPlane{
		s: s, node: node,
		partCtrlEpoch: map[engine.PartitionID]int32{},
		leaderAddrs:   map[int32]string{},
		stop:          make(chan struct{}),
	}
	zp.fetchers = replication.NewFetcherManager(replication.FetcherOptions{
		BrokerID:     s.nodeID,
		BrokerEpoch:  node.BrokerEpoch,
		ConnSecurity: s.interBroker,
		Resolve:      zp.resolve,
		Logger:       s.log,

		PartitionMaxBytes: s.cfg.ReplicaFetchMaxBytes,
		MaxBytes:          s.cfg.ReplicaFetchResponseMaxBytes,
		MinBytes:          s.cfg.ReplicaFetchMinBytes,
		MaxWait:           s.cfg.ReplicaFetchWaitMax,
		Backoff:           s.cfg.ReplicaFetchBackoff,
		Quota:             followerQuota{s, s.repl.follower},
		RemoteLog:         remoteLogAux{s}, // tierfollow.go
	})
	// Producer ids are unique per broker (each allocates from its own
	// metastore), so the broker id goes into the high bits.
	s.pids.base = int64(s.nodeID) << 40
	return zp
}

// start starts the ISR and config-change loops, once s.rm exists.
func (zp *zkPlane) start() {
	lag := zp.s.cfg.ReplicaLagTimeMax
	if lag <= 0 {
		lag = replication.DefaultReplicaLagTimeMax
	}
	zp.wg.Add(4)
	// MaybeShrinkISR on every partition led here, every
	// replica.lag.time.max.ms/2 as Kafka does.
	go zp.every(max(lag/2, 50*time.Millisecond), zp.shrinkISRs)
	go zp.configLoop()
	go zp.brokerConfigLoop() // brokerconfig.go
	go zp.groupConfigLoop()  // groupconfig.go
}

// close stops the loops and every fetcher (before the partitions close).
func (zp *zkPlane) close() {
	close(zp.stop)
	zp.wg.Wait()
	zp.fetchers.Close()
}

// --- the view ---

func (zp *zkPlane) brokers() []metadata.Broker {
	if live := zp.node.Metadata().Brokers(); len(live) > 0 {
		return live
	}
	// Before the first UpdateMetadata: at least ourselves.
	return []metadata.Broker{zp.s.self}
}

func (zp *zkPlane) controllerID() int32 {
	if id := zp.node.Metadata().ControllerID(); id >= 0 {
		return id
	}
	return zp.node.ControllerID()
}

func (zp *zkPlane) topicNames() []string { return zp.node.Metadata().Topics() }

func (zp *zkPlane) topicID(name string) ([16]byte, bool) { return zp.node.Metadata().TopicID(name) }

func (zp *zkPlane) partitions(name string) []metadata.PartitionInfo {
	return zp.node.Metadata().Partitions(name)
}

// --- administration ---

func (zp *zkPlane) createTopic(ctx context.Context, spec topicSpec) ([16]byte, error) {
	id := newTopicID()
	var err error
	if spec.assignment != nil {
		err = zp.node.CreateTopicAssigned(ctx, spec.name, spec.assignment, spec.configs, id)
	} else {
		err = zp.node.CreateTopic(ctx, spec.name, int(spec.partitions), int(spec.rf), spec.configs, id)
	}
	return id, err
}

func (zp *zkPlane) deleteTopic(ctx context.Context, name string) error {
	return zp.node.DeleteTopic(ctx, name)
}

func (zp *zkPlane) addPartitions(ctx context.Context, name string, count int32, assignment [][]int32) error {
	if assignment != nil {
		return zp.node.AddPartitionsAssigned(ctx, name, int(count), assignment)
	}
	return zp.node.AddPartitions(ctx, name, int(count))
}

func (zp *zkPlane) topicConfigs(name string) (map[string]string, error) {
	if err := validateTopicName(name); err != nil {
		return nil, err
	}
	c, err := zp.node.TopicConfigs(name)
	if err == nil && c == nil {
		c = map[string]string{}
	}
	return c, err
}

// setTopicConfigs writes the overrides to ZooKeeper (with a change
// notification for the other brokers) and applies them here at once, so
// this broker's next request sees them. REQUIRES: s.rm.Lock held.
func (zp *zkPlane) setTopicConfigs(ctx context.Context, name string, overrides map[string]string) error {
	if err := zp.node.SetTopicConfig(ctx, name, overrides); err != nil {
		return fmt.Errorf("server: write configs of %q: %w", name, err)
	}
	zp.s.log.Info("server: changed topic configs", "topic", name, "configs", overrides)
	zp.applyTopicConfigLocked(name)
	return nil
}

// electLeaders runs on the controller; other brokers answer NOT_CONTROLLER,
// as Kafka's ZooKeeper-mode brokers do.
func (zp *zkPlane) electLeaders(ctx context.Context, tps []metadata.TopicPartition, unclean bool) (map[metadata.TopicPartition]error, error) {
	return zp.node.ElectLeaders(ctx, tps, unclean)
}

// --- controller requests and local replicas ---

func (zp *zkPlane) acceptControllerRequest(controllerID, controllerEpoch int32, brokerEpoch int64) error {
	if err := zp.node.VerifyController(controllerID, controllerEpoch); err != nil {
		return err
	}
	return zp.node.VerifyBrokerEpoch(brokerEpoch)
}

func (zp *zkPlane) topicBeingDeleted(topic string) (bool, error) {
	return zp.node.TopicBeingDeleted(topic)
}

func (zp *zkPlane) checkReplicaDelete(topic string, partition int32) error {
	ok, err := zp.node.ReplicaDeletable(topic, partition)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: %s-%d is still assigned to this broker and its topic is not being deleted", cluster.ErrNotFromController, topic, partition)
	}
	return nil
}

// checkFollower: Sluice's followers send their registration epoch (Fetch
// v15, ReplicaState), and a follower fetch without one is refused: the
// replica id alone is easy to forge, and a forged follower would keep a
// dead replica in the ISR and move the high watermark.
func (zp *zkPlane) checkFollower(replicaID int32, replicaEpoch int64) error {
	if replicaEpoch < 0 {
		return fmt.Errorf("%w: follower fetch from broker %d carries no broker epoch (Fetch v15+ needed)", cluster.ErrStaleBrokerEpoch, replicaID)
	}
	return zp.node.VerifyReplicaEpoch(replicaID, replicaEpoch)
}

func (zp *zkPlane) liveLeaders(ls []kmsg.LeaderAndISRRequestLiveLeader) {
	zp.mu.Lock()
	defer zp.mu.Unlock()
	for _, ll := range ls {
		zp.leaderAddrs[ll.BrokerID] = net.JoinHostPort(ll.Host, strconv.Itoa(int(ll.Port)))
	}
}

func (zp *zkPlane) applyUpdateMetadata(r *kmsg.UpdateMetadataRequest) error {
	if !zp.node.Metadata().Apply(r) {
		return errStaleControllerEpoch
	}
	return nil
}

func (zp *zkPlane) controlledShutdown(brokerID int32, brokerEpoch int64) ([]metadata.TopicPartition, error) {
	return zp.node.HandleControlledShutdown(brokerID, brokerEpoch)
}

// TopicAssignment is replica.Hooks.TopicAssignment, from ZooKeeper.
func (zp *zkPlane) TopicAssignment(name string) ([16]byte, [][]int32, map[string]string, error) {
	id, assignment, err := zp.node.TopicAssignment(name)
	if err != nil {
		return id, nil, nil, err
	}
	configs, err := zp.node.TopicConfigs(name)
	return id, assignment, configs, err
}

// ReplicaOptions is replica.Hooks.ReplicaOptions: a replica knows its
// broker id, enforces min.insync.replicas and writes ISR changes to
// ZooKeeper.
func (zp *zkPlane) ReplicaOptions(t *replica.Topic, o replication.Options) replication.Options {
	o.MinInsyncReplicas = t.Config.MinISR
	o.ReplicaLagTimeMax = zp.s.cfg.ReplicaLagTimeMax
	o.AlterISR = zp.alterISR
	return o
}

// RoleChanging is replica.Hooks.RoleChanging: a new leader's fetcher stops
// first, so no fetch lands after MakeLeader; the controller epoch is kept
// for the leader's ISR writes.
func (zp *zkPlane) RoleChanging(p *replica.Partition, st replication.LeaderAndIsr, controllerEpoch int32) {
	zp.mu.Lock()
	zp.partCtrlEpoch[engine.PartitionID{Topic: p.Topic(), Partition: p.Index()}] = controllerEpoch
	zp.mu.Unlock()
	if st.Leader == zp.s.nodeID {
		zp.fetchers.Remove(p.Partition)
	}
}

// RoleChanged is replica.Hooks.RoleChanged: a follower's fetcher starts;
// the internal topics' coordinators load or unload.
func (zp *zkPlane) RoleChanged(p *replica.Partition, st replication.LeaderAndIsr) {
	leader := st.Leader == zp.s.nodeID
	switch {
	case leader:
	case st.Leader >= 0:
		zp.fetchers.Add(p.Partition, st.Leader, st.LeaderEpoch)
	default: // no live leader: wait for the next LeaderAndIsr
		zp.fetchers.Remove(p.Partition)
	}
	switch p.Topic() {
	case offsets.Topic:
		zp.s.offsets.OnRole(p.Index(), leader)
	case txn.Topic:
		zp.s.txn.OnRole(p.Index(), leader)
	default:
		zp.s.shareOnRole(p.Topic(), p.Index(), leader) // share_state.go
	}
}

// ReplicaStopped is replica.Hooks.ReplicaStopped: its fetcher stops, and
// an internal topic's coordinator unloads the partition.
func (zp *zkPlane) ReplicaStopped(p *replica.Partition) {
	zp.fetchers.Remove(p.Partition)
	switch p.Topic() {
	case offsets.Topic:
		zp.s.offsets.OnStop(p.Index())
	case txn.Topic:
		zp.s.txn.OnStop(p.Index())
	default:
		zp.s.shareOnRole(p.Topic(), p.Index(), false) // share_state.go
	}
}

// resolve returns a broker's address for the fetchers.
func (zp *zkPlane) resolve(id int32) (string, bool) {
	if b, ok := zp.node.Metadata().Broker(id); ok {
		return b.AddrFor(zp.s.cfg.InterBrokerListenerName), true
	}
	zp.mu.Lock()
	defer zp.mu.Unlock()
	a, ok := zp.leaderAddrs[id]
	return a, ok
}

// alterISR is replication.Options.AlterISR: the leader writes its new ISR
// to the partition state znode, guarded by the version it knows. On a
// version conflict it reads the state back and returns it in a
// *replication.StateConflictError, so the leader can tell whether it still
// leads (see replication's alterISR); a state it may write again keeps the
// controller epoch it was written with.
func (zp *zkPlane) alterISR(ctx context.Context, topic string, partition int32, st replication.LeaderAndIsr) (int32, error) {
	id := engine.PartitionID{Topic: topic, Partition: partition}
	zp.mu.Lock()
	ce := zp.partCtrlEpoch[id]
	zp.mu.Unlock()
	v, err := zp.node.WritePartitionState(ctx, topic, partition, cluster.PartitionState{
		ControllerEpoch: ce, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR,
	}, st.ZkVersion)
	if !errors.Is(err, cluster.ErrVersionConflict) {
		return v, err
	}
	cur, version, rerr := zp.node.ReadPartitionState(topic, partition)
	if rerr != nil {
		return 0, fmt.Errorf("%w (re-reading the state: %v)", err, rerr)
	}
	if cur.Leader == st.Leader && cur.LeaderEpoch == st.LeaderEpoch {
		zp.mu.Lock()
		zp.partCtrlEpoch[id] = cur.ControllerEpoch
		zp.mu.Unlock()
	}
	return 0, &replication.StateConflictError{Err: err, Current: replication.LeaderAndIsr{
		Leader: cur.Leader, LeaderEpoch: cur.LeaderEpoch, ISR: cur.ISR, ZkVersion: version,
	}}
}

// --- background loops ---

// every calls fn every interval until close.
func (zp *zkPlane) every(interval time.Duration, fn func()) {
	defer zp.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-zp.stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// shrinkISRs calls MaybeShrinkISR on every partition this broker leads.
func (zp *zkPlane) shrinkISRs() {
	now := zp.s.now()
	for _, t := range zp.s.rm.Topics() {
		for _, p := range t.Parts {
			if p != nil && p.IsLeader() {
				p.MaybeShrinkISR(now)
			}
		}
	}
}

// configLoop applies topic config changes notified through ZooKeeper until
// close.
func (zp *zkPlane) configLoop() {
	defer zp.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-zp.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	zp.node.WatchTopicConfigChanges(ctx, zp.applyTopicConfig, zp.resyncTopicConfigs)
}

// applyTopicConfig re-reads topic name's config from ZooKeeper and applies
// it to the local replicas.
func (zp *zkPlane) applyTopicConfig(name string) {
	zp.s.rm.Lock()
	defer zp.s.rm.Unlock()
	zp.applyTopicConfigLocked(name)
}

// resyncTopicConfigs re-reads the config of every local topic.
func (zp *zkPlane) resyncTopicConfigs() {
	for _, t := range zp.s.rm.Topics() {
		zp.applyTopicConfig(t.Name)
	}
}

// applyTopicConfigLocked applies topic name's overrides in ZooKeeper to its
// local entry and replicas when they differ from the local ones. A topic
// with no replica here has nothing to apply. Failures are logged: the next
// change or restart applies the config again.
// REQUIRES: s.rm.Lock held.
func (zp *zkPlane) applyTopicConfigLocked(name string) {
	s := zp.s
	t := s.rm.Topic(name)
	if t == nil {
		return
	}
	configs, err := zp.node.TopicConfigs(name)
	if err != nil {
		if !errors.Is(err, cluster.ErrTopicNotFound) {
			s.log.Warn("server: read topic config from zookeeper", "topic", name, "err", err)
		}
		return
	}
	if maps.Equal(configs, t.Meta.Configs) {
		return
	}
	if cerr := checkTopicConfigs(configs); cerr != nil {
		s.log.Warn("server: topic config in zookeeper not valid here; using broker defaults for bad keys", "topic", name, "err", cerr)
	}
	s.rm.SetTopicConfigsLocked(t, configs) // logs what fails
}
