package server

// The share persister (Kafka's DefaultStatePersister and
// PersisterStateManager): how the leader of a user partition reads and
// writes the durable state of its share partitions. One code shape in both
// modes:
//
//   - The state of share partition k lives on the share coordinator of k:
//     the leader of __share_group_state partition
//     sharecoord.PartitionFor(k, n) (Kafka's FindCoordinator key type 2,
//     key "group:topicId:partition"). This broker's metadata cache gives
//     the same answer FindCoordinator would, so the persister reads it
//     there instead of asking over the wire.
//   - When that leader is this broker (always so on a single node) the
//     coordinator is called in process; otherwise the persister APIs
//     (InitializeShareGroupState 83, ReadShareGroupState 84,
//     WriteShareGroupState 85, DeleteShareGroupState 86) go to it over the
//     inter-broker listener, one connection per broker.
//   - NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
//     COORDINATOR_LOAD_IN_PROGRESS, a partition without a live leader, a
//     topic still being created or a failed connection: looked up and
//     tried again after a backoff, until sharePersistTimeout has passed
//     (or ctx is done). Every other answer is final.
//   - FENCED_LEADER_EPOCH and FENCED_STATE_EPOCH come back as
//     sharecoord.ErrFencedLeaderEpoch and ErrFencedStateEpoch.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/internal/kconn"
	"github.com/sluice/sluice/sharecoord"
)

// sharePersistTimeout bounds one persister operation across its retries
// (Kafka's persister retries with backoff for about as long).
const sharePersistTimeout = 30 * time.Second

// sharePersistBackoff is the pause before a retry (doubling to 1s).
const sharePersistBackoff = 50 * time.Millisecond

// sharePersistRequestTimeout bounds one round trip to a coordinator.
const sharePersistRequestTimeout = 15 * time.Second

// errSharePersistRetry marks an answer worth another lookup and try.
var errSharePersistRetry = errors.New("server: share coordinator not reachable")

// sharePersister is the server's persister. Safe for concurrent use.
type sharePersister struct {
	s     *Server
	mu    sync.Mutex
	conns map[string]*kconn.Conn // by broker address
	// ends caches the high watermarks of partitions led elsewhere, for
	// DescribeShareGroupOffsets' lag (metrics_lag.go).
	ends remoteEnds
}

func newSharePersister(s *Server) *sharePersister {
	return &sharePersister{s: s, conns: map[string]*kconn.Conn{}}
}

// close closes the connections to other brokers.
func (p *sharePersister) close() {
	p.ends.close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, c := range p.conns {
		c.Close()
		delete(p.conns, a)
	}
}

// coordinatorOf returns the broker id leading k's __share_group_state
// partition, creating the topic when missing; errSharePersistRetry when
// there is none yet.
func (p *sharePersister) coordinatorOf(ctx context.Context, k share.Key) (int32, error) {
	s := p.s
	parts := s.md.partitions(sharecoord.Topic)
	if len(parts) == 0 {
		if err := s.ensureShareStateTopic(ctx); err != nil {
			return -1, fmt.Errorf("%w: %v", errSharePersistRetry, err)
		}
		if parts = s.md.partitions(sharecoord.Topic); len(parts) == 0 {
			return -1, fmt.Errorf("%w: %s is being created", errSharePersistRetry, sharecoord.Topic)
		}
	}
	leader := parts[sharecoord.PartitionFor(k, int32(len(parts)))].Leader
	if leader < 0 {
		return -1, fmt.Errorf("%w: no leader for %s of %s", errSharePersistRetry, sharecoord.Topic, sharecoord.CoordinatorKey(k))
	}
	return leader, nil
}

