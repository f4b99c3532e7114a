package server

// Metadata (key 3), served v0-v12.
//
//	v0: brokers; topics with partitions (leader, replicas, isr). An empty
//	    topic list means every topic.
//	v1: controller id, rack, is_internal; a null topic list means every
//	    topic and an empty one none
//	v2: cluster id
//	v3: throttle time
//	v4: allow_auto_topic_creation (before v4 auto creation is implied)
//	v5: offline replicas
//	v7: partition leader epoch
//	v8: authorized operations (Sluice has no ACLs and leaves them unset)
//	v9: flexible
//	v10: topic ids (request and response)
//	v11: cluster authorized operations removed
//	v12: a topic may be requested by id alone (null name)
//
// The answer comes from the control plane's view: on a single node, this
// broker leads every partition, is its only replica and the whole ISR; in
// cluster mode, the metadata cache the controller feeds (every live broker,
// each partition's leader, replicas, ISR and offline replicas). An unknown
// topic is created when auto.create.topics.enable is set and the request
// allows it (num.partitions, default.replication.factor). A single node
// creates it synchronously and answers it at once; in a cluster it is
// LEADER_NOT_AVAILABLE until the controller brings it online, as Kafka
// answers. A partition whose leader is not live is LEADER_NOT_AVAILABLE.

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/txn"
)

// errLeaderNotAvailable: a topic being created, or a partition without a
// live leader.
var errLeaderNotAvailable = errors.New("server: leader not available")

