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
//	v8: authorized operations, when asked for (see authorizedOps)
//	v9: flexible
//	v10: topic ids (request and response)
//	v11: cluster authorized operations removed
//	v12: a topic may be requested by id alone (null name)
//
// The answer comes from the control plane's view: on a single node, this
// broker leads every partition, is its only replica and the whole ISR; in
// cluster mode, the metadata cache the controller feeds (every live broker,
// each partition's leader, replicas, ISR and offline replicas). An unknown
// topic is created when auto.create.topics.enable is set, the request
// allows it (num.partitions, default.replication.factor) and the principal
// may Create it on the cluster or the topic (TOPIC_AUTHORIZATION_FAILED
// otherwise, as Kafka answers). A single node creates it synchronously and
// answers it at once; in a cluster it is LEADER_NOT_AVAILABLE until the
// controller brings it online, as Kafka answers. A partition whose leader
// is not live is LEADER_NOT_AVAILABLE.
//
// Authorization follows Kafka's handleTopicMetadataRequest: a topic the
// principal may not Describe is TOPIC_AUTHORIZATION_FAILED, with its name
// and no id when asked for by name, with its id and a null name when asked
// for by id, and left out of an all-topics answer.

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/sharecoord"
	"github.com/sluice/sluice/txn"
	"github.com/sluice/sluice/zerocopy"
)

// errLeaderNotAvailable: a topic being created, or a partition without a
// live leader.
var errLeaderNotAvailable = errors.New("server: leader not available")

func handleMetadata(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	if r.Version >= 8 {
		// Filled in once the topics are known; resp is encoded later.
		defer s.authorizedOps(rc, r, resp)
	}
	live := s.md.brokers()
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
	resp.ControllerID = s.md.controllerID()

	// On a single node, a topic of the registry is written from the
	// topic itself when the response is encoded (localMetadata), and
	// resp.Topics holds it without partitions.
	_, isLocal := s.md.(localPlane)
	lm := &localMetadata{self: s.nodeID, offline: s.rm.OfflineFunc()}
	addTopic := func(name string) {
		if isLocal {
			if t := s.rm.Topic(name); t != nil {
				lm.add(resp, t)
				return
			}
		}
		lm.addResponse(resp, s.lookup.metadataTopic(name, live))
	}

	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all && isLocal {
		ts := s.rm.Topics()
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(ts))
		lm.topics = make([]*replica.Topic, 0, len(ts))
		for _, t := range ts {
			if s.az.allowedTopic(rc, acl.OpDescribe, t.Name) {
				lm.add(resp, t)
			}
		}
		return lm.response(resp), nil
	}
	if all {
		names := s.md.topicNames()
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(names))
		for _, name := range names {
			if s.az.allowedTopic(rc, acl.OpDescribe, name) {
				resp.Topics = append(resp.Topics, s.lookup.metadataTopic(name, live))
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
			if name = s.lookup.topicNameByID(rt.TopicID); name == "" {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				lm.addResponse(resp, mt)
				continue
			}
			if !s.az.allowedTopic(rc, acl.OpDescribe, name) {
				// Kafka does not hold a topic id secret, but the
				// name is: the id comes back, the name stays null.
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = errorCode(errTopicAuthorization)
				lm.addResponse(resp, mt)
				continue
			}
			addTopic(name)
			continue
		}
		if !s.az.allowedTopic(rc, acl.OpDescribe, name) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = errorCode(errTopicAuthorization)
			lm.addResponse(resp, mt)
			continue
		}
		if _, ok := s.md.topicID(name); ok {
			addTopic(name)
			continue
		}
		// Create is checked before the name, as Kafka does: a topic
		// that would be auto-created but may not be created is
		// TOPIC_AUTHORIZATION_FAILED, whatever its name.
		err := validateTopicName(name)
		switch {
		case autoCreate && !s.az.allowedCluster(rc, acl.OpCreate) && !s.az.allowedTopic(rc, acl.OpCreate, name):
			err = errTopicAuthorization
		case err != nil:
		case !autoCreate:
			err = errUnknownTopicOrPartition
		default:
			err = s.autoCreateTopic(name)
		}
		if err == nil && online(s.md.partitions(name), live) {
			addTopic(name)
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
		lm.addResponse(resp, mt)
	}
	if !isLocal {
		return kresp(resp), nil
	}
	return lm.response(resp), nil
}

