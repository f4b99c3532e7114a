package cluster

// Log dir failures (JBOD), as Kafka's ZooKeeper-mode controller handles
// them. A broker whose log dir failed writes
//
//	/log_dir_event_notification/log_dir_event_<seq>  persistent sequential
//	{"version":1,"broker":<id>,"event":1}
//
// (NotifyLogDirFailure; Kafka's KafkaZkClient.propagateLogDirEvent). The
// controller watches the children (evLogDirEvent), deletes the
// notifications it read and sends each broker named LeaderAndIsr for all
// its replicas (Kafka's onBrokerLogDirFailure); a broker answers
// KAFKA_STORAGE_ERROR for the replicas in a failed dir. Every LeaderAndIsr
// response with such errors comes back to the event loop
// (evLeaderAndIsrResponse, Kafka's LeaderAndIsrResponseReceived): the
// replicas named are marked offline (replicasOnOfflineDirs), leave their
// ISRs, and a partition they led elects a new leader among its other live,
// online in-sync replicas (Kafka's onReplicasBecomeOffline). A broker that
// registers again starts with none offline (its dirs are checked afresh).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	logDirEventPath   = "/log_dir_event_notification"
	logDirEventPrefix = "log_dir_event_"
	// logDirFailureEvent is Kafka's LogDirEventNotificationHandler
	// LogDirFailureEvent, the only event there is.
	logDirFailureEvent = 1
)

// logDirEventNotification is /log_dir_event_notification/log_dir_event_<seq>.
type logDirEventNotification struct {
	Version int   `json:"version"`
	Broker  int32 `json:"broker"`
	Event   int   `json:"event"`
}

// parseLogDirEvent returns the broker a notification names; an error
// wraps ErrCorruptZnode.
func parseLogDirEvent(path string, data []byte) (int32, error) {
	var note logDirEventNotification
	if err := jsonUnmarshal(data, &note); err != nil || note.Version != 1 || note.Event != logDirFailureEvent || note.Broker < 0 {
		return 0, fmt.Errorf("%w: %s holds %q, not a log dir event: %v", ErrCorruptZnode, path, data, err)
	}
	return note.Broker, nil
}

// NotifyLogDirFailure tells the controller that one of this broker's log
// dirs failed, so that it asks the broker which replicas are offline and
// moves their leadership away.
func (n *Node) NotifyLogDirFailure(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonMarshal(logDirEventNotification{Version: 1, Broker: n.opts.BrokerID, Event: logDirFailureEvent})
	if err != nil {
		return err
	}
	if _, err := n.zk.createParents(logDirEventPath+"/"+logDirEventPrefix, data, zk.FlagSequence); err != nil {
		return fmt.Errorf("cluster: write %s: %w", logDirEventPath, err)
	}
	n.log.Info("cluster: told the controller of a failed log dir")
	return nil
}

// storageErrorResponse is a LeaderAndIsr response with KAFKA_STORAGE_ERROR
// partitions, for the event loop.
type storageErrorResponse struct {
	broker int32
	resp   *kmsg.LeaderAndISRResponse
}

// onControllerResponse is told of every response to a controller request
// (the senders' goroutines): a LeaderAndIsr response naming replicas with
// KAFKA_STORAGE_ERROR goes to the event loop.
func (n *Node) onControllerResponse(broker int32, resp kmsg.Response) {
	r, ok := resp.(*kmsg.LeaderAndISRResponse)
	if !ok {
		return
	}
	storage := false
	for _, p := range r.Partitions {
		storage = storage || p.ErrorCode == kerr.KafkaStorageError.Code
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			storage = storage || p.ErrorCode == kerr.KafkaStorageError.Code
		}
	}
	if storage {
		n.post(event{kind: evLeaderAndIsrResponse, storageErr: &storageErrorResponse{broker: broker, resp: r}})
	}
}

