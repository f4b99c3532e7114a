package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// controller is the state of an active controller term, modelled on
// Kafka's ControllerContext. Owned by the node's event loop goroutine: no
// locks. It is rebuilt from ZooKeeper at every term start, so nothing in it
// outlives a term.
type controller struct {
	n    *Node
	log  *slog.Logger
	term uint64
	// epoch is this term's controller epoch; epochZkVersion is the version
	// of /controller_epoch it wrote. Every write to partition state checks
	// that version in the same multi-op: a newer controller bumped it, so
	// a stale controller's writes fail (Kafka's controller epoch fencing).
	epoch          int32
	epochZkVersion int32
	// session is the ZooKeeper session that won the election; the term
	// ends when that session expires.
	session int64

	live         map[int32]Broker
	shuttingDown map[int32]bool
	topics       map[string]*topicInfo
	// states holds every partition whose state znode exists; a partition
	// in topics but not here is new (no leader yet).
	states  map[TopicPartition]*partState
	senders map[int32]*brokerSender
	// zkReassignCzxid is the creation zxid of the /admin/reassign_partitions
	// znode this term handled (reassign.go); 0: none yet.
	zkReassignCzxid int64
	// offlineDirs holds, per broker, its replicas in failed log dirs
	// (Kafka's replicasOnOfflineDirs; logdirevents.go).
	offlineDirs map[int32]map[TopicPartition]bool
}

type topicInfo struct {
	id       [16]byte
	replicas [][]int32 // replicas[p] is partition p's assignment, preferred leader first
	// adding[p] and removing[p] are partition p's AR and RR while it is
	// being reassigned (reassign.go); absent otherwise.
	adding, removing map[int32][]int32
}

type partState struct {
	PartitionState
	zkVersion int32
}

// becomeController starts a controller term (Kafka's onControllerFailover):
// read brokers, topics and partition states, arm the watches, elect leaders
// for partitions whose leader is gone, create the state of partitions that
// have none, and send every live broker UpdateMetadata and LeaderAndIsr
// for its replicas. Runs on the event loop.
func (n *Node) becomeController(epoch, epochZkVersion int32) {
	n.term++
	c := &controller{
		n: n, log: n.log.With("controller_epoch", epoch), term: n.term,
		epoch: epoch, epochZkVersion: epochZkVersion, session: n.zk.conn.SessionID(),
		live: map[int32]Broker{}, shuttingDown: map[int32]bool{}, topics: map[string]*topicInfo{},
		states: map[TopicPartition]*partState{}, senders: map[int32]*brokerSender{},
	}
	n.ctl = c
	n.isController.Store(true)
	c.log.Info("cluster: became controller")
	err := c.failover()
	if retryable(err) {
		// A half-loaded controller must not act; and retrying the
		// election alone would find /controller ours and stop there. Give
		// the term up: elect() then deletes our /controller (ours, but not
		// acting) and runs a fresh election with a full failover.
		c.log.Warn("cluster: controller failover failed; resigning to re-elect", "err", err)
		n.resign("failover failed")
		n.retryLater(event{kind: evControllerChange}, "controller failover", err)
		return
	}
	n.afterControllerError(event{kind: evControllerChange}, err)
	if n.ctl == c {
		c.scheduleLeaderRebalance()
	}
}