// authorizedOps fills resp's authorized operations as Kafka's
// handleTopicMetadataRequest does, when the request asks for them: the
// cluster's (v8-v10; 0 without Describe on the cluster), and each topic's
// that the principal may Describe, found or not (a topic refused, by name
// or for creation, or an unknown id keeps INT32_MIN).
func (s *Server) authorizedOps(rc *reqCtx, r *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if r.IncludeClusterAuthorizedOperations && r.Version <= 10 {
		resp.AuthorizedOperations = s.az.clusterAuthorizedOperations(rc)
	}
	if !r.IncludeTopicAuthorizedOperations {
		return
	}
	denied := errorCode(errTopicAuthorization)
	for i := range resp.Topics {
		mt := &resp.Topics[i]
		if mt.Topic != nil && mt.ErrorCode != denied {
			mt.AuthorizedOperations = s.az.authorizedOperations(rc, acl.ResourceTopic, *mt.Topic)
		}
	}
}

// autoCreateTopic creates name with the broker defaults; a topic created
// concurrently is not an error.
func (s *Server) autoCreateTopic(name string) error {
	spec := topicSpec{name: name, partitions: -1, rf: -1}
	if err := s.rules.checkNewTopic(&spec); err != nil {
		if errors.Is(err, errTopicExists) {
			return nil
		}
		return err
	}
	_, err := s.admin.createTopic(context.Background(), spec)
	if errors.Is(err, errTopicExists) || errors.Is(err, cluster.ErrTopicExists) {
		return nil
	}
	return err
}

// topicNameByID returns the name of the topic with id, "" when none.
func (l *topicLookup) topicNameByID(id [16]byte) string {
	if t := l.rm.TopicByID(id); t != nil {
		return t.Name
	}
	for _, n := range l.md.topicNames() {
		if tid, _ := l.md.topicID(n); tid == id {
			return n
		}
	}
	return ""
}

