package cluster

// Checking who sent an inter-broker request. LeaderAndIsr, StopReplica and
// UpdateMetadata arrive on the client port like any request, so a broker
// obeys one only when ZooKeeper agrees that its sender is the controller
// (the controller id and epoch of /controller and /controller_epoch) and it
// names this broker's current registration (KIP-380's broker epoch, the
// czxid of /brokers/ids/<id>). Apache Kafka relies on ACLs (CLUSTER_ACTION)
// for this; Sluice checks it even on a PLAINTEXT listener.
//
// The checks are cheap in the common case: the controller this node last
// saw (elect keeps it current from the /controller watch) and this node's
// own registration epoch are in memory. Only a request naming something
// newer than what is known costs a ZooKeeper read (a new controller's first
// requests can arrive before the watch fires, and they must not be
// refused: the controller does not resend them). Concurrent checks share
// one read (verifier.mu, then a second look at what it found). A follower
// fetch is checked only for a live broker (one the last UpdateMetadata
// listed), so the replica ids a client makes up cost neither a ZooKeeper
// read nor memory; one naming an unknown registration epoch re-reads at
// most once a second per broker, without holding a lock over the read.

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

var (
	// ErrStaleControllerEpoch: a request from a controller older than the
	// current one.
	ErrStaleControllerEpoch = errors.New("cluster: stale controller epoch")
	// ErrNotFromController: a controller request whose controller id and
	// epoch ZooKeeper does not confirm, or one that asks for what the
	// controller would never ask (CLUSTER_AUTHORIZATION_FAILED).
	ErrNotFromController = errors.New("cluster: request not from the controller")
)

// zkRereadInterval bounds how often a mismatch re-reads ZooKeeper.
const zkRereadInterval = time.Second

// verifier holds what the checks compare against.
type verifier struct {
	mu sync.Mutex // one ZooKeeper read at a time for the controller checks

	replicaMu sync.Mutex
	// replicas caches other brokers' registration epochs (follower
	// fetches), only of live brokers. REQUIRES: replicaMu held.
	replicas map[int32]*replicaEpoch
}

// replicaEpoch is what a node knows of another broker's registration.
type replicaEpoch struct {
	epoch    int64 // the czxid of /brokers/ids/<id>; valid if known
	known    bool
	lastRead time.Time     // the start of the last read of the registration
	reading  chan struct{} // non-nil while a read runs; closed when it ends
}

// VerifyController checks a controller request's sender against
// ZooKeeper: nil when controllerID and epoch are the current controller's;
// ErrStaleControllerEpoch for an older epoch; ErrNotFromController for one
// ZooKeeper does not confirm. Safe for concurrent use.
func (n *Node) VerifyController(controllerID, epoch int32) error {
	id, cur := n.controllerID.Load(), n.controllerEpoch.Load()
	switch {
	case epoch == cur && controllerID == id && id >= 0:
		return nil
	case epoch < cur:
		return fmt.Errorf("%w: epoch %d, the controller's is %d", ErrStaleControllerEpoch, epoch, cur)
	}
	// Newer than what this node knows (a watch not delivered yet), or a
	// forgery: ask ZooKeeper.
	n.verify.mu.Lock()
	defer n.verify.mu.Unlock()
	if id, cur = n.controllerID.Load(), n.controllerEpoch.Load(); epoch != cur || controllerID != id {
		if zid, zepoch, err := n.readController(); err == nil {
			n.noteController(zid, zepoch)
		} else {
			n.log.Warn("cluster: read the controller to check a request", "err", err)
		}
		id, cur = n.controllerID.Load(), n.controllerEpoch.Load()
	}
	switch {
	case epoch == cur && controllerID == id && id >= 0:
		return nil
	case epoch < cur:
		return fmt.Errorf("%w: epoch %d, the controller's is %d", ErrStaleControllerEpoch, epoch, cur)
	default:
		return fmt.Errorf("%w: controller %d epoch %d; zookeeper names controller %d epoch %d", ErrNotFromController, controllerID, epoch, id, cur)
	}
}

// VerifyBrokerEpoch checks the broker epoch a controller request names for
// this broker: nil when it is this broker's current registration,
// ErrStaleBrokerEpoch otherwise (-1, as an old controller would send, is
// stale too). Safe for concurrent use.
func (n *Node) VerifyBrokerEpoch(epoch int64) error {
	cur := n.BrokerEpoch()
	if epoch == cur {
		return nil
	}
	if epoch > cur {
		// The controller may have seen a re-registration before this
		// node read its own czxid back.
		n.verify.mu.Lock()
		if n.BrokerEpoch() < epoch {
			if _, stat, err := n.zk.get(brokerPath(n.opts.BrokerID)); err == nil && stat.EphemeralOwner == n.zk.conn.SessionID() {
				n.brokerEpoch.Store(stat.Czxid)
			}
		}
		n.verify.mu.Unlock()
		if cur = n.BrokerEpoch(); epoch == cur {
			return nil
		}
	}
	return fmt.Errorf("%w: request names epoch %d, this broker's registration is %d", ErrStaleBrokerEpoch, epoch, cur)
}

