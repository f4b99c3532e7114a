package server

// Cluster mode (zookeeper.connect set).
//
// The broker runs a cluster.Node (registration, controller election, the
// controller itself) and hands it to the server (Options.Cluster). The
// server then learns which partitions it holds only from the controller:
//
//   - LeaderAndIsr (04_leader_and_isr.go) opens or creates a partition's
//     log, persists its topic in the local metastore, and makes the replica
//     leader (MakeLeader, after its fetcher stops) or follower
//     (MakeFollower, then a fetcher replicates it from the leader). A
//     partition is published in the topic registry only after its role is
//     applied, so no produce ever reaches a freshly opened replica that
//     still believes it leads.
//   - StopReplica (05_stop_replica.go) stops fetching and, when asked,
//     closes and deletes the log.
//   - UpdateMetadata (06_update_metadata.go) feeds the node's
//     MetadataCache, which answers Metadata requests for the whole cluster.
//   - ControlledShutdown (07_controlled_shutdown.go) is served by the
//     controller.
//
// In the topic registry a cluster-mode topic has one entry per partition of
// its assignment; partitions without a replica here are nil. Produce,
// consumer Fetch, ListOffsets and OffsetForLeaderEpoch answer
// NOT_LEADER_OR_FOLLOWER for a partition this broker does not lead.
// Follower fetches (Fetch with a replica id) are served by
// clustermode_fetch.go. A leader changes the ISR by writing the partition
// state to ZooKeeper itself (AlterISR -> Node.WritePartitionState, guarded
// by the znode version of the LeaderAndIsr it acts on), and a periodic loop
// calls MaybeShrinkISR.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/replication"
)

// errClusterOnly answers (by closing the connection) an inter-broker API
// sent to a single-node broker, which does not advertise it.
var errClusterOnly = errors.New("server: inter-broker API served only in cluster mode (zookeeper.connect)")

// clusterAPIs are the inter-broker API keys, advertised in ApiVersions only
// in cluster mode.
var clusterAPIs = map[int16]bool{4: true, 5: true, 6: true, 7: true}

// clusterMode is the server's cluster-mode state; nil in single-node mode.
type clusterMode struct {
	s        *Server
	node     *cluster.Node
	fetchers *replication.FetcherManager
	log      *slog.Logger
	// offsets tracks the __consumer_offsets partitions led here
	// (package offsets, wired in offsets_topic_find.go).
	offsets *offsets.Coordinator

	mu sync.Mutex
	// ctrlEpoch is the highest controller epoch of a LeaderAndIsr or
	// StopReplica applied; older ones are STALE_CONTROLLER_EPOCH.
	ctrlEpoch int32
	// partCtrlEpoch is the controller epoch of the partition state each
	// leader acts on (written back with its ISR changes).
	partCtrlEpoch map[engine.PartitionID]int32
	// leaderAddrs are the LiveLeaders of LeaderAndIsr requests, for
	// fetchers that start before UpdateMetadata names the leader.
	leaderAddrs map[int32]string
	// savedHW are the high watermarks checkpointed before the last stop
	// (clustermode_hw.go); read-only after newClusterMode.
	savedHW map[engine.PartitionID]int64

	stop chan struct{}
	wg   sync.WaitGroup
}

func newClusterMode(s *Server, node *cluster.Node) *clusterMode {
	cm := &clusterMode{
		s: s, node: node, log: s.log,
		partCtrlEpoch: map[engine.PartitionID]int32{},
		leaderAddrs:   map[int32]string{},
		stop:          make(chan struct{}),
		offsets:       newOffsetsCoord(s),
	}
	cm.fetchers = replication.NewFetcherManager(replication.FetcherOptions{
		BrokerID: s.nodeID,
		Resolve:  cm.resolve,
		Logger:   s.log,
	})
	// pids: ids are unique per broker (each allocates from its own
	// metastore), so the broker id goes into the high bits.
	s.pids.base = int64(s.nodeID) << 40
	cm.savedHW = cm.loadHighWatermarks()
	cm.wg.Add(3)
	go cm.shrinkLoop()
	go cm.configLoop()
	go cm.hwCheckpointLoop()
	return cm
}

// close stops the offsets loads, the ISR loop and every fetcher (before the
// partitions close).
func (cm *clusterMode) close() {
	cm.offsets.Close()
	close(cm.stop)
	cm.wg.Wait()
	cm.fetchers.Close()
	cm.checkpointHighWatermarks()
}