func handleMetadata(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	live := s.cp.brokers()
	for _, lb := range live {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = lb.ID
		b.Host, b.Port = rc.addrOf(s.nodeID, lb)
		if lb.Rack != "" {
			rack := lb.Rack
			b.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	cid := s.clusterID
	resp.ClusterID = &cid
	resp.ControllerID = s.cp.controllerID()

	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if _, local := s.cp.(localPlane); all && local {
		ts := s.topics.all()
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(ts))
		for _, t := range ts {
			if !s.allowedTopic(rc, acl.OpDescribe, t.name) {
				continue
			}
			if t.md != nil {
				resp.Topics = append(resp.Topics, t.md.get(t, s.nodeID))
			} else {
				resp.Topics = append(resp.Topics, s.metadataTopic(t.name, live))
			}
		}
		out := kresp(resp)
		out.sizeHint = localMetadataSize(r.Version, resp)
		return out, nil
	}
	if all {
		names := s.cp.topicNames()
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(names))
		for _, name := range names {
			if s.allowedTopic(rc, acl.OpDescribe, name) {
				resp.Topics = append(resp.Topics, s.metadataTopic(name, live))
			}
		}
		return kresp(resp), nil
	}
	autoCreate := s.cfg.AutoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation)
	for _, rt := range r.Topics {
		var name string
		if rt.Topic != nil {
			name = *rt.Topic
		}
		if rt.Topic == nil || rt.TopicID != ([16]byte{}) && name == "" {
			if name = s.topicNameByID(rt.TopicID); name == "" {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, s.metadataTopic(name, live))
			continue
		}
		if !s.allowedTopic(rc, acl.OpDescribe, name) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = errorCode(errTopicAuthorization)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if _, ok := s.cp.topicID(name); ok {
			resp.Topics = append(resp.Topics, s.metadataTopic(name, live))
			continue
		}
		err := validateTopicName(name)
		switch {
		case err != nil:
		case !autoCreate || !s.allowedCluster(rc, acl.OpCreate) && !s.allowedTopic(rc, acl.OpCreate, name):
			err = errUnknownTopicOrPartition
		default:
			err = s.autoCreateTopic(name)
		}
		if err == nil && online(s.cp.partitions(name), live) {
			resp.Topics = append(resp.Topics, s.metadataTopic(name, live))
			continue
		}
		if err == nil {
			err = errLeaderNotAvailable
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = &name
		mt.ErrorCode = errorCode(err)
		if mt.ErrorCode == kerr.UnknownServerError.Code {
			s.log.Error("server: metadata auto-create", "topic", name, "err", err)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return kresp(resp), nil
}

// autoCreateTopic creates name with the broker defaults; a topic created
// concurrently is not an error.
func (s *Server) autoCreateTopic(name string) error {
	spec := topicSpec{name: name, partitions: -1, rf: -1}
	if err := s.checkNewTopic(&spec); err != nil {
		if errors.Is(err, errTopicExists) {
			return nil
		}
		return err
	}
	_, err := s.cp.createTopic(context.Background(), spec)
	if errors.Is(err, errTopicExists) || errors.Is(err, cluster.ErrTopicExists) {
		return nil
	}
	return err
}

// topicNameByID returns the name of the topic with id, "" when none.
func (s *Server) topicNameByID(id [16]byte) string {
	if t := s.topics.getID(id); t != nil {
		return t.name
	}
	for _, n := range s.cp.topicNames() {
		if tid, _ := s.cp.topicID(n); tid == id {
			return n
		}
	}
	return ""
}

// metadataTopic describes a topic as the control plane knows it. The
// returned value may share its Partitions (and everything they point to)
// with other responses: it is read-only.
func (s *Server) metadataTopic(name string, live []cluster.Broker) kmsg.MetadataResponseTopic {
	if _, local := s.cp.(localPlane); local {
		if t := s.topics.get(name); t != nil && t.md != nil {
			return t.md.get(t, s.nodeID)
		}
	}
	mt := kmsg.NewMetadataResponseTopic()
	n := name
	mt.Topic = &n
	mt.TopicID, _ = s.cp.topicID(name)
	mt.IsInternal = isInternalTopic(name)
	for _, pi := range s.cp.partitions(name) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = pi.Partition
		mp.Leader = pi.Leader
		mp.LeaderEpoch = pi.LeaderEpoch
		mp.Replicas = pi.Replicas
		mp.ISR = pi.ISR
		mp.OfflineReplicas = pi.OfflineReplicas
		if mp.OfflineReplicas == nil {
			mp.OfflineReplicas = []int32{}
		}
		if !isLive(live, pi.Leader) {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// isInternalTopic reports whether name is one of Kafka's internal topics,
// which only the broker writes, deletes or reshapes.
func isInternalTopic(name string) bool { return name == offsets.Topic || name == txn.Topic }

// isLive reports whether broker id is among live.
func isLive(live []cluster.Broker, id int32) bool {
	for _, b := range live {
		if b.ID == id {
			return true
		}
	}
	return false
}

// online reports whether every partition in parts (at least one) has a
// live leader.
func online(parts []cluster.PartitionInfo, live []cluster.Broker) bool {
	if len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if !isLive(live, p.Leader) {
			return false
		}
	}
	return true
}

// localMetadataSize returns a close upper bound of the encoded size of
// resp, a single-node answer at version v: each partition has one
// replica, that replica as the ISR and no offline replica. It is a hint
// (response.sizeHint): a wrong one costs a reallocation, not a wrong
// answer.
func localMetadataSize(v int16, resp *kmsg.MetadataResponse) int {
	flexible := v >= 9
	arrayLen := 4 // int32 length; a compact (uvarint) one is at most 5 bytes
	if flexible {
		arrayLen = 5
	}
	// ErrorCode, Partition, Leader, then LeaderEpoch, the one-entry
	// Replicas and ISR, the empty OfflineReplicas, tags.
	part := 2 + 4 + 4
	if v >= 7 {
		part += 4
	}
	if flexible {
		part += 2*(1+4) + 1 + 1
	} else {
		part += 2 * (4 + 4)
		if v >= 5 {
			part += 4
		}
	}
	n := 64 + arrayLen // throttle, cluster id and controller, arrays, tags
	for _, b := range resp.Brokers {
		n += 4 + 2 + len(b.Host) + arrayLen + 4 + 3
		if b.Rack != nil {
			n += len(*b.Rack)
		}
	}
	if resp.ClusterID != nil {
		n += len(*resp.ClusterID)
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		// ErrorCode, name, TopicID, IsInternal, partitions, authorized
		// operations, tags.
		n += 2 + arrayLen + 16 + 1 + arrayLen + 4 + 1 + len(t.Partitions)*part
		if t.Topic != nil {
			n += len(*t.Topic)
		}
	}
	return n
}

// metadataCache is a single-node topic's Metadata answer, built once and
// shared by every response until the topic changes. Building it is the
// whole cost of Metadata for all topics at scale: at 100,000 partitions,
// building each partition's entry (and its replica, ISR and offline
// slices) per request took ~45 ms and 47 MB, mostly allocation and GC
// (BenchmarkMetadataAllTopics); reusing it leaves the encoding.
// Safe for concurrent use.
type metadataCache struct {
	e atomic.Pointer[metadataEntry]
}

// metadataEntry is one built answer, immutable once stored.
type metadataEntry struct {
	// parts is the topic's partition slice it was built from: a topic
	// snapshot with other partitions (CreatePartitions) differs in length
	// or backing array. Snapshots copied from one another share a
	// metadataCache, so this is checked, not assumed.
	parts []*partition
	mt    kmsg.MetadataResponseTopic
}

// get returns t's answer on a single node (this broker leads every
// partition, is its only replica and the ISR), rebuilding it when t's
// partitions changed since it was built.
func (c *metadataCache) get(t *topic, self int32) kmsg.MetadataResponseTopic {
	if e := c.e.Load(); e != nil && e.valid(t) {
		return e.mt
	}
	e := &metadataEntry{parts: t.parts, mt: kmsg.NewMetadataResponseTopic()}
	name := t.name
	e.mt.Topic = &name
	e.mt.TopicID = t.id
	e.mt.IsInternal = isInternalTopic(name)
	// One replica list for every partition: responses only read it.
	replicas, offline := []int32{self}, []int32{}
	e.mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(t.parts))
	for i, p := range t.parts {
		mp := &e.mt.Partitions[i]
		mp.Default()
		mp.Partition = int32(i)
		mp.Leader = self
		mp.LeaderEpoch = p.LeaderEpoch()
		mp.Replicas, mp.ISR, mp.OfflineReplicas = replicas, replicas, offline
	}
	c.e.Store(e)
	return e.mt
}

// valid reports whether e still describes t: the same partitions. Their
// leader epochs are not compared: on a single node a partition's epoch is
// fixed when it is opened (only LeaderAndIsr changes it, which the local
// plane refuses), and loading them back costs a cache miss per partition
// (~3 ms at 100,000, half the request).
func (e *metadataEntry) valid(t *topic) bool {
	return len(e.parts) == len(t.parts) && (len(t.parts) == 0 || &e.parts[0] == &t.parts[0])
}