// VerifyReplicaEpoch checks the broker epoch a follower's fetch carries
// against that broker's current registration (ErrStaleBrokerEpoch when it
// differs or the broker is not live). A broker that the metadata cache
// does not list as live is refused at once: its id is the client's, so it
// costs no ZooKeeper read and leaves nothing cached. For a live one, an
// epoch other than the cached one re-reads the registration at most once
// per zkRereadInterval; checks arriving during that read wait for it. Safe
// for concurrent use.
func (n *Node) VerifyReplicaEpoch(id int32, epoch int64) error {
	v := &n.verify
	if _, live := n.cache.Broker(id); !live {
		v.replicaMu.Lock()
		delete(v.replicas, id)
		v.replicaMu.Unlock()
		return fmt.Errorf("%w: broker %d fetches but is not a live broker", ErrStaleBrokerEpoch, id)
	}
	v.replicaMu.Lock()
	if v.replicas == nil {
		v.replicas = map[int32]*replicaEpoch{}
	}
	r := v.replicas[id]
	if r == nil {
		r = &replicaEpoch{}
		v.replicas[id] = r
	}
	switch {
	case r.known && r.epoch == epoch:
	case r.reading != nil:
		reading := r.reading
		v.replicaMu.Unlock()
		<-reading
		v.replicaMu.Lock()
	case time.Since(r.lastRead) >= zkRereadInterval:
		r.lastRead = time.Now()
		r.reading = make(chan struct{})
		v.replicaMu.Unlock()
		_, stat, err := n.zk.get(brokerPath(id))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			n.log.Warn("cluster: read a broker registration to check a fetch", "broker", id, "err", err)
		}
		v.replicaMu.Lock()
		switch {
		case err == nil:
			r.epoch, r.known = stat.Czxid, true
		case errors.Is(err, zk.ErrNoNode):
			r.known = false
		}
		close(r.reading)
		r.reading = nil
	}
	ok := r.known && r.epoch == epoch
	v.replicaMu.Unlock()
	if ok {
		return nil
	}
	return fmt.Errorf("%w: broker %d fetches with epoch %d, not its current registration", ErrStaleBrokerEpoch, id, epoch)
}

// ReplicaDeletable reports whether the controller may delete this broker's
// replica of topic-partition: the topic is marked for deletion, gone, or
// its assignment no longer names this broker for that partition or names
// it among the partition's removing replicas. A
// StopReplica that would delete a replica still assigned here is not from
// a working controller.
func (n *Node) ReplicaDeletable(topic string, partition int32) (bool, error) {
	ok, _, err := n.zk.exists(deleteTopicsPath + "/" + topic)
	if err != nil {
		return false, fmt.Errorf("cluster: read %s/%s: %w", deleteTopicsPath, topic, err)
	}
	if ok {
		return true, nil
	}
	data, _, err := n.zk.get(topicPath(topic))
	if errors.Is(err, zk.ErrNoNode) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("cluster: read %s: %w", topicPath(topic), err)
	}
	fa, err := decodeFullAssignment(topic, data)
	if err != nil {
		return false, err
	}
	if partition < 0 || int(partition) >= len(fa.parts) {
		return true, nil
	}
	// A replica a reassignment removes (reassign.go) is deleted before
	// the assignment drops it, as Kafka's controller does.
	return !slices.Contains(fa.parts[partition], n.opts.BrokerID) ||
		slices.Contains(fa.removing[partition], n.opts.BrokerID), nil
}

// TopicBeingDeleted reports whether topic is being deleted
// (/admin/delete_topics/<topic> exists) or already gone: a StopReplica
// with delete for it then deletes the partition's remote segments too,
// not for a replica a reassignment moves away.
func (n *Node) TopicBeingDeleted(topic string) (bool, error) {
	ok, _, err := n.zk.exists(deleteTopicsPath + "/" + topic)
	if err != nil || ok {
		return ok, err
	}
	ok, _, err = n.zk.exists(topicPath(topic))
	return !ok, err
}

// readController reads /controller and /controller_epoch.
func (n *Node) readController() (id, epoch int32, err error) {
	data, _, err := n.zk.get(controllerPath)
	if errors.Is(err, zk.ErrNoNode) {
		return -1, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if id, err = decodeControllerID(data); err != nil {
		return 0, 0, err
	}
	epoch, _, err = n.readControllerEpoch()
	return id, epoch, err
}

// noteController records the controller and its epoch as seen in
// ZooKeeper (never going back to an older epoch).
func (n *Node) noteController(id, epoch int32) {
	n.ctlMu.Lock()
	defer n.ctlMu.Unlock()
	if epoch < n.controllerEpoch.Load() {
		return
	}
	n.controllerID.Store(id)
	n.controllerEpoch.Store(epoch)
}