// onLogDirEvent reads and deletes the log dir event notifications (arming
// the watch again) and sends each broker they name LeaderAndIsr for all
// its replicas, whose answer says which are offline.
func (c *controller) onLogDirEvent() error {
	if err := c.n.zk.ensurePath(logDirEventPath); err != nil {
		return err
	}
	kids, ch, err := c.n.zk.childrenW(logDirEventPath)
	if err != nil {
		return err
	}
	c.watchFor(ch, evLogDirEvent, "")
	sort.Strings(kids)
	var brokers []int32
	for _, k := range kids {
		p := logDirEventPath + "/" + k
		data, _, err := c.n.zk.get(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if err == nil {
			id, perr := parseLogDirEvent(p, data)
			if perr != nil {
				c.log.Error("cluster: bad log dir event notification", "path", p, "err", perr)
			} else if !slices.Contains(brokers, id) {
				brokers = append(brokers, id)
			}
		}
		if err := c.n.zk.delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	for _, id := range brokers {
		if !c.isLive(id) {
			continue
		}
		c.log.Info("cluster: handling a log dir failure", "broker", id)
		c.sendLeaderAndIsr([]int32{id}, c.partitionsOn(id), false)
	}
	return nil
}

// onStorageErrors marks the replicas a broker answered KAFKA_STORAGE_ERROR
// for offline and moves them out of their ISRs and leadership.
func (c *controller) onStorageErrors(r *storageErrorResponse) error {
	if !c.isLive(r.broker) {
		return nil
	}
	names := map[[16]byte]string{}
	for name, t := range c.topics {
		names[t.id] = name
	}
	var offline []TopicPartition
	add := func(topic string, p int32, code int16) {
		tp := TopicPartition{Topic: topic, Partition: p}
		if code != kerr.KafkaStorageError.Code || c.states[tp] == nil || c.offlineReplica(tp, r.broker) {
			return
		}
		offline = append(offline, tp)
	}
	for _, p := range r.resp.Partitions {
		add(p.Topic, p.Partition, p.ErrorCode)
	}
	for _, t := range r.resp.Topics {
		for _, p := range t.Partitions {
			add(names[t.TopicID], p.Partition, p.ErrorCode)
		}
	}
	if len(offline) == 0 {
		return nil
	}
	sortTPs(offline)
	if c.offlineDirs == nil {
		c.offlineDirs = map[int32]map[TopicPartition]bool{}
	}
	if c.offlineDirs[r.broker] == nil {
		c.offlineDirs[r.broker] = map[TopicPartition]bool{}
	}
	for _, tp := range offline {
		c.offlineDirs[r.broker][tp] = true
	}
	c.log.Warn("cluster: replicas in a failed log dir are offline", "broker", r.broker, "partitions", len(offline))
	online := func(tp TopicPartition) func(int32) bool {
		return func(id int32) bool { return c.isLive(id) && !c.offlineReplica(tp, id) }
	}
	changed, err := c.changeStates(offline, func(tp TopicPartition, st PartitionState) (PartitionState, bool) {
		was := clonePS(st)
		st = removeFromISR(st, r.broker)
		if st.Leader < 0 {
			res := electOffline(c.replicas(tp), st.ISR, online(tp), c.n.unclean.Load())
			if res.ok {
				st.Leader, st.ISR = res.Leader, res.ISR
			}
		}
		return st, !samePS(was, st)
	})
	c.sendLeaderAndIsr(nil, changed, false)
	c.sendUpdateMetadata(c.liveIDs(), offline)
	return err
}

// offlineReplica reports whether broker id's replica of tp is in a failed
// log dir.
func (c *controller) offlineReplica(tp TopicPartition, id int32) bool {
	return c.offlineDirs[id][tp]
}

// forgetOfflineDirs drops what was known of the failed log dirs of
// brokers that registered again.
func (c *controller) forgetOfflineDirs(ids []int32) {
	for _, id := range ids {
		delete(c.offlineDirs, id)
	}
}
