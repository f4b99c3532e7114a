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
// Sluice is one broker, leader of every partition, the only replica and the
// whole ISR. Unknown topics are created when auto.create.topics.enable is
// set and the request allows it, then answered at once: creation is
// synchronous, so there is no LEADER_NOT_AVAILABLE window.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleMetadata(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.MetadataRequest)
	if s.cm != nil {
		return s.cm.handleMetadata(r), nil
	}
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	host, port := s.advertised()
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = s.nodeID, host, port
	if s.cfg.RackID != "" {
		rack := s.cfg.RackID
		b.Rack = &rack
	}
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	cid := s.clusterID
	resp.ClusterID = &cid
	resp.ControllerID = s.nodeID

	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		for _, t := range s.topics.all() {
			resp.Topics = append(resp.Topics, s.metadataTopic(t))
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
			t := s.topics.getID(rt.TopicID)
			if t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, s.metadataTopic(t))
			continue
		}
		t := s.topics.get(name)
		var err error
		if t == nil {
			err = validateTopicName(name)
			if err == nil && autoCreate {
				t, err = s.autoCreateTopic(name)
			} else if err == nil {
				err = errUnknownTopicOrPartition
			}
		}
		if err != nil {
			if errorCode(err) == kerr.UnknownServerError.Code {
				s.log.Error("server: metadata auto-create", "topic", name, "err", err)
			}
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = errorCode(err)
			if errors.Is(err, errTopicExists) { // created concurrently
				if t = s.topics.get(name); t != nil {
					resp.Topics = append(resp.Topics, s.metadataTopic(t))
					continue
				}
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.metadataTopic(t))
	}
	return kresp(resp), nil
}

// metadataTopic describes t with this broker leading every partition.
func (s *Server) metadataTopic(t *topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.name
	mt.Topic = &name
	mt.TopicID = t.id
	for _, p := range t.parts {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.index
		mp.Leader = s.nodeID
		mp.LeaderEpoch = p.LeaderEpoch()
		mp.Replicas = []int32{s.nodeID}
		mp.ISR = []int32{s.nodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