// resolve returns a broker's address for the fetchers.
func (cm *clusterMode) resolve(id int32) (string, bool) {
	if b, ok := cm.node.Metadata().Broker(id); ok {
		return b.Addr(), true
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	a, ok := cm.leaderAddrs[id]
	return a, ok
}

// shrinkLoop calls MaybeShrinkISR on every partition this broker leads,
// every replica.lag.time.max.ms/2 as Kafka does.
func (cm *clusterMode) shrinkLoop() {
	defer cm.wg.Done()
	lag := cm.s.cfg.ReplicaLagTimeMax
	if lag <= 0 {
		lag = replication.DefaultReplicaLagTimeMax
	}
	t := time.NewTicker(max(lag/2, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-cm.stop:
			return
		case <-t.C:
		}
		now := cm.s.now()
		for _, tp := range cm.s.topics.all() {
			for _, p := range tp.parts {
				if p != nil && p.IsLeader() {
					p.MaybeShrinkISR(now)
				}
			}
		}
	}
}

// alterISR is replication.Options.AlterISR: the leader writes its new ISR
// to the partition state znode, guarded by the version it knows.
func (cm *clusterMode) alterISR(ctx context.Context, topic string, partition int32, st replication.LeaderAndIsr) (int32, error) {
	cm.mu.Lock()
	ce := cm.partCtrlEpoch[engine.PartitionID{Topic: topic, Partition: partition}]
	cm.mu.Unlock()
	return cm.node.WritePartitionState(ctx, topic, partition, cluster.PartitionState{
		ControllerEpoch: ce, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR,
	}, st.ZkVersion)
}

// localTopic returns the registry's topic name with room for partition,
// creating (or extending, after partitions were added) its local entry
// from ZooKeeper: assignment, topic id and config overrides, persisted in
// the metastore. A local topic with another id (the topic was deleted and
// created again while this broker missed the StopReplica) is dropped
// first. REQUIRES: s.topics.admin held.
func (cm *clusterMode) localTopic(name string, id [16]byte, part int32) (*topic, error) {
	s := cm.s
	t := s.topics.get(name)
	if t != nil && id != ([16]byte{}) && t.id != id {
		cm.log.Warn("server: local topic has an old topic id; dropping its logs", "topic", name)
		cm.dropTopicLocked(t)
		t = nil
	}
	if t != nil && int(part) < len(t.parts) {
		return t, nil
	}
	zid, assignment, err := cm.node.TopicAssignment(name)
	if err != nil {
		return nil, err
	}
	if int(part) >= len(assignment) {
		return nil, fmt.Errorf("%w: %s-%d not in the assignment", errUnknownTopicOrPartition, name, part)
	}
	configs, err := cm.node.TopicConfigs(name)
	if err != nil {
		return nil, err
	}
	if cerr := checkTopicConfigs(configs); cerr != nil {
		cm.log.Warn("server: topic config in zookeeper not valid here; using broker defaults for bad keys", "topic", name, "err", cerr)
	}
	m := metastore.Topic{
		Name: name, ID: zid, Partitions: int32(len(assignment)), ReplicationFactor: int16(len(assignment[0])),
		Configs: configs, CreatedAt: s.now(), Assignment: assignment,
	}
	nt := &topic{name: name, id: zid, meta: m, cfg: s.effectiveConfig(configs), parts: make([]*partition, len(assignment))}
	if t != nil {
		m.CreatedAt = t.meta.CreatedAt
		nt.meta = m
		copy(nt.parts, t.parts)
	}
	if err := s.meta.PutTopic(m); err != nil {
		return nil, fmt.Errorf("server: store topic %q: %w", name, err)
	}
	s.topics.publish(nt)
	return nt, nil
}

// openReplica opens partition i of t (creating its log when missing) as a
// replication.Partition with the cluster options. It is not published.
func (cm *clusterMode) openReplica(t *topic, i int32) (*partition, error) {
	s := cm.s
	id := engine.PartitionID{Topic: t.name, Partition: i}
	log, err := s.store.OpenLog(id, t.cfg.log)
	if errors.Is(err, engine.ErrNoLog) {
		log, err = s.store.CreateLog(id, t.cfg.log)
	}
	if err != nil {
		return nil, fmt.Errorf("server: open log %s-%d: %w", t.name, i, err)
	}
	rp, err := replication.NewPartition(log, replication.Options{
		Topic:             t.name,
		Partition:         i,
		LogAppendTime:     t.cfg.logAppendTime,
		Now:               s.now,
		Logger:            s.log,
		BrokerID:          s.nodeID,
		MinInsyncReplicas: t.cfg.minISR,
		ReplicaLagTimeMax: s.cfg.ReplicaLagTimeMax,
		AlterISR:          cm.alterISR,
		// Never past what was committed before the restart; missing
		// (0) clamps to the log start.
		RestoreHighWatermark: true,
		HighWatermark:        cm.savedHW[id],
	})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("server: open partition %s-%d: %w", t.name, i, err)
	}
	return &partition{Partition: rp, topic: t.name, index: i}, nil
}

// setPartitionLocked publishes t with partition i replaced by p (nil:
// removed). REQUIRES: s.topics.admin held.
func (cm *clusterMode) setPartitionLocked(t *topic, i int32, p *partition) *topic {
	nt := *t
	nt.parts = slices.Clone(t.parts)
	nt.parts[i] = p
	cm.s.topics.publish(&nt)
	return &nt
}

// dropTopicLocked closes and deletes every local partition of t and its
// metastore entry. REQUIRES: s.topics.admin held.
func (cm *clusterMode) dropTopicLocked(t *topic) {
	s := cm.s
	s.topics.remove(t)
	for _, p := range t.parts {
		if p == nil {
			continue
		}
		cm.fetchers.Remove(p.Partition)
		if err := p.Close(); err != nil {
			cm.log.Warn("server: close partition", "topic", t.name, "partition", p.index, "err", err)
		}
		if err := s.store.DeleteLog(engine.PartitionID{Topic: t.name, Partition: p.index}); err != nil && !errors.Is(err, engine.ErrNoLog) {
			cm.log.Error("server: delete log", "topic", t.name, "partition", p.index, "err", err)
		}
	}
	if err := s.meta.DeleteTopic(t.name); err != nil && !errors.Is(err, metastore.ErrNotFound) {
		cm.log.Error("server: delete topic from metastore", "topic", t.name, "err", err)
	}
}

// leaderPartition returns partition i of topic name if this broker leads
// it: errUnknownTopicOrPartition when the cluster does not know it,
// replication.ErrNotLeader when another broker leads it.
func (cm *clusterMode) leaderPartition(name string, i int32) (*partition, error) {
	if p := cm.s.partition(name, i); p != nil {
		if !p.IsLeader() {
			return nil, replication.ErrNotLeader
		}
		return p, nil
	}
	if _, ok := cm.node.Metadata().Partition(name, i); ok {
		return nil, replication.ErrNotLeader
	}
	return nil, errUnknownTopicOrPartition
}

func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