// do runs op against k's coordinator until it succeeds, fails for good or
// the time is up: local runs it in process, remote sends it to broker id.
func (p *sharePersister) do(ctx context.Context, k share.Key, local func(context.Context) error, remote func(context.Context, *kconn.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, sharePersistTimeout)
	defer cancel()
	backoff := sharePersistBackoff
	for {
		err := p.once(ctx, k, local, remote)
		if err == nil || !retriableShare(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v (%v)", coordlog.ErrCoordinatorNotAvailable, err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (p *sharePersister) once(ctx context.Context, k share.Key, local func(context.Context) error, remote func(context.Context, *kconn.Conn) error) error {
	leader, err := p.coordinatorOf(ctx, k)
	if err != nil {
		return err
	}
	if leader == p.s.nodeID {
		return local(ctx)
	}
	c, err := p.conn(leader)
	if err != nil {
		return err
	}
	if err := remote(ctx, c); err != nil {
		var ke *kerr.Error
		if !errors.As(err, &ke) && !errors.Is(err, sharecoord.ErrFencedLeaderEpoch) && !errors.Is(err, sharecoord.ErrFencedStateEpoch) && ctx.Err() == nil {
			// A network error: redial next time.
			p.drop(c)
			return fmt.Errorf("%w: broker %d: %v", errSharePersistRetry, leader, err)
		}
		return err
	}
	return nil
}

// retriableShare says whether err is worth another lookup and try: the
// coordinator errors Kafka's PersisterStateManager retries, and no
// coordinator reachable. A failed write (NOT_ENOUGH_REPLICAS, a timeout)
// is the caller's answer.
func retriableShare(err error) bool {
	return errors.Is(err, errSharePersistRetry) ||
		errors.Is(err, coordlog.ErrNotCoordinator) || errors.Is(err, coordlog.ErrLoadInProgress) ||
		errors.Is(err, coordlog.ErrCoordinatorNotAvailable) ||
		errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.CoordinatorLoadInProgress)
}

// conn returns the connection to broker id.
func (p *sharePersister) conn(id int32) (*kconn.Conn, error) {
	s := p.s
	addr := ""
	for _, b := range s.md.brokers() {
		if b.ID == id {
			addr = b.AddrFor(s.cfg.InterBrokerListenerName)
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("%w: broker %d is not live", errSharePersistRetry, id)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.conns[addr]
	if c == nil {
		c = kconn.NewSecure(addr, "sluice-share-persister-"+strconv.Itoa(int(s.nodeID)), sharePersistRequestTimeout, s.interBroker)
		p.conns[addr] = c
	}
	return c, nil
}

func (p *sharePersister) drop(c *kconn.Conn) {
	p.mu.Lock()
	if p.conns[c.Addr()] == c {
		delete(p.conns, c.Addr())
	}
	p.mu.Unlock()
	c.Close()
}

// shareCodeError is the error of a persister answer's code (nil for 0).
func shareCodeError(code int16, msg *string) error {
	switch code {
	case 0:
		return nil
	case kerr.FencedLeaderEpoch.Code:
		return sharecoord.ErrFencedLeaderEpoch
	case kerr.FencedStateEpoch.Code:
		return sharecoord.ErrFencedStateEpoch
	}
	err := kerr.ErrorForCode(code)
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// read is ReadShareGroupState of k with leaderEpoch; ok is false when k
// has no state.
func (p *sharePersister) read(ctx context.Context, k share.Key, leaderEpoch int32) (sharecoord.State, bool, error) {
	var st sharecoord.State
	var ok bool
	err := p.do(ctx, k, func(ctx context.Context) error {
		var err error
		st, ok, err = p.s.share.coord.ReadState(ctx, k, leaderEpoch)
		return err
	}, func(ctx context.Context, c *kconn.Conn) error {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewReadShareGroupStateRequestTopic()
		t.TopicID = k.Topic
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch = k.Partition, leaderEpoch
		t.Partitions = append(t.Partitions, rp)
		req.Topics = append(req.Topics, t)
		resp, err := c.Request(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ReadShareGroupStateResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%w: ReadShareGroupState answered %d topics", errSharePersistRetry, len(r.Topics))
		}
		rp2 := r.Topics[0].Partitions[0]
		if err := shareCodeError(rp2.ErrorCode, rp2.ErrorMessage); err != nil {
			return err
		}
		st = sharecoord.State{LeaderEpoch: leaderEpoch, Snapshot: share.Snapshot{StateEpoch: rp2.StateEpoch, StartOffset: rp2.StartOffset}}
		ok = rp2.StartOffset >= 0
		var derr error
		rp2.UnknownTags.Each(func(tag uint32, b []byte) {
			if tag == sharecoord.TagDLQ {
				st.DLQ, derr = sharecoord.DecodeDLQ(b)
			}
		})
		if derr != nil {
			return derr
		}
		for _, b := range rp2.StateBatches {
			st.Batches = append(st.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, DeliveryState: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
		}
		return nil
	})
	return st, ok, err
}

// write is WriteShareGroupState of k.
func (p *sharePersister) write(ctx context.Context, k share.Key, w sharecoord.WriteReq) error {
	return p.do(ctx, k, func(ctx context.Context) error {
		return p.s.share.coord.Write(ctx, k, w)
	}, func(ctx context.Context, c *kconn.Conn) error {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version = 0
		req.GroupID = k.Group
		t := kmsg.NewWriteShareGroupStateRequestTopic()
		t.TopicID = k.Topic
		wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset = k.Partition, w.StateEpoch, w.LeaderEpoch, w.StartOffset
		for _, b := range w.Batches {
			sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, int8(b.DeliveryState), b.DeliveryCount
			wp.StateBatches = append(wp.StateBatches, sb)
		}
		if w.DLQ != nil {
			wp.UnknownTags.Set(sharecoord.TagDLQ, sharecoord.AppendDLQ(nil, w.DLQ))
		}
		t.Partitions = append(t.Partitions, wp)
		req.Topics = append(req.Topics, t)
		resp, err := c.Request(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.WriteShareGroupStateResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%w: WriteShareGroupState answered %d topics", errSharePersistRetry, len(r.Topics))
		}
		rp := r.Topics[0].Partitions[0]
		return shareCodeError(rp.ErrorCode, rp.ErrorMessage)
	})
}

// initialize is InitializeShareGroupState of k.
func (p *sharePersister) initialize(ctx context.Context, k share.Key, stateEpoch int32, start int64) error {
	return p.do(ctx, k, func(ctx context.Context) error {
		return p.s.share.coord.Initialize(ctx, k, stateEpoch, start)
	}, func(ctx context.Context, c *kconn.Conn) error {
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewInitializeShareGroupStateRequestTopic()
		t.TopicID = k.Topic
		ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		ip.Partition, ip.StateEpoch, ip.StartOffset = k.Partition, stateEpoch, start
		t.Partitions = append(t.Partitions, ip)
		req.Topics = append(req.Topics, t)
		resp, err := c.Request(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.InitializeShareGroupStateResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%w: InitializeShareGroupState answered %d topics", errSharePersistRetry, len(r.Topics))
		}
		rp := r.Topics[0].Partitions[0]
		return shareCodeError(rp.ErrorCode, rp.ErrorMessage)
	})
}

// delete is DeleteShareGroupState of k.
func (p *sharePersister) delete(ctx context.Context, k share.Key) error {
	return p.do(ctx, k, func(ctx context.Context) error {
		return p.s.share.coord.Delete(ctx, k)
	}, func(ctx context.Context, c *kconn.Conn) error {
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewDeleteShareGroupStateRequestTopic()
		t.TopicID = k.Topic
		dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		dp.Partition = k.Partition
		t.Partitions = append(t.Partitions, dp)
		req.Topics = append(req.Topics, t)
		resp, err := c.Request(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.DeleteShareGroupStateResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%w: DeleteShareGroupState answered %d topics", errSharePersistRetry, len(r.Topics))
		}
		rp := r.Topics[0].Partitions[0]
		return shareCodeError(rp.ErrorCode, rp.ErrorMessage)
	})
}

// coordinatorTypeShare is FindCoordinator's key type of a share partition
// (KIP-932): the key is "group:topicId:partition".
const coordinatorTypeShare = 2

// parseShareCoordinatorKey is Kafka's SharePartitionKey.getInstance(key).
func parseShareCoordinatorKey(key string) (share.Key, bool) {
	parts := strings.Split(key, ":")
	if len(parts) != 3 || parts[0] == "" {
		return share.Key{}, false
	}
	id, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(id) != 16 {
		return share.Key{}, false
	}
	n, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil || n < 0 {
		return share.Key{}, false
	}
	k := share.Key{Group: parts[0], Partition: int32(n)}
	copy(k.Topic[:], id)
	return k, true
}

// handleFindShareCoordinator answers FindCoordinator v4+ with key type 2
// (10_find_coordinator.go routes it here), as Kafka's
// KafkaApis.getCoordinator: ClusterAction on the cluster
// (CLUSTER_AUTHORIZATION_FAILED), a key that is not
// "group:topicId:partition" INVALID_REQUEST, then the live leader of the
// key's __share_group_state partition (created when missing;
// COORDINATOR_NOT_AVAILABLE until it has a leader).
func handleFindShareCoordinator(s *Server, rc *reqCtx, r *kmsg.FindCoordinatorRequest) (*response, error) {
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	allowed := s.az.allowedCluster(rc, acl.OpClusterAction)
	for _, key := range r.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		code, msg := int16(0), ""
		k, ok := parseShareCoordinatorKey(key)
		switch {
		case !allowed:
			code = kerr.ClusterAuthorizationFailed.Code
		case !ok:
			code, msg = kerr.InvalidRequest.Code, "the key is not group:topicId:partition"
		default:
			leader, err := s.share.persister.coordinatorOf(shareCtx(rc), k)
			code, msg = kerr.CoordinatorNotAvailable.Code, fmt.Sprint(err)
			for _, b := range s.md.brokers() {
				if err == nil && b.ID == leader {
					code, msg = 0, ""
					c.NodeID, c.Host, c.Port = b.ID, b.Host, b.Port
				}
			}
		}
		c.ErrorCode = code
		if code != 0 {
			c.ErrorMessage = &msg
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	s.coordinatorAddrs(rc, resp)
	return kresp(resp), nil
}

// shareSummary is a share partition's ReadShareGroupStateSummary answer:
// what DescribeShareGroupOffsets shows.
type shareSummary struct {
	StateEpoch  int32
	LeaderEpoch int32
	StartOffset int64
	// Complete counts the offsets from StartOffset on that are
	// acknowledged or archived (KIP-1226's DeliveryCompleteCount).
	Complete int64
}

// summaryOf is the summary of a share partition's state.
func summaryOf(snap share.Snapshot, leaderEpoch int32) shareSummary {
	return shareSummary{StateEpoch: snap.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: snap.StartOffset, Complete: shareDeliveryComplete(snap)}
}

// summaries is ReadShareGroupStateSummary of each of keys, all of group,
// as Kafka's persister readSummary: one request per share coordinator
// (in process for this broker's), the keys answered NOT_COORDINATOR and
// the like looked up and asked again, until sharePersistTimeout. Keys
// without state are left out of the answer. Any other error is the
// answer.
func (p *sharePersister) summaries(ctx context.Context, group string, keys []share.Key) (map[share.Key]shareSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, sharePersistTimeout)
	defer cancel()
	out := map[share.Key]shareSummary{}
	if len(p.s.md.partitions(sharecoord.Topic)) == 0 {
		return out, nil // no share state anywhere yet (and none created to say so)
	}
	backoff := sharePersistBackoff
	pending := keys
	for len(pending) > 0 {
		var retry []share.Key
		var why error
		byLeader := map[int32][]share.Key{}
		for _, k := range pending {
			leader, err := p.coordinatorOf(ctx, k)
			if err != nil {
				retry, why = append(retry, k), err
				continue
			}
			byLeader[leader] = append(byLeader[leader], k)
		}
		for leader, ks := range byLeader {
			again, err := p.summariesAt(ctx, leader, group, ks, out)
			if err != nil && !retriableShare(err) {
				return nil, err
			}
			if err != nil {
				why = err
			}
			retry = append(retry, again...)
		}
		if len(retry) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v (%v)", coordlog.ErrCoordinatorNotAvailable, why, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
		pending = retry
	}
	return out, nil
}

// summariesAt asks broker leader for the summaries of ks into out and
// returns the keys to ask again (with the retriable error that made it).
func (p *sharePersister) summariesAt(ctx context.Context, leader int32, group string, ks []share.Key, out map[share.Key]shareSummary) ([]share.Key, error) {
	if leader == p.s.nodeID {
		var again []share.Key
		var why error
		for _, k := range ks {
			st, ok, err := p.s.share.coord.ReadState(ctx, k, -1)
			switch {
			case err != nil && retriableShare(err):
				again, why = append(again, k), err
			case err != nil:
				return nil, err
			case ok && st.StartOffset >= 0:
				out[k] = summaryOf(st.Snapshot, st.LeaderEpoch)
			}
		}
		return again, why
	}
	c, err := p.conn(leader)
	if err != nil {
		return ks, err
	}
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version = 1
	req.GroupID = group
	byTopic := map[[16]byte]int{}
	for _, k := range ks {
		i, ok := byTopic[k.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[k.Topic] = i
			t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
			t.TopicID = k.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch = k.Partition, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := c.Request(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			p.drop(c)
		}
		return ks, fmt.Errorf("%w: broker %d: %v", errSharePersistRetry, leader, err)
	}
	asked := map[share.Key]bool{}
	for _, k := range ks {
		asked[k] = true
	}
	var why error
	for _, t := range resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
		for _, rp := range t.Partitions {
			k := share.Key{Group: group, Topic: t.TopicID, Partition: rp.Partition}
			if !asked[k] {
				continue
			}
			delete(asked, k)
			if err := shareCodeError(rp.ErrorCode, rp.ErrorMessage); err != nil {
				if !retriableShare(err) {
					return nil, err
				}
				asked[k], why = true, err // asked again below
				continue
			}
			if rp.StartOffset >= 0 {
				out[k] = shareSummary{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset, Complete: int64(max(rp.DeliveryCompleteCount, 0))}
			}
		}
	}
	var again []share.Key
	for k := range asked {
		again = append(again, k)
	}
	if len(again) > 0 && why == nil {
		why = fmt.Errorf("%w: broker %d left %d partitions unanswered", errSharePersistRetry, leader, len(again))
	}
	return again, why
}

// groupShareKeys returns the share partitions of group that have state:
// every partition of every topic the metadata knows (group's share state
// can be on any share coordinator, and the membership side does not keep
// the list Kafka's ShareGroupStatePartitionMetadata record holds), asked
// with summaries. topic, when not zero, narrows it to that topic.
func (s *Server) groupShareKeys(ctx context.Context, group string, topic [16]byte) (map[share.Key]shareSummary, error) {
	var keys []share.Key
	for _, name := range s.md.topicNames() {
		id, ok := s.md.topicID(name)
		if !ok || isInternalTopic(name) || (topic != ([16]byte{}) && id != topic) {
			continue
		}
		for _, pi := range s.md.partitions(name) {
			keys = append(keys, share.Key{Group: group, Topic: id, Partition: pi.Partition})
		}
	}
	if len(keys) == 0 {
		return map[share.Key]shareSummary{}, nil
	}
	return s.share.persister.summaries(ctx, group, keys)
}
