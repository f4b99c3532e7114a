package server

// End offsets of partitions without a replica here, for the consumer lag
// of the groups this broker coordinates: asked of each partition's leader
// with ListOffsets (latest, read_uncommitted: the high watermark) over the
// inter-broker listener, at scrape time, and cached for remoteEndTTL so
// that frequent or concurrent scrapes cost one round trip per leader at
// most every remoteEndTTL. A leader that does not answer within
// remoteEndTimeout leaves its partitions out of that scrape.

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/kconn"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/metastore"
)

const (
	remoteEndTTL     = 5 * time.Second
	remoteEndTimeout = 2 * time.Second
)

// remoteEnds is the cache. Its mutex also serializes refreshes.
type remoteEnds struct {
	mu   sync.Mutex
	ends map[metastore.TopicPartition]remoteEnd
	// conns by address: only addresses of brokers in the current
	// metadata; the others are closed at the next lookup.
	conns map[string]*kconn.Conn
}

type remoteEnd struct {
	hw int64
	at time.Time
}

// lookup returns the high watermark of each of tps that its leader
// reported within remoteEndTTL, asking the leaders of the others now.
func (r *remoteEnds) lookup(s *Server, tps []metastore.TopicPartition) map[metastore.TopicPartition]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ends == nil {
		r.ends = map[metastore.TopicPartition]remoteEnd{}
		r.conns = map[string]*kconn.Conn{}
	}
	now := time.Now()
	out := make(map[metastore.TopicPartition]int64, len(tps))
	// byLeader: the stale partitions to ask, by leader id.
	byLeader := map[int32][]metastore.TopicPartition{}
	// topics: each topic's partitions, looked up once per lookup (a
	// lookup copies the topic's partitions).
	topics := map[string][]metadata.PartitionInfo{}
	for _, tp := range tps {
		if e, ok := r.ends[tp]; ok && now.Sub(e.at) < remoteEndTTL {
			out[tp] = e.hw
			continue
		}
		parts, ok := topics[tp.Topic]
		if !ok {
			parts = s.md.partitions(tp.Topic)
			topics[tp.Topic] = parts
		}
		if tp.Partition < 0 || int(tp.Partition) >= len(parts) || parts[tp.Partition].Leader < 0 || parts[tp.Partition].Leader == s.nodeID {
			continue // unknown, offline, or led here (then it is local)
		}
		l := parts[tp.Partition].Leader
		byLeader[l] = append(byLeader[l], tp)
	}
	if len(byLeader) == 0 && len(r.conns) == 0 {
		return out
	}
	addrs := map[int32]string{}
	current := map[string]bool{}
	for _, b := range s.md.brokers() {
		a := b.AddrFor(s.cfg.InterBrokerListenerName)
		addrs[b.ID] = a
		current[a] = true
	}
	// Close the connections to addresses no broker has any more (a broker
	// gone, or moved).
	for addr, c := range r.conns {
		if !current[addr] {
			c.Close()
			delete(r.conns, addr)
		}
	}
	if len(byLeader) == 0 {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteEndTimeout)
	defer cancel()
	type answer struct {
		hws map[metastore.TopicPartition]int64
	}
	answers := make(chan answer, len(byLeader))
	asked := 0
	for id, tps := range byLeader {
		addr := addrs[id]
		if addr == "" {
			continue
		}
		c := r.conns[addr]
		if c == nil {
			c = kconn.NewSecure(addr, "sluice-metrics-"+strconv.Itoa(int(s.nodeID)), remoteEndTimeout, s.interBroker)
			r.conns[addr] = c
		}
		asked++
		go func() {
			hws, err := listEnds(ctx, c, tps)
			if err != nil {
				s.log.Debug("server: metrics: end offsets from the leader failed; lag left out", "leader", id, "addr", addr, "err", err)
			}
			answers <- answer{hws}
		}()
	}
	for range asked {
		a := <-answers
		for tp, hw := range a.hws {
			r.ends[tp] = remoteEnd{hw: hw, at: now}
			out[tp] = hw
		}
	}
	// Forget what nobody asked for lately (deleted topics, gone groups).
	for tp, e := range r.ends {
		if now.Sub(e.at) > 10*remoteEndTTL {
			delete(r.ends, tp)
		}
	}
	return out
}

// listEnds asks one leader for the high watermarks of tps.
func listEnds(ctx context.Context, c *kconn.Conn, tps []metastore.TopicPartition) (map[metastore.TopicPartition]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	byTopic := map[string]int{}
	for _, tp := range tps {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = tp.Partition, -1, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := c.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	out := map[metastore.TopicPartition]int64{}
	for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == 0 && rp.Offset >= 0 {
				out[metastore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.Offset
			}
		}
	}
	return out, nil
}

// close closes the cached connections.
func (r *remoteEnds) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for addr, c := range r.conns {
		c.Close()
		delete(r.conns, addr)
	}
}