func (c *controller) failover() error {
	ids, ch, err := c.n.zk.childrenW(brokerIDsPath)
	if err != nil {
		return err
	}
	c.watchFor(ch, evBrokerChange, "")
	live, err := c.readBrokers(ids)
	if err != nil {
		return err
	}
	for _, b := range live {
		c.addBroker(b)
	}
	names, ch, err := c.n.zk.childrenW(topicsPath)
	if err != nil {
		return err
	}
	c.watchFor(ch, evTopicChange, "")
	for _, t := range names {
		if err := c.loadTopic(t); err != nil {
			return err
		}
	}
	// Partitions whose leader died while nobody was controller.
	var offline []TopicPartition
	for tp, st := range c.states {
		if st.Leader < 0 || !c.isLive(st.Leader) {
			offline = append(offline, tp)
		}
	}
	elected, err := c.electOfflinePartitions(offline)
	if err != nil {
		return err
	}
	_ = elected
	// Replicas on brokers that died before this term (the old controller
	// may have died with them) leave the ISRs, as Kafka's replica state
	// machine marks them offline at failover; otherwise a dead follower
	// stays "in sync" until the leader's replica.lag.time.max.ms.
	var stale []TopicPartition
	for tp, st := range c.states {
		if slices.ContainsFunc(st.ISR, func(r int32) bool { _, ok := c.live[r]; return !ok }) {
			stale = append(stale, tp)
		}
	}
	sortTPs(stale)
	if _, err := c.changeStates(stale, func(tp TopicPartition, st PartitionState) (PartitionState, bool) {
		was := clonePS(st)
		for _, r := range was.ISR {
			if _, ok := c.live[r]; !ok && r != st.Leader {
				st = removeFromISR(st, r)
			}
		}
		return st, !samePS(was, st)
	}); err != nil {
		return err
	}
	all := c.allPartitions()
	c.sendUpdateMetadata(c.liveIDs(), all)
	for _, id := range c.liveIDs() {
		c.sendLeaderAndIsr([]int32{id}, c.partitionsOn(id), false)
	}
	if err := c.initNewPartitions(c.newPartitions()); err != nil {
		return err
	}
	if err := c.onTopicDeletion(); err != nil {
		return err
	}
	if err := c.onLogDirEvent(); err != nil { // logdirevents.go
		return err
	}
	if err := c.onIsrChange(); err != nil {
		return err
	}
	return c.resumeReassignments()
}

// resign ends the controller term, if any: stops the request senders and
// forgets the controller state. Runs on the event loop.
func (n *Node) resign(reason string) {
	c := n.ctl
	if c == nil {
		return
	}
	n.ctl = nil
	n.isController.Store(false)
	for _, s := range c.senders {
		s.close()
	}
	c.log.Info("cluster: resigned as controller", "reason", reason)
}

// readBrokers reads the registrations of ids; brokers that vanished
// meanwhile are left out.
func (c *controller) readBrokers(ids []string) (map[int32]Broker, error) {
	out := make(map[int32]Broker, len(ids))
	for _, s := range ids {
		id, err := strconv.Atoi(s)
		if err != nil {
			continue
		}
		data, stat, err := c.n.zk.get(brokerPath(int32(id)))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		b, err := decodeBroker(int32(id), data, stat.Czxid)
		if err != nil {
			c.log.Error("cluster: skipping broker with unreadable registration", "err", err)
			continue
		}
		out[b.ID] = b
	}
	return out, nil
}

func (c *controller) addBroker(b Broker) {
	c.live[b.ID] = b
	if s := c.senders[b.ID]; s != nil {
		s.close()
	}
	c.senders[b.ID] = c.n.newBrokerSender(b)
}

func (c *controller) removeBroker(id int32) {
	delete(c.live, id)
	delete(c.shuttingDown, id)
	if s := c.senders[id]; s != nil {
		s.close()
		delete(c.senders, id)
	}
}

// isLive reports whether a broker may lead: registered and not shutting down.
func (c *controller) isLive(id int32) bool {
	_, ok := c.live[id]
	return ok && !c.shuttingDown[id]
}

func (c *controller) liveIDs() []int32 {
	ids := make([]int32, 0, len(c.live))
	for id := range c.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (c *controller) replicas(tp TopicPartition) []int32 {
	t := c.topics[tp.Topic]
	if t == nil || int(tp.Partition) >= len(t.replicas) {
		return nil
	}
	return t.replicas[tp.Partition]
}

// allPartitions returns every partition with a state, sorted.
func (c *controller) allPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(c.states))
	for tp := range c.states {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}

// partitionsOn returns the partitions with a state that have a replica on
// broker id.
func (c *controller) partitionsOn(id int32) []TopicPartition {
	var out []TopicPartition
	for tp := range c.states {
		if slices.Contains(c.replicas(tp), id) {
			out = append(out, tp)
		}
	}
	sortTPs(out)
	return out
}

// newPartitions returns the assigned partitions that have no state yet.
func (c *controller) newPartitions() []TopicPartition {
	var out []TopicPartition
	for t, ti := range c.topics {
		for p := range ti.replicas {
			tp := TopicPartition{Topic: t, Partition: int32(p)}
			if c.states[tp] == nil {
				out = append(out, tp)
			}
		}
	}
	sortTPs(out)
	return out
}

