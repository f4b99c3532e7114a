package cluster

import (
	"encoding/json"
	"errors"

	"github.com/go-zookeeper/zk"
)

// eventKind names what the event loop handles. The controller's kinds
// mirror Kafka's ControllerEvent types.
type eventKind int

const (
	evControllerChange      eventKind = iota // /controller changed: (re-)elect
	evSessionRenewed                         // a new session after expiry
	evBrokerChange                           // children of /brokers/ids
	evTopicChange                            // children of /brokers/topics
	evPartitionModification                  // data of /brokers/topics/<topic>
	evTopicDeletion                          // children of /admin/delete_topics
	evIsrChange                              // children of /isr_change_notification
	evControlledShutdown                     // HandleControlledShutdown
	evAutoLeaderRebalance                    // the periodic preferred-leader check
	evElectLeaders                           // ElectLeaders
	evControllerStats                        // a scrape wants the counts recounted (stats.go)
	evControllerCall                         // a ctlCall (reassign.go)
	evReassignPartitions                     // /admin/reassign_partitions changed, or a move to resume
	evLogDirEvent                            // children of /log_dir_event_notification (logdirevents.go)
	evLeaderAndIsrResponse                   // a LeaderAndIsr response with KAFKA_STORAGE_ERROR (logdirevents.go)
)

var eventNames = [...]string{"ControllerChange", "SessionRenewed", "BrokerChange", "TopicChange",
	"PartitionModification", "TopicDeletion", "IsrChangeNotification", "ControlledShutdown", "AutoPreferredReplicaLeaderElection", "ElectLeaders", "ControllerStats", "ControllerCall", "PartitionReassignment",
	"LogDirEventNotification", "LeaderAndIsrResponseReceived"}

func (k eventKind) String() string { return eventNames[k] }

// event is one unit of work for the event loop. term ties a controller
// event to the controller term that armed its watch; events of an ended
// term are dropped (the new term armed its own watches).
type event struct {
	kind     eventKind
	term     uint64
	topic    string
	shutdown *shutdownReq
	elect    *electReq
	call     *ctlCall
	// storageErr is evLeaderAndIsrResponse's response.
	storageErr *storageErrorResponse
}

type shutdownReq struct {
	brokerID    int32
	brokerEpoch int64
	reply       chan shutdownReply
}

type shutdownReply struct {
	remaining []TopicPartition
	err       error
}

// post queues e for the event loop; it never blocks.
func (n *Node) post(e event) {
	n.qmu.Lock()
	n.queue = append(n.queue, e)
	n.qmu.Unlock()
	select {
	case n.qsig <- struct{}{}:
	default:
	}
}

func (n *Node) pop() (event, bool) {
	n.qmu.Lock()
	defer n.qmu.Unlock()
	if len(n.queue) == 0 {
		return event{}, false
	}
	e := n.queue[0]
	n.queue = n.queue[1:]
	return e, true
}

// loop is the one goroutine that runs the election and the controller:
// every event is handled to completion before the next, so controller
// state needs no locks (Kafka's ControllerEventManager).
func (n *Node) loop() {
	defer n.wg.Done()
	defer n.resign("node closing")
	for {
		select {
		case <-n.ctx.Done():
			n.failPending()
			return
		case <-n.qsig:
		}
		for {
			if n.ctx.Err() != nil {
				n.failPending()
				return
			}
			e, ok := n.pop()
			if !ok {
				break
			}
			// Marked before the event runs: a scrape that sees what the
			// event did (a broker's metadata updated from inside it) must
			// not find the counts clean and return the old ones.
			n.controllerStatsDirty(e.kind)
			n.handle(e)
		}
	}
}

// failPending answers queued controlled-shutdown and election requests at
// close.
func (n *Node) failPending() {
	for {
		e, ok := n.pop()
		if !ok {
			return
		}
		if e.shutdown != nil {
			e.shutdown.reply <- shutdownReply{err: ErrClosed}
		}
		if e.elect != nil {
			e.elect.reply <- electReply{err: ErrClosed}
		}
		if e.call != nil {
			e.call.done <- ErrClosed
		}
	}
}