// metadataTopic describes a topic as the control plane knows it. The
// returned value may share its Partitions (and everything they point to)
// with other responses: it is read-only.
func (l *topicLookup) metadataTopic(name string, live []metadata.Broker) kmsg.MetadataResponseTopic {
	if _, local := l.md.(localPlane); local {
		if t := l.rm.Topic(name); t != nil {
			return localTopic(t, l.nodeID, l.rm.OfflineFunc())
		}
	}
	mt := kmsg.NewMetadataResponseTopic()
	n := name
	mt.Topic = &n
	mt.TopicID, _ = l.md.topicID(name)
	mt.IsInternal = isInternalTopic(name)
	for _, pi := range l.md.partitions(name) {
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
func isInternalTopic(name string) bool {
	return name == offsets.Topic || name == txn.Topic || name == sharecoord.Topic
}

// isLive reports whether broker id is among live.
func isLive(live []metadata.Broker, id int32) bool {
	for _, b := range live {
		if b.ID == id {
			return true
		}
	}
	return false
}

// online reports whether every partition in parts (at least one) has a
// live leader.
func online(parts []metadata.PartitionInfo, live []metadata.Broker) bool {
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

// localMetadata is a single node's Metadata answer whose topics of the
// registry are written from the topics themselves, by appendTo, rather
// than from kmsg structs: a cached kmsg answer held ~100 bytes per
// partition for as long as the topic lived (10 MB at 100,000 partitions,
// and the heap the collector lets grow over it), and one built per
// request was ~45 ms and 47 MB of garbage at that size. What it writes is
// byte for byte what kmsg writes for the same answer
// (TestLocalMetadataEncoding).
type localMetadata struct {
	self int32
	// topics[i], when not nil, is resp.Topics[i]'s topic: resp.Topics[i]
	// then carries its name, id and flags but no partitions, which
	// appendTo writes from the topic (this broker leads every partition
	// and is its only replica and ISR).
	topics []*replica.Topic
	n      int // how many of topics are not nil
	// offline reports a partition whose log dir failed (nil: none has):
	// its topic is written from kmsg structs, without a leader.
	offline func(name string, part int32) bool
}

// anyOffline reports whether a partition of t is offline.
func anyOffline(t *replica.Topic, offline func(string, int32) bool) bool {
	for i := range t.Parts {
		if offline(t.Name, int32(i)) {
			return true
		}
	}
	return false
}

// add appends t's entry to resp, its partitions to be written from t.
func (m *localMetadata) add(resp *kmsg.MetadataResponse, t *replica.Topic) {
	if m.offline != nil && anyOffline(t, m.offline) {
		// A partition whose log dir failed has no leader: written from
		// kmsg structs (localTopic), off the fast path.
		m.addResponse(resp, localTopic(t, m.self, m.offline))
		return
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &t.Name // t is immutable: no copy
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	resp.Topics = append(resp.Topics, mt)
	m.topics = append(m.topics, t)
	m.n++
}

// addResponse appends mt, written as it is.
func (m *localMetadata) addResponse(resp *kmsg.MetadataResponse, mt kmsg.MetadataResponseTopic) {
	resp.Topics = append(resp.Topics, mt)
	m.topics = append(m.topics, nil)
}

// response returns the response for resp: encoded by appendTo when it
// has topics of the registry (its kresp then lists them without
// partitions), else by kmsg.
func (m *localMetadata) response(resp *kmsg.MetadataResponse) *response {
	out := kresp(resp)
	if m.n == 0 {
		// No topic of the registry: kmsg encodes it all. (Every version
		// served is one appendTo knows: TestLocalMetadataEncoding checks
		// each against kmsg, up to the table's maximum.)
		out.sizeHint = localMetadataSize(resp.Version, resp, nil)
		return out
	}
	hint := localMetadataSize(resp.Version, resp, m.topics)
	out.encode = func(w *zerocopy.Writer, corr int32) error {
		w.GrowFrame(hint + 16) // + size, correlation id, header tags
		dst := w.Frame()
		start := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
		if resp.IsFlexible() {
			dst = append(dst, 0) // response header tags
		}
		dst = m.appendTo(dst, resp)
		binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
		w.SetFrame(dst)
		return nil
	}
	return out
}

// appendTo appends resp encoded at its version (at most 12), the entries
// of m.topics written from the topic. The structs of resp carry no
// unknown tags (the broker sets none).
func (m *localMetadata) appendTo(dst []byte, resp *kmsg.MetadataResponse) []byte {
	v := resp.Version
	flex := v >= 9
	if v >= 3 {
		dst = kbin.AppendInt32(dst, resp.ThrottleMillis)
	}
	dst = appendArrayLen(dst, len(resp.Brokers), flex)
	for i := range resp.Brokers {
		b := &resp.Brokers[i]
		dst = kbin.AppendInt32(dst, b.NodeID)
		dst = appendString(dst, b.Host, flex)
		dst = kbin.AppendInt32(dst, b.Port)
		if v >= 1 {
			dst = appendNullableString(dst, b.Rack, flex)
		}
		if flex {
			dst = append(dst, 0) // tags
		}
	}
	if v >= 2 {
		dst = appendNullableString(dst, resp.ClusterID, flex)
	}
	if v >= 1 {
		dst = kbin.AppendInt32(dst, resp.ControllerID)
	}
	dst = appendArrayLen(dst, len(resp.Topics), flex)
	for i := range resp.Topics {
		mt := &resp.Topics[i]
		dst = kbin.AppendInt16(dst, mt.ErrorCode)
		if v < 12 {
			var name string
			if mt.Topic != nil {
				name = *mt.Topic
			}
			dst = appendString(dst, name, flex)
		} else {
			dst = appendNullableString(dst, mt.Topic, flex)
		}
		if v >= 10 {
			dst = kbin.AppendUuid(dst, mt.TopicID)
		}
		if v >= 1 {
			dst = kbin.AppendBool(dst, mt.IsInternal)
		}
		if t := m.topics[i]; t != nil {
			dst = appendLocalPartitions(dst, v, t.LeaderEpochs(), m.self)
		} else {
			dst = appendPartitions(dst, v, mt.Partitions)
		}
		if v >= 8 {
			dst = kbin.AppendInt32(dst, mt.AuthorizedOperations)
		}
		if flex {
			dst = append(dst, 0) // tags
		}
	}
	if v >= 8 && v <= 10 {
		dst = kbin.AppendInt32(dst, resp.AuthorizedOperations)
	}
	if flex {
		dst = append(dst, 0) // tags
	}
	return dst
}

// appendLocalPartitions appends the partitions of a single node's topic
// whose leader epochs are epochs: led by self, its only replica and ISR,
// none offline.
func appendLocalPartitions(dst []byte, v int16, epochs []int32, self int32) []byte {
	flex := v >= 9
	dst = appendArrayLen(dst, len(epochs), flex)
	for i, epoch := range epochs {
		dst = kbin.AppendInt16(dst, 0) // error code
		dst = kbin.AppendInt32(dst, int32(i))
		dst = kbin.AppendInt32(dst, self)
		if v >= 7 {
			dst = kbin.AppendInt32(dst, epoch)
		}
		for range 2 { // replicas, ISR
			dst = appendArrayLen(dst, 1, flex)
			dst = kbin.AppendInt32(dst, self)
		}
		if v >= 5 {
			dst = appendArrayLen(dst, 0, flex) // offline replicas
		}
		if flex {
			dst = append(dst, 0) // tags
		}
	}
	return dst
}

// appendPartitions appends ps as kmsg does at version v.
func appendPartitions(dst []byte, v int16, ps []kmsg.MetadataResponseTopicPartition) []byte {
	flex := v >= 9
	dst = appendArrayLen(dst, len(ps), flex)
	for i := range ps {
		p := &ps[i]
		dst = kbin.AppendInt16(dst, p.ErrorCode)
		dst = kbin.AppendInt32(dst, p.Partition)
		dst = kbin.AppendInt32(dst, p.Leader)
		if v >= 7 {
			dst = kbin.AppendInt32(dst, p.LeaderEpoch)
		}
		dst = appendInt32s(dst, p.Replicas, flex)
		dst = appendInt32s(dst, p.ISR, flex)
		if v >= 5 {
			dst = appendInt32s(dst, p.OfflineReplicas, flex)
		}
		if flex {
			dst = append(dst, 0) // tags
		}
	}
	return dst
}

func appendInt32s(dst []byte, xs []int32, flex bool) []byte {
	dst = appendArrayLen(dst, len(xs), flex)
	for _, x := range xs {
		dst = kbin.AppendInt32(dst, x)
	}
	return dst
}

func appendArrayLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func appendString(dst []byte, s string, flex bool) []byte {
	if flex {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}

func appendNullableString(dst []byte, s *string, flex bool) []byte {
	if flex {
		return kbin.AppendCompactNullableString(dst, s)
	}
	return kbin.AppendNullableString(dst, s)
}

// localMetadataSize returns a close upper bound of the encoded size of
// resp, a single node's answer at version v, whose topics[i] (when
// topics is not nil and topics[i] is not nil) are written from the topic.
// It is a hint (response.sizeHint): a wrong one costs a reallocation,
// not a wrong answer.
func localMetadataSize(v int16, resp *kmsg.MetadataResponse, topics []*replica.Topic) int {
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
		mt := &resp.Topics[i]
		// ErrorCode, name, TopicID, IsInternal, partitions, authorized
		// operations, tags.
		n += 2 + arrayLen + 16 + 1 + arrayLen + 4 + 1
		if mt.Topic != nil {
			n += len(*mt.Topic)
		}
		parts := len(mt.Partitions)
		if topics != nil && topics[i] != nil {
			parts = len(topics[i].Parts)
		}
		n += parts * part
	}
	return n
}

// localTopic returns t's Metadata entry as kmsg structs, on a single node
// (this broker leads every partition, is its only replica and the ISR; a
// partition whose log dir failed has no leader and its replica offline,
// as Kafka's controller leaves a partition whose only replica is offline).
func localTopic(t *replica.Topic, self int32, isOffline func(string, int32) bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &t.Name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	// One replica list for every partition: responses only read it.
	replicas, offline := []int32{self}, []int32{}
	epochs := t.LeaderEpochs()
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(epochs))
	for i, epoch := range epochs {
		mp := &mt.Partitions[i]
		mp.Default()
		mp.Partition = int32(i)
		mp.Leader = self
		mp.LeaderEpoch = epoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = replicas, replicas, offline
		if isOffline != nil && isOffline(t.Name, int32(i)) {
			mp.Leader, mp.OfflineReplicas = -1, replicas
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
	}
	return mt
}