// loadTopic reads a topic's assignment (arming the partition-modification
// watch) and the states of its partitions into the context.
func (c *controller) loadTopic(t string) error {
	data, _, ch, err := c.n.zk.getW(topicPath(t))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	c.watchFor(ch, evPartitionModification, t)
	fa, err := decodeFullAssignment(t, data)
	if err != nil {
		c.log.Error("cluster: skipping topic", "topic", t, "err", err)
		return nil
	}
	c.topics[t] = &topicInfo{id: fa.id, replicas: fa.parts, adding: fa.adding, removing: fa.removing}
	for p := range fa.parts {
		if err := c.readState(TopicPartition{Topic: t, Partition: int32(p)}); err != nil {
			return err
		}
	}
	return nil
}

// readState refreshes one partition's state from ZooKeeper.
func (c *controller) readState(tp TopicPartition) error {
	path := partitionStatePath(tp.Topic, tp.Partition)
	data, stat, err := c.n.zk.get(path)
	if errors.Is(err, zk.ErrNoNode) {
		delete(c.states, tp)
		return nil
	}
	if err != nil {
		return err
	}
	st, err := decodePartitionState(path, data)
	if err != nil {
		return err
	}
	c.states[tp] = &partState{PartitionState: st, zkVersion: stat.Version}
	return nil
}

// changeStates applies f to the state of each partition in tps and writes
// the states f changed, each with a bumped leader epoch and this
// controller's epoch, guarded by the state's znode version and by the
// version of /controller_epoch. A version conflict (a leader changed its
// ISR meanwhile) re-reads the state and applies f again. Returns the
// partitions written; ErrControllerMoved when fenced.
func (c *controller) changeStates(tps []TopicPartition, f func(tp TopicPartition, cur PartitionState) (PartitionState, bool)) ([]TopicPartition, error) {
	var changed []TopicPartition
	for _, tp := range tps {
		for attempt := 0; ; attempt++ {
			cur := c.states[tp]
			if cur == nil {
				break
			}
			if cur.ControllerEpoch > c.epoch {
				return changed, fmt.Errorf("%w: %s written by controller epoch %d, ours is %d", ErrControllerMoved, tp, cur.ControllerEpoch, c.epoch)
			}
			next, ok := f(tp, clonePS(cur.PartitionState))
			if !ok {
				break
			}
			next.LeaderEpoch = cur.LeaderEpoch + 1
			next.ControllerEpoch = c.epoch
			v, err := c.writeState(tp, next, cur.zkVersion)
			if errors.Is(err, ErrVersionConflict) && attempt < 10 {
				if err := c.readState(tp); err != nil {
					return changed, err
				}
				continue
			}
			if err != nil {
				return changed, err
			}
			c.states[tp] = &partState{PartitionState: next, zkVersion: v}
			changed = append(changed, tp)
			c.log.Info("cluster: partition state changed", "partition", tp.String(), "leader", next.Leader,
				"leader_epoch", next.LeaderEpoch, "isr", next.ISR, "was_leader", cur.Leader, "was_isr", cur.ISR)
			break
		}
	}
	return changed, nil
}

// writeState is one fenced, version-guarded partition state write.
func (c *controller) writeState(tp TopicPartition, st PartitionState, version int32) (int32, error) {
	res, err := c.n.zk.multi(
		&zk.CheckVersionRequest{Path: controllerEpochPath, Version: c.epochZkVersion},
		&zk.SetDataRequest{Path: partitionStatePath(tp.Topic, tp.Partition), Data: encodePartitionState(st), Version: version},
	)
	if err == nil {
		return res[1].Stat.Version, nil
	}
	if len(res) == 2 && errors.Is(res[0].Error, zk.ErrBadVersion) {
		return 0, fmt.Errorf("%w: /controller_epoch changed", ErrControllerMoved)
	}
	if errors.Is(err, zk.ErrBadVersion) {
		return 0, ErrVersionConflict
	}
	return 0, fmt.Errorf("cluster: write %s: %w", partitionStatePath(tp.Topic, tp.Partition), err)
}

