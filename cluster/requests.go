package cluster

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Versions of the controller's requests: those of Kafka 2.8-3.x in
// ZooKeeper mode (inter.broker.protocol.version 2.8+). The broker's server
// must accept at least these.
const (
	// LeaderAndIsrVersion 5: flexible, topic ids, Type (0 = incremental).
	LeaderAndIsrVersion = 5
	// UpdateMetadataVersion 7: flexible, topic ids, broker epoch.
	UpdateMetadataVersion = 7
	// StopReplicaVersion 3: per-partition leader epoch and delete flag.
	StopReplicaVersion = 3
	// ControlledShutdownVersion 3: flexible, broker epoch.
	ControlledShutdownVersion = 3
)

// sendRetries is how many times a sender tries one request before it
// drops it; the broker catches up at its next registration (a joining
// broker gets everything).
const sendRetries = 5

// brokerSender sends the controller's requests to one broker in order, on
// its own goroutine, so a slow or dead broker never blocks the event loop
// (Kafka's ControllerChannelManager RequestSendThread).
type brokerSender struct {
	ch     chan kmsg.Request
	cancel context.CancelFunc
	done   chan struct{}
}

func (n *Node) newBrokerSender(b Broker) *brokerSender {
	ctx, cancel := context.WithCancel(n.ctx)
	s := &brokerSender{ch: make(chan kmsg.Request, 4096), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-ctx.Done():
				return
			case req := <-s.ch:
				n.sendWithRetry(ctx, b, req)
			}
		}
	}()
	return s
}

func (n *Node) sendWithRetry(ctx context.Context, b Broker, req kmsg.Request) {
	for attempt := 1; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, n.opts.RequestTimeout)
		resp, err := n.opts.Send(rctx, b.ID, b.AddrFor(cmp.Or(n.opts.ControlPlaneListener, n.opts.InterBrokerListener)), req)
		cancel()
		if err == nil {
			logResponseErrors(n, b.ID, resp)
			n.onControllerResponse(b.ID, resp) // logdirevents.go
			return
		}
		if ctx.Err() != nil {
			return
		}
		if attempt >= sendRetries {
			n.log.Error("cluster: dropping controller request", "to", b.ID, "request", kmsg.NameForKey(req.Key()), "err", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
}

func logResponseErrors(n *Node, to int32, resp kmsg.Response) {
	code := int16(0)
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		code = r.ErrorCode
	case *kmsg.UpdateMetadataResponse:
		code = r.ErrorCode
	case *kmsg.StopReplicaResponse:
		code = r.ErrorCode
	}
	if code != 0 {
		n.log.Warn("cluster: broker answered controller request with an error", "to", to, "request", kmsg.NameForKey(resp.Key()), "error_code", code)
	}
}

// enqueue never blocks; a full queue (a broker far behind) drops the
// request with a log line.
func (s *brokerSender) enqueue(req kmsg.Request) bool {
	select {
	case s.ch <- req:
		return true
	default:
		return false
	}
}

func (s *brokerSender) close() {
	s.cancel()
	<-s.done
}

func (c *controller) enqueue(to int32, req kmsg.Request) {
	s := c.senders[to]
	if s == nil {
		return
	}
	if !s.enqueue(req) {
		c.log.Error("cluster: request queue full; dropping", "to", to, "request", kmsg.NameForKey(req.Key()))
	}
}

// sendLeaderAndIsr sends each broker in targets (nil: every live replica)
// the states of the partitions of tps it holds a replica of.
func (c *controller) sendLeaderAndIsr(targets []int32, tps []TopicPartition, isNew bool) {
	if len(tps) == 0 {
		return
	}
	per := map[int32][]TopicPartition{}
	for _, tp := range tps {
		for _, r := range c.replicas(tp) {
			if _, ok := c.live[r]; ok && (targets == nil || slices.Contains(targets, r)) {
				per[r] = append(per[r], tp)
			}
		}
	}
	for to, mine := range per {
		req := kmsg.NewPtrLeaderAndISRRequest()
		req.Version = LeaderAndIsrVersion
		req.ControllerID = c.n.opts.BrokerID
		req.ControllerEpoch = c.epoch
		req.BrokerEpoch = c.live[to].Epoch
		leaders := map[int32]bool{}
		byTopic := map[string]int{}
		for _, tp := range mine {
			st := c.states[tp]
			if st == nil {
				continue
			}
			i, ok := byTopic[tp.Topic]
			if !ok {
				ts := kmsg.NewLeaderAndISRRequestTopicState()
				ts.Topic = tp.Topic
				ts.TopicID = c.topics[tp.Topic].id
				req.TopicStates = append(req.TopicStates, ts)
				i = len(req.TopicStates) - 1
				byTopic[tp.Topic] = i
			}
			ps := kmsg.NewLeaderAndISRRequestTopicPartition()
			ps.Topic = tp.Topic
			ps.Partition = tp.Partition
			ps.ControllerEpoch = st.ControllerEpoch
			ps.Leader = st.Leader
			ps.LeaderEpoch = st.LeaderEpoch
			ps.ISR = slices.Clone(st.ISR)
			ps.ZKVersion = st.zkVersion
			ps.Replicas = slices.Clone(c.replicas(tp))
			a := c.assignmentOf(tp)
			ps.AddingReplicas, ps.RemovingReplicas = append([]int32{}, a.adding...), append([]int32{}, a.removing...)
			ps.IsNew = isNew
			req.TopicStates[i].PartitionStates = append(req.TopicStates[i].PartitionStates, ps)
			if st.Leader >= 0 {
				leaders[st.Leader] = true
			}
		}
		for id := range leaders {
			if b, ok := c.live[id]; ok {
				ll := kmsg.NewLeaderAndISRRequestLiveLeader()
				ll.BrokerID, ll.Host, ll.Port = b.ID, b.Host, b.Port
				req.LiveLeaders = append(req.LiveLeaders, ll)
			}
		}
		slices.SortFunc(req.LiveLeaders, func(a, b kmsg.LeaderAndISRRequestLiveLeader) int { return int(a.BrokerID - b.BrokerID) })
		c.enqueue(to, req)
	}
}

