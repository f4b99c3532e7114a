package cluster

import (
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice/sluice/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderDuringDelete is the leader an UpdateMetadata partition state
// carries while its topic is being deleted: the broker forgets the
// partition (Kafka's LeaderAndIsr.LeaderDuringDelete).
const leaderDuringDelete = -2

// PartitionInfo is a partition as the last UpdateMetadata described it.
type PartitionInfo = metadata.PartitionInfo

// MetadataCache is a broker's view of the cluster, built only from the
// controller's UpdateMetadata requests, as Kafka's ZkMetadataCache is: the
// live brokers with their addresses and racks, every partition's state and
// the topic ids. It answers Metadata requests. Safe for concurrent use;
// returned slices and structs are copies the caller owns.
type MetadataCache struct {
	mu              sync.RWMutex
	controllerID    int32
	controllerEpoch int32
	brokers         map[int32]Broker
	topics          map[string]*cachedTopic
}

type cachedTopic struct {
	id    [16]byte
	parts map[int32]PartitionInfo
}

// NewMetadataCache returns an empty cache: no brokers, no topics,
// controller -1.
func NewMetadataCache() *MetadataCache {
	return &MetadataCache{controllerID: -1, brokers: map[int32]Broker{}, topics: map[string]*cachedTopic{}}
}

// Apply applies an UpdateMetadata request (versions 5-7 shape; v0-v4
// PartitionStates are read too). The live broker list replaces the old one;
// partition states are upserts, and a state whose leader is -2 removes the
// partition (and the topic with its last partition). A request from an
// older controller epoch than one already applied is ignored and Apply
// returns false.
func (c *MetadataCache) Apply(req *kmsg.UpdateMetadataRequest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.ControllerEpoch < c.controllerEpoch {
		return false
	}
	c.controllerID, c.controllerEpoch = req.ControllerID, req.ControllerEpoch
	c.brokers = make(map[int32]Broker, len(req.LiveBrokers))
	for _, lb := range req.LiveBrokers {
		b := Broker{ID: lb.ID, Host: lb.Host, Port: lb.Port}
		if len(lb.Endpoints) > 0 && b.Host == "" {
			b.Host, b.Port = lb.Endpoints[0].Host, lb.Endpoints[0].Port
		}
		for _, ep := range lb.Endpoints {
			if b.Endpoints == nil {
				b.Endpoints = map[string]string{}
			}
			b.Endpoints[strings.ToUpper(ep.ListenerName)] = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		}
		if lb.Rack != nil {
			b.Rack = *lb.Rack
		}
		c.brokers[lb.ID] = b
	}
	apply := func(topic string, id [16]byte, ps kmsg.UpdateMetadataRequestTopicPartition) {
		t := c.topics[topic]
		if ps.Leader == leaderDuringDelete {
			if t != nil {
				delete(t.parts, ps.Partition)
				if len(t.parts) == 0 {
					delete(c.topics, topic)
				}
			}
			return
		}
		if t == nil {
			t = &cachedTopic{parts: map[int32]PartitionInfo{}}
			c.topics[topic] = t
		}
		if id != ([16]byte{}) {
			t.id = id
		}
		t.parts[ps.Partition] = PartitionInfo{
			Topic: topic, Partition: ps.Partition, TopicID: t.id,
			ControllerEpoch: ps.ControllerEpoch, Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch,
			ISR: slices.Clone(ps.ISR), Replicas: slices.Clone(ps.Replicas),
			OfflineReplicas: slices.Clone(ps.OfflineReplicas), ZkVersion: ps.ZKVersion,
		}
	}
	for _, ps := range req.PartitionStates {
		apply(ps.Topic, [16]byte{}, ps)
	}
	for _, ts := range req.TopicStates {
		for _, ps := range ts.PartitionStates {
			apply(ts.Topic, ts.TopicID, ps)
		}
	}
	return true
}

// ControllerID is the controller named by the last UpdateMetadata, or -1.
func (c *MetadataCache) ControllerID() int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.controllerID
}

// Brokers returns the live brokers sorted by id.
func (c *MetadataCache) Brokers() []Broker {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Broker, 0, len(c.brokers))
	for _, b := range c.brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Broker returns a live broker by id.
func (c *MetadataCache) Broker(id int32) (Broker, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	b, ok := c.brokers[id]
	return b, ok
}

// Topics returns the known topic names, sorted.
func (c *MetadataCache) Topics() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.topics))
	for t := range c.topics {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// TopicID returns a topic's id.
func (c *MetadataCache) TopicID(topic string) ([16]byte, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.topics[topic]
	if !ok {
		return [16]byte{}, false
	}
	return t.id, true
}

// Partitions returns a topic's partitions sorted by number.
func (c *MetadataCache) Partitions(topic string) []PartitionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.topics[topic]
	if !ok {
		return nil
	}
	out := make([]PartitionInfo, 0, len(t.parts))
	for _, p := range t.parts {
		out = append(out, clonePartition(p))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}

// Partition returns one partition's state.
func (c *MetadataCache) Partition(topic string, partition int32) (PartitionInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.topics[topic]
	if !ok {
		return PartitionInfo{}, false
	}
	p, ok := t.parts[partition]
	return clonePartition(p), ok
}

func clonePartition(p PartitionInfo) PartitionInfo {
	p.ISR, p.Replicas, p.OfflineReplicas = slices.Clone(p.ISR), slices.Clone(p.Replicas), slices.Clone(p.OfflineReplicas)
	return p
}