func clonePS(s PartitionState) PartitionState {
	s.ISR = slices.Clone(s.ISR)
	return s
}

func samePS(a, b PartitionState) bool { return a.Leader == b.Leader && slices.Equal(a.ISR, b.ISR) }

// electOfflinePartitions elects a leader for each partition of tps that
// has none (or a dead one), sends LeaderAndIsr to their replicas and
// UpdateMetadata to every broker.
func (c *controller) electOfflinePartitions(tps []TopicPartition) ([]TopicPartition, error) {
	return c.electLeaderless(tps, c.n.unclean.Load())
}

// electLeaderless is electOfflinePartitions with unclean election on or off
// (ElectLeaders asks for it explicitly).
func (c *controller) electLeaderless(tps []TopicPartition, unclean bool) ([]TopicPartition, error) {
	changed, err := c.changeStates(tps, func(tp TopicPartition, st PartitionState) (PartitionState, bool) {
		if st.Leader >= 0 && c.isLive(st.Leader) {
			return st, false
		}
		r := electOffline(c.replicas(tp), st.ISR, c.isLive, unclean)
		if !r.ok {
			if st.Leader != -1 {
				st.Leader = -1
				return st, true
			}
			return st, false
		}
		if !slices.Contains(st.ISR, r.Leader) {
			c.log.Warn("cluster: unclean leader election: records may be lost", "partition", tp.String(), "leader", r.Leader, "isr_was", st.ISR)
		}
		st.Leader, st.ISR = r.Leader, r.ISR
		return st, true
	})
	c.announce(changed)
	return changed, err
}

// announce sends LeaderAndIsr for tps to their live replicas and
// UpdateMetadata to every live broker.
func (c *controller) announce(tps []TopicPartition) {
	if len(tps) == 0 {
		return
	}
	c.sendLeaderAndIsr(nil, tps, false)
	c.sendUpdateMetadata(c.liveIDs(), tps)
}

// initNewPartitions creates the state of partitions that have none
// (Kafka's NewPartition -> OnlinePartition): the first live replica leads,
// the live replicas form the ISR, leader epoch 0. A partition with no live
// replica stays new until one of its replicas registers.
func (c *controller) initNewPartitions(tps []TopicPartition) error {
	var created []TopicPartition
	for _, tp := range tps {
		live := filter(c.replicas(tp), c.isLive)
		if len(live) == 0 {
			c.log.Warn("cluster: new partition has no live replica; waiting", "partition", tp.String(), "replicas", c.replicas(tp))
			continue
		}
		st := PartitionState{ControllerEpoch: c.epoch, Leader: live[0], LeaderEpoch: 0, ISR: live}
		if err := c.n.zk.ensurePath(partitionPath(tp.Topic, tp.Partition)); err != nil {
			return err
		}
		res, err := c.n.zk.multi(
			&zk.CheckVersionRequest{Path: controllerEpochPath, Version: c.epochZkVersion},
			&zk.CreateRequest{Path: partitionStatePath(tp.Topic, tp.Partition), Data: encodePartitionState(st)},
		)
		switch {
		case err == nil:
			c.states[tp] = &partState{PartitionState: st, zkVersion: 0}
			created = append(created, tp)
		case len(res) == 2 && errors.Is(res[0].Error, zk.ErrBadVersion):
			return fmt.Errorf("%w: /controller_epoch changed", ErrControllerMoved)
		case errors.Is(err, zk.ErrNodeExists):
			if err := c.readState(tp); err != nil {
				return err
			}
			created = append(created, tp) // created by an earlier term; announce it
		default:
			return fmt.Errorf("cluster: create %s: %w", partitionStatePath(tp.Topic, tp.Partition), err)
		}
	}
	if len(created) > 0 {
		c.log.Info("cluster: partitions online", "count", len(created))
		c.sendLeaderAndIsr(nil, created, true)
		c.sendUpdateMetadata(c.liveIDs(), created)
	}
	return nil
}