// updateMetadataRequest builds an UpdateMetadata carrying the live brokers
// and the states of tps.
func (c *controller) updateMetadataRequest(tps []TopicPartition, deleting bool) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = UpdateMetadataVersion
	req.ControllerID = c.n.opts.BrokerID
	req.ControllerEpoch = c.epoch
	for _, id := range c.liveIDs() {
		b := c.live[id]
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID, lb.Host, lb.Port = b.ID, b.Host, b.Port
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName, ep.SecurityProtocol = b.Host, b.Port, "PLAINTEXT", 0
		lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{ep}
		if len(b.Endpoints) > 0 {
			lb.Endpoints = lb.Endpoints[:0]
			// The registration's own address first: brokers that know no
			// listener names take the first endpoint (MetadataCache.Apply).
			names := slices.Sorted(maps.Keys(b.Endpoints))
			slices.SortStableFunc(names, func(x, y string) int {
				return cmp.Compare(b0(b.Endpoints[y] == b.Addr()), b0(b.Endpoints[x] == b.Addr()))
			})
			for _, name := range names {
				if h, p, ok := b.EndpointFor(name); ok {
					ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
					ep.Host, ep.Port, ep.ListenerName = h, p, name
					lb.Endpoints = append(lb.Endpoints, ep)
				}
			}
		}
		if b.Rack != "" {
			r := b.Rack
			lb.Rack = &r
		}
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	byTopic := map[string]int{}
	for _, tp := range tps {
		st := c.states[tp]
		ti := c.topics[tp.Topic]
		if ti == nil || (st == nil && !deleting) {
			continue
		}
		i, ok := byTopic[tp.Topic]
		if !ok {
			ts := kmsg.NewUpdateMetadataRequestTopicState()
			ts.Topic, ts.TopicID = tp.Topic, ti.id
			req.TopicStates = append(req.TopicStates, ts)
			i = len(req.TopicStates) - 1
			byTopic[tp.Topic] = i
		}
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Topic, ps.Partition = tp.Topic, tp.Partition
		ps.Replicas = slices.Clone(c.replicas(tp))
		ps.OfflineReplicas = filter(ps.Replicas, func(id int32) bool { _, ok := c.live[id]; return !ok || c.offlineReplica(tp, id) })
		if st != nil {
			ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = st.ControllerEpoch, st.Leader, st.LeaderEpoch
			ps.ISR, ps.ZKVersion = slices.Clone(st.ISR), st.zkVersion
		}
		if deleting {
			ps.Leader = leaderDuringDelete
		}
		if ps.ISR == nil {
			ps.ISR = []int32{}
		}
		req.TopicStates[i].PartitionStates = append(req.TopicStates[i].PartitionStates, ps)
	}
	return req
}

// sendUpdateMetadata sends the live brokers and the states of tps to each
// broker of targets.
func (c *controller) sendUpdateMetadata(targets []int32, tps []TopicPartition) {
	base := c.updateMetadataRequest(tps, false)
	for _, to := range targets {
		req := *base
		req.BrokerEpoch = c.live[to].Epoch
		c.enqueue(to, &req)
	}
}

func (c *controller) sendUpdateMetadataDeleting(t string, tps []TopicPartition) {
	base := c.updateMetadataRequest(tps, true)
	for _, to := range c.liveIDs() {
		req := *base
		req.BrokerEpoch = c.live[to].Epoch
		c.enqueue(to, &req)
	}
}

// sendStopReplicaDelete tells each replica of topic t to stop and delete
// its partitions.
func (c *controller) sendStopReplicaDelete(t string) {
	ti := c.topics[t]
	per := map[int32][]kmsg.StopReplicaRequestTopicPartitionState{}
	for p, rs := range ti.replicas {
		for _, r := range rs {
			ps := kmsg.NewStopReplicaRequestTopicPartitionState()
			ps.Partition, ps.Delete = int32(p), true
			ps.LeaderEpoch = -2 // Kafka's EpochDuringDelete: skip the epoch check
			per[r] = append(per[r], ps)
		}
	}
	for to, parts := range per {
		req := kmsg.NewPtrStopReplicaRequest()
		req.Version = StopReplicaVersion
		req.ControllerID, req.ControllerEpoch = c.n.opts.BrokerID, c.epoch
		req.BrokerEpoch = c.live[to].Epoch
		st := kmsg.NewStopReplicaRequestTopic()
		st.Topic, st.PartitionStates = t, parts
		req.Topics = []kmsg.StopReplicaRequestTopic{st}
		c.enqueue(to, req)
	}
}

// b0 is 1 for true, 0 for false.
func b0(v bool) int {
	if v {
		return 1
	}
	return 0
}
