package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HandleControlledShutdown is the controller's side of a broker's
// ControlledShutdown request (Kafka's doControlledShutdown): it marks the
// broker shutting down, moves the leadership of every partition it leads
// (with more than one replica) to another live ISR member, removes it from
// the ISRs it follows in, and sends LeaderAndIsr and UpdateMetadata. It
// returns the partitions the broker still leads (no other in-sync replica
// could take over); the broker retries while that is not empty.
// brokerEpoch must be the broker's current registration epoch (-1, none
// given, is refused: anyone can name a broker id). Errors: ErrNotController,
// ErrBrokerNotAvailable, ErrStaleBrokerEpoch, ErrClosed.
func (n *Node) HandleControlledShutdown(brokerID int32, brokerEpoch int64) ([]TopicPartition, error) {
	req := &shutdownReq{brokerID: brokerID, brokerEpoch: brokerEpoch, reply: make(chan shutdownReply, 1)}
	n.post(event{kind: evControlledShutdown, shutdown: req})
	select {
	case r := <-req.reply:
		return r.remaining, r.err
	case <-n.ctx.Done():
		return nil, ErrClosed
	}
}

func (c *controller) controlledShutdown(id int32, epoch int64) ([]TopicPartition, error) {
	b, ok := c.live[id]
	if !ok {
		return nil, fmt.Errorf("%w: broker %d", ErrBrokerNotAvailable, id)
	}
	if epoch != b.Epoch { // -1 (none given) too: only the broker itself knows it

		return nil, fmt.Errorf("%w: broker %d sent epoch %d, registered epoch is %d", ErrStaleBrokerEpoch, id, epoch, b.Epoch)
	}
	c.shuttingDown[id] = true
	c.log.Info("cluster: controlled shutdown", "broker", id)
	var tps []TopicPartition
	for _, tp := range c.partitionsOn(id) {
		if len(c.replicas(tp)) > 1 {
			tps = append(tps, tp)
		}
	}
	shutting := func(r int32) bool { return c.shuttingDown[r] }
	changed, err := c.changeStates(tps, func(tp TopicPartition, st PartitionState) (PartitionState, bool) {
		if st.Leader == id {
			r := electControlledShutdown(c.replicas(tp), st.ISR, c.isLive, shutting)
			if !r.ok {
				return st, false
			}
			st.Leader, st.ISR = r.Leader, r.ISR
			return st, true
		}
		if slices.Contains(st.ISR, id) && len(st.ISR) > 1 {
			st.ISR = filter(st.ISR, func(r int32) bool { return r != id })
			return st, true
		}
		return st, false
	})
	c.sendLeaderAndIsr(nil, changed, false)
	c.sendUpdateMetadata(c.liveIDs(), changed)
	if err != nil {
		return nil, err
	}
	var remaining []TopicPartition
	for _, tp := range tps {
		if st := c.states[tp]; st != nil && st.Leader == id {
			remaining = append(remaining, tp)
		}
	}
	return remaining, nil
}

// ControlledShutdown asks the controller to move this broker's leadership
// away before it stops (Kafka's controlled.shutdown.enable): it sends
// ControlledShutdown v3 to the controller's address and retries, up to 3
// times a second apart, while the controller cannot be reached, answers an
// error or still names partitions this broker leads. It returns the
// partitions left on the last attempt, with an error when any remain.
func (n *Node) ControlledShutdown(ctx context.Context) ([]TopicPartition, error) {
	const attempts = 3
	var lastErr error
	var remaining []TopicPartition
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			select {
			case <-ctx.Done():
				return remaining, ctx.Err()
			case <-time.After(time.Second):
			}
		}
		remaining, lastErr = n.controlledShutdownOnce(ctx)
		if lastErr == nil && len(remaining) == 0 {
			n.log.Info("cluster: controlled shutdown succeeded")
			return nil, nil
		}
		n.log.Warn("cluster: controlled shutdown attempt failed", "attempt", attempt, "remaining", len(remaining), "err", lastErr)
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("cluster: controlled shutdown: %d partitions still led by this broker", len(remaining))
	}
	return remaining, lastErr
}

func (n *Node) controlledShutdownOnce(ctx context.Context) ([]TopicPartition, error) {
	data, _, err := n.zk.get(controllerPath)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("cluster: controlled shutdown: %w: no controller", ErrNotController)
		}
		return nil, fmt.Errorf("cluster: controlled shutdown: %w", err)
	}
	cid, err := decodeControllerID(data)
	if err != nil {
		return nil, err
	}
	bdata, stat, err := n.zk.get(brokerPath(cid))
	if err != nil {
		return nil, fmt.Errorf("cluster: controlled shutdown: controller %d registration: %w", cid, err)
	}
	cb, err := decodeBroker(cid, bdata, stat.Czxid)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrControlledShutdownRequest()
	req.Version = ControlledShutdownVersion
	req.BrokerID = n.opts.BrokerID
	req.BrokerEpoch = n.BrokerEpoch()
	rctx, cancel := context.WithTimeout(ctx, n.opts.RequestTimeout)
	defer cancel()
	kresp, err := n.opts.Send(rctx, cid, cb.AddrFor(cmp.Or(n.opts.ControlPlaneListener, n.opts.InterBrokerListener)), req)
	if err != nil {
		return nil, fmt.Errorf("cluster: controlled shutdown via controller %d: %w", cid, err)
	}
	resp, ok := kresp.(*kmsg.ControlledShutdownResponse)
	if !ok {
		return nil, fmt.Errorf("cluster: controlled shutdown: unexpected response %T", kresp)
	}
	var remaining []TopicPartition
	for _, p := range resp.PartitionsRemaining {
		remaining = append(remaining, TopicPartition{Topic: p.Topic, Partition: p.Partition})
	}
	if resp.ErrorCode != 0 {
		return remaining, fmt.Errorf("cluster: controlled shutdown: controller %d answered error code %d", cid, resp.ErrorCode)
	}
	return remaining, nil
}