// onBrokerChange handles a change of /brokers/ids: brokers gone, new, or
// re-registered with a new epoch (bounced: handled as gone, then new).
func (c *controller) onBrokerChange() error {
	ids, ch, err := c.n.zk.childrenW(brokerIDsPath)
	if err != nil {
		return err
	}
	c.watchFor(ch, evBrokerChange, "")
	now, err := c.readBrokers(ids)
	if err != nil {
		return err
	}
	var dead, added []int32
	for id, b := range c.live {
		nb, ok := now[id]
		if !ok || nb.Epoch != b.Epoch {
			dead = append(dead, id)
		}
	}
	for id, b := range now {
		ob, ok := c.live[id]
		if !ok || ob.Epoch != b.Epoch {
			added = append(added, id)
		}
	}
	slices.Sort(dead)
	slices.Sort(added)
	if len(dead) > 0 {
		c.log.Info("cluster: brokers failed", "brokers", dead)
		for _, id := range dead {
			c.removeBroker(id)
		}
		if err := c.onBrokerFailure(dead); err != nil {
			return err
		}
	}
	if len(added) > 0 {
		c.log.Info("cluster: brokers joined", "brokers", added)
		for _, id := range added {
			c.addBroker(now[id])
		}
		return c.onBrokerStartup(added)
	}
	return nil
}

// onBrokerFailure moves leadership off dead brokers and out of the ISRs
// (Kafka's onBrokerFailure / onReplicasBecomeOffline).
func (c *controller) onBrokerFailure(dead []int32) error {
	isDead := func(id int32) bool { return slices.Contains(dead, id) }
	var affected []TopicPartition
	for tp := range c.states {
		if slices.ContainsFunc(c.replicas(tp), isDead) {
			affected = append(affected, tp)
		}
	}
	sortTPs(affected)
	changed, err := c.changeStates(affected, func(tp TopicPartition, st PartitionState) (PartitionState, bool) {
		was := clonePS(st)
		if st.Leader < 0 || !c.isLive(st.Leader) {
			r := electOffline(c.replicas(tp), st.ISR, c.isLive, c.n.unclean.Load())
			if r.ok {
				if !slices.Contains(st.ISR, r.Leader) {
					c.log.Warn("cluster: unclean leader election: records may be lost", "partition", tp.String(), "leader", r.Leader)
				}
				st.Leader, st.ISR = r.Leader, r.ISR
				return st, true
			}
		}
		for _, d := range dead {
			if slices.Contains(st.ISR, d) || st.Leader == d {
				st = removeFromISR(st, d)
			}
		}
		return st, !samePS(was, st)
	})
	c.sendLeaderAndIsr(nil, changed, false)
	// Every affected partition's offline replicas changed.
	c.sendUpdateMetadata(c.liveIDs(), affected)
	if err != nil {
		return err
	}
	// A move whose leaving leader died may complete under the new one.
	return c.checkReassignments(c.reassigning())
}

// onBrokerStartup tells new brokers everything, makes them followers of
// their partitions, and elects leaders where one of them makes it possible
// (Kafka's onBrokerStartup).
func (c *controller) onBrokerStartup(added []int32) error {
	c.forgetOfflineDirs(added) // logdirevents.go
	c.sendUpdateMetadata(c.liveIDs(), c.allPartitions())
	for _, id := range added {
		c.sendLeaderAndIsr([]int32{id}, c.partitionsOn(id), false)
	}
	var offline []TopicPartition
	for tp, st := range c.states {
		if st.Leader < 0 || !c.isLive(st.Leader) {
			offline = append(offline, tp)
		}
	}
	sortTPs(offline)
	if _, err := c.electOfflinePartitions(offline); err != nil {
		return err
	}
	if err := c.initNewPartitions(c.newPartitions()); err != nil {
		return err
	}
	if err := c.checkReassignments(c.reassigning()); err != nil {
		return err
	}
	return c.onTopicDeletion() // deletions wait for all replicas to be live
}

// onTopicChange handles new and vanished topics under /brokers/topics.
func (c *controller) onTopicChange() error {
	names, ch, err := c.n.zk.childrenW(topicsPath)
	if err != nil {
		return err
	}
	c.watchFor(ch, evTopicChange, "")
	seen := map[string]bool{}
	for _, t := range names {
		seen[t] = true
		if c.topics[t] == nil {
			if err := c.loadTopic(t); err != nil {
				return err
			}
		}
	}
	for t := range c.topics {
		if !seen[t] {
			c.forgetTopic(t)
		}
	}
	return c.initNewPartitions(c.newPartitions())
}