func (n *Node) handle(e event) {
	switch e.kind {
	case evControllerChange:
		n.elect()
		return
	case evSessionRenewed:
		n.onSessionRenewed()
		return
	case evControllerStats:
		n.publishControllerStats()
		return
	}
	c := n.ctl
	if e.kind == evControlledShutdown {
		if c == nil {
			e.shutdown.reply <- shutdownReply{err: ErrNotController}
			return
		}
		rem, err := c.controlledShutdown(e.shutdown.brokerID, e.shutdown.brokerEpoch)
		e.shutdown.reply <- shutdownReply{remaining: rem, err: err}
		n.afterControllerError(e, err)
		return
	}
	if e.kind == evElectLeaders {
		if c == nil {
			e.elect.reply <- electReply{err: ErrNotController}
			return
		}
		res, err := c.electLeaders(e.elect.tps, e.elect.unclean)
		e.elect.reply <- electReply{results: res, err: err}
		if errors.Is(err, ErrControllerMoved) {
			n.afterControllerError(e, err)
		}
		return
	}
	if e.kind == evControllerCall {
		if c == nil {
			e.call.done <- ErrNotController
			return
		}
		err := e.call.fn(c)
		e.call.done <- err
		if errors.Is(err, ErrControllerMoved) {
			n.afterControllerError(e, err)
		}
		return
	}
	if e.kind == evLeaderAndIsrResponse && c != nil {
		e.term = c.term // a response, not a watch: for the current term
	}
	if c == nil || e.term != c.term {
		return // a watch of an ended controller term
	}
	var err error
	switch e.kind {
	case evBrokerChange:
		err = c.onBrokerChange()
	case evTopicChange:
		err = c.onTopicChange()
	case evPartitionModification:
		err = c.onPartitionModification(e.topic)
	case evTopicDeletion:
		err = c.onTopicDeletion()
	case evIsrChange:
		err = c.onIsrChange()
	case evReassignPartitions:
		err = c.onReassignEvent()
	case evLogDirEvent:
		err = c.onLogDirEvent()
	case evLeaderAndIsrResponse:
		err = c.onStorageErrors(e.storageErr)
	case evAutoLeaderRebalance:
		// The next period is the retry: one chain of checks per term
		// whatever happens (a fenced controller's chain dies with its
		// term).
		if err = c.onAutoLeaderRebalance(); err != nil && !errors.Is(err, ErrControllerMoved) {
			c.log.Warn("cluster: preferred leader check failed; next check in one period", "err", err)
			err = nil
		}
		c.scheduleLeaderRebalance()
	}
	n.afterControllerError(e, err)
}

// retryable reports whether a controller event that failed with err should
// run again: a ZooKeeper operation failed (disconnected, timed out), not a
// fencing, a stale request or a corrupt znode, which retrying cannot fix.
func retryable(err error) bool {
	return err != nil && !errors.Is(err, ErrControllerMoved) && !errors.Is(err, ErrStaleBrokerEpoch) &&
		!errors.Is(err, ErrBrokerNotAvailable) && !errors.Is(err, ErrCorruptZnode)
}

// afterControllerError resigns when fenced and retries an event whose
// ZooKeeper work failed.
func (n *Node) afterControllerError(e event, err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrControllerMoved):
		n.log.Warn("cluster: fenced by a newer controller epoch; resigning", "event", e.kind, "err", err)
		n.resign("fenced")
		n.post(event{kind: evControllerChange})
	case errors.Is(err, ErrStaleBrokerEpoch), errors.Is(err, ErrBrokerNotAvailable), errors.Is(err, ErrCorruptZnode):
		n.log.Error("cluster: controller event failed", "event", e.kind, "err", err)
	case e.kind == evControlledShutdown:
		n.log.Error("cluster: controlled shutdown failed", "err", err)
	default:
		n.retryLater(e, e.kind.String(), err)
	}
}

// watchFor arms a controller watch of the current term.
func (c *controller) watchFor(ch <-chan zk.Event, kind eventKind, topic string) {
	c.n.watch(ch, event{kind: kind, term: c.term, topic: topic})
}

func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