func (c *controller) forgetTopic(t string) {
	delete(c.topics, t)
	for tp := range c.states {
		if tp.Topic == t {
			delete(c.states, tp)
		}
	}
}

// onPartitionModification handles a change of /brokers/topics/<t>: added
// partitions. (Moves of existing partitions are the controller's own
// writes, reassign.go; other changes of existing partitions are ignored.)
func (c *controller) onPartitionModification(t string) error {
	data, _, ch, err := c.n.zk.getW(topicPath(t))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	c.watchFor(ch, evPartitionModification, t)
	id, parts, err := decodeAssignment(t, data)
	if err != nil {
		return err
	}
	ti := c.topics[t]
	if ti == nil {
		return nil // the topic-change handler loads it
	}
	if len(parts) > len(ti.replicas) {
		c.log.Info("cluster: partitions added", "topic", t, "from", len(ti.replicas), "to", len(parts))
		ti.replicas = append(ti.replicas, parts[len(ti.replicas):]...)
	}
	if ti.id == ([16]byte{}) {
		ti.id = id
	}
	return c.initNewPartitions(c.newPartitions())
}

// onIsrChange reads the ISR change notifications leaders wrote, deletes
// them, refreshes those partitions' states and broadcasts them.
func (c *controller) onIsrChange() error {
	kids, ch, err := c.n.zk.childrenW(isrChangePath)
	if err != nil {
		return err
	}
	c.watchFor(ch, evIsrChange, "")
	if len(kids) == 0 {
		return nil
	}
	sort.Strings(kids)
	set := map[TopicPartition]bool{}
	for _, k := range kids {
		p := isrChangePath + "/" + k
		data, _, err := c.n.zk.get(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		var noted []TopicPartition
		if err == nil {
			if noted, err = parseIsrChange(p, data); err != nil {
				c.log.Error("cluster: bad isr change notification", "path", p, "err", err)
			}
		}
		for _, tp := range noted {
			set[tp] = true
		}
		if err := c.n.zk.delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	var tps []TopicPartition
	for tp := range set {
		if c.topics[tp.Topic] == nil {
			continue
		}
		if err := c.readState(tp); err != nil {
			return err
		}
		tps = append(tps, tp)
	}
	sortTPs(tps)
	c.sendUpdateMetadata(c.liveIDs(), tps)
	// Moves whose target replicas joined the ISR complete.
	return c.checkReassignments(tps)
}

// onTopicDeletion carries out the deletion requests under
// /admin/delete_topics. A topic with an offline replica waits (its
// deletion is retried when a broker joins): brokers get UpdateMetadata
// with leader -2 and StopReplica(delete) for their replicas, then the
// topic's znodes and the request go.
func (c *controller) onTopicDeletion() error {
	names, ch, err := c.n.zk.childrenW(deleteTopicsPath)
	if err != nil {
		return err
	}
	c.watchFor(ch, evTopicDeletion, "")
	for _, t := range names {
		ti := c.topics[t]
		if ti == nil {
			// Unknown topic: drop the request (Kafka does the same).
			if err := c.n.zk.delete(deleteTopicPath(t), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			continue
		}
		ready := true
		for _, rs := range ti.replicas {
			for _, r := range rs {
				if _, ok := c.live[r]; !ok {
					ready = false
				}
			}
		}
		if !ready {
			c.log.Info("cluster: topic deletion waits for offline replicas", "topic", t)
			continue
		}
		if c.topicReassigning(t) {
			// As Kafka: ineligible while a partition moves.
			c.log.Info("cluster: topic deletion waits for a partition reassignment", "topic", t)
			continue
		}
		tps := make([]TopicPartition, len(ti.replicas))
		for p := range ti.replicas {
			tps[p] = TopicPartition{Topic: t, Partition: int32(p)}
		}
		c.sendUpdateMetadataDeleting(t, tps)
		c.sendStopReplicaDelete(t)
		if err := c.n.zk.deleteRecursive(topicPath(t)); err != nil {
			return err
		}
		if err := c.n.zk.delete(topicConfigPath(t), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if err := c.n.zk.delete(deleteTopicPath(t), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		c.forgetTopic(t)
		c.log.Info("cluster: topic deleted", "topic", t)
	}
	return nil
}
