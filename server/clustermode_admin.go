package server

// Metadata and the topic admin APIs in cluster mode. They answer from, and
// write to, the cluster (ZooKeeper through cluster.Node), never from the
// local registry, which holds only this broker's replicas:
//
//   - Metadata answers from the node's MetadataCache (every live broker,
//     each partition's leader, replicas, ISR and offline replicas, the
//     controller). An unknown topic is auto-created (when allowed) with
//     num.partitions and default.replication.factor and answered
//     LEADER_NOT_AVAILABLE until the controller brings it online, as Kafka
//     does; a partition whose leader is offline is LEADER_NOT_AVAILABLE.
//   - CreateTopics writes the topic (Node.CreateTopic) and waits, up to the
//     request's timeout, until this broker's metadata shows a leader for
//     every partition, so a client can produce right after.
//   - DeleteTopics requests the deletion (Node.DeleteTopic); the controller
//     carries it out.
//   - CreatePartitions goes to Node.AddPartitions.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
)

// createWaitMax bounds how long CreateTopics waits for leaders when the
// request has no timeout.
const createWaitMax = 30 * time.Second

func (cm *clusterMode) handleMetadata(r *kmsg.MetadataRequest) *response {
	s := cm.s
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	mc := cm.node.Metadata()
	live := mc.Brokers()
	for _, lb := range live {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = lb.ID, lb.Host, lb.Port
		if lb.Rack != "" {
			rack := lb.Rack
			b.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	if len(live) == 0 { // before the first UpdateMetadata: at least ourselves
		host, port := s.advertised()
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = s.nodeID, host, port
		resp.Brokers = append(resp.Brokers, b)
	}
	cid := s.clusterID
	resp.ClusterID = &cid
	resp.ControllerID = mc.ControllerID()
	if resp.ControllerID < 0 {
		resp.ControllerID = cm.node.ControllerID()
	}

	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		for _, name := range mc.Topics() {
			resp.Topics = append(resp.Topics, cm.metadataTopic(name))
		}
		return kresp(resp)
	}
	autoCreate := s.cfg.AutoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation)
	for _, rt := range r.Topics {
		if rt.Topic == nil || rt.TopicID != ([16]byte{}) && *rt.Topic == "" {
			name := ""
			for _, n := range mc.Topics() {
				if id, _ := mc.TopicID(n); id == rt.TopicID {
					name = n
				}
			}
			if name == "" {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, cm.metadataTopic(name))
			continue
		}
		name := *rt.Topic
		if _, ok := mc.TopicID(name); ok {
			resp.Topics = append(resp.Topics, cm.metadataTopic(name))
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = &name
		err := validateTopicName(name)
		switch {
		case err != nil:
		case !autoCreate:
			err = errUnknownTopicOrPartition
		default:
			err = cm.node.CreateTopic(context.Background(), name, int(s.cfg.NumPartitions), int(s.cfg.DefaultReplicationFactor), nil, newTopicID())
			if err == nil || errors.Is(err, cluster.ErrTopicExists) {
				err = errLeaderNotAvailable
			}
		}
		mt.ErrorCode = errorCode(err)
		if mt.ErrorCode == kerr.UnknownServerError.Code {
			s.log.Error("server: metadata auto-create", "topic", name, "err", err)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return kresp(resp)
}

// errLeaderNotAvailable: a topic being created, or a partition without a
// live leader.
var errLeaderNotAvailable = errors.New("server: leader not available")

// metadataTopic describes a topic as the metadata cache knows it.
func (cm *clusterMode) metadataTopic(name string) kmsg.MetadataResponseTopic {
	mc := cm.node.Metadata()
	mt := kmsg.NewMetadataResponseTopic()
	n := name
	mt.Topic = &n
	mt.TopicID, _ = mc.TopicID(name)
	mt.IsInternal = name == "__consumer_offsets"
	for _, pi := range mc.Partitions(name) {
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
		if _, ok := mc.Broker(pi.Leader); !ok {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func (cm *clusterMode) handleCreateTopics(r *kmsg.CreateTopicsRequest) *response {
	s := cm.s
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range r.Topics {
		seen[rt.Topic]++
	}
	wait := createWaitMax
	if r.TimeoutMillis > 0 {
		wait = min(wait, time.Duration(r.TimeoutMillis)*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var created []string
	for _, rt := range r.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		spec, err := cm.checkNewTopic(rt, seen[rt.Topic] > 1)
		if err == nil && !r.ValidateOnly {
			id := newTopicID()
			if spec.assignment != nil {
				err = cm.node.CreateTopicAssigned(ctx, spec.name, spec.assignment, spec.configs, id)
			} else {
				err = cm.node.CreateTopic(ctx, spec.name, int(spec.partitions), int(spec.rf), spec.configs, id)
			}
			if err == nil {
				st.TopicID = id
				created = append(created, spec.name)
			}
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			if st.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: create topic", "topic", rt.Topic, "err", err)
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.NumPartitions, st.ReplicationFactor = spec.partitions, spec.rf
		for _, d := range topicConfigDefs {
			v, src := s.configValue(spec.configs, d.name)
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.Source = d.name, &v, src
			st.Configs = append(st.Configs, c)
		}
		resp.Topics = append(resp.Topics, st)
	}
	// Wait until this broker's metadata shows a leader for every new
	// partition (Kafka's DelayedCreatePartitions); a timeout still
	// answers success, as the topic exists.
	for _, name := range created {
		for ctx.Err() == nil && !cm.online(name) {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return kresp(resp)
}

// online reports whether the metadata cache has name with a live leader
// for every partition of its assignment.
func (cm *clusterMode) online(name string) bool {
	mc := cm.node.Metadata()
	parts := mc.Partitions(name)
	if len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if _, ok := mc.Broker(p.Leader); !ok {
			return false
		}
	}
	return true
}

// checkNewTopic validates a CreateTopics entry in cluster mode: names,
// partitions, configs; the replication factor is checked against the live
// brokers by Node.CreateTopic (or CreateTopicAssigned for a manual
// assignment).
func (cm *clusterMode) checkNewTopic(rt kmsg.CreateTopicsRequestTopic, duplicate bool) (topicSpec, error) {
	s := cm.s
	spec := topicSpec{name: rt.Topic, partitions: rt.NumPartitions, rf: rt.ReplicationFactor, configs: map[string]string{}}
	if duplicate {
		return spec, fmt.Errorf("%w: topic %q appears more than once in the request", errInvalidRequest, rt.Topic)
	}
	asg, err := replicaAssignment(rt)
	if err != nil {
		return spec, err
	}
	if asg != nil {
		// Brokers named are checked against the live ones by
		// Node.CreateTopicAssigned.
		spec.assignment, spec.partitions, spec.rf = asg, int32(len(asg)), int16(len(asg[0]))
	}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return spec, fmt.Errorf("%w: null value for config %q", errInvalidConfig, c.Name)
		}
		spec.configs[c.Name] = *c.Value
	}
	if err := validateTopicName(spec.name); err != nil {
		return spec, err
	}
	mc := cm.node.Metadata()
	cn := collisionName(spec.name)
	for _, n := range mc.Topics() {
		if n == spec.name {
			return spec, fmt.Errorf("%w: topic %q already exists", errTopicExists, spec.name)
		}
		if collisionName(n) == cn {
			return spec, fmt.Errorf("%w: topic %q collides with existing topic %q", errInvalidTopic, spec.name, n)
		}
	}
	if spec.partitions == -1 {
		spec.partitions = s.cfg.NumPartitions
	}
	if spec.rf == -1 {
		spec.rf = s.cfg.DefaultReplicationFactor
	}
	if spec.partitions <= 0 || spec.partitions > s.maxPartitions {
		return spec, fmt.Errorf("%w: %d partitions (allowed 1..%d)", errInvalidPartitions, spec.partitions, s.maxPartitions)
	}
	if spec.rf <= 0 {
		return spec, fmt.Errorf("%w: replication factor must be larger than 0", errInvalidReplicationFactor)
	}
	if spec.assignment != nil {
		var live []int32
		for _, b := range mc.Brokers() {
			live = append(live, b.ID)
		}
		if err := cluster.ValidateAssignment(spec.assignment, int(spec.rf), live); err != nil {
			return spec, err
		}
	} else if live := len(mc.Brokers()); live > 0 && int(spec.rf) > live {
		return spec, fmt.Errorf("%w: replication factor %d larger than the %d live brokers", errInvalidReplicationFactor, spec.rf, live)
	}
	return spec, checkTopicConfigs(spec.configs)
}

func (cm *clusterMode) handleDeleteTopics(r *kmsg.DeleteTopicsRequest) *response {
	s := cm.s
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	reqs := r.Topics
	if r.Version < 6 {
		reqs = nil
		for _, n := range r.TopicNames {
			reqs = append(reqs, kmsg.DeleteTopicsRequestTopic{Topic: &n})
		}
	}
	mc := cm.node.Metadata()
	for _, rt := range reqs {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		err := func() error {
			if !s.cfg.DeleteTopicEnable {
				return errTopicDeletionDisabled
			}
			name := ""
			switch {
			case rt.Topic != nil && rt.TopicID != ([16]byte{}):
				return fmt.Errorf("%w: give a topic name or a topic id, not both", errInvalidRequest)
			case rt.Topic != nil:
				name = *rt.Topic
			default:
				for _, n := range mc.Topics() {
					if id, _ := mc.TopicID(n); id == rt.TopicID {
						name = n
					}
				}
				if name == "" {
					return errUnknownTopicID
				}
				st.Topic = &name
			}
			if id, ok := mc.TopicID(name); ok {
				st.TopicID = id
			}
			return cm.node.DeleteTopic(context.Background(), name)
		}()
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			if st.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: delete topic", "err", err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kresp(resp)
}

func (cm *clusterMode) handleCreatePartitions(r *kmsg.CreatePartitionsRequest) *response {
	s := cm.s
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		switch {
		case rt.Count > s.maxPartitions:
			err = fmt.Errorf("%w: %d partitions is above the limit of %d", errInvalidPartitions, rt.Count, s.maxPartitions)
		case r.ValidateOnly:
			if _, ok := cm.node.Metadata().TopicID(rt.Topic); !ok {
				err = errUnknownTopicOrPartition
			} else if n := len(cm.node.Metadata().Partitions(rt.Topic)); int(rt.Count) <= n {
				err = fmt.Errorf("%w: topic %q has %d partitions; the new count %d must be larger", errInvalidPartitions, rt.Topic, n, rt.Count)
			}
		case len(rt.Assignment) > 0:
			added := make([][]int32, len(rt.Assignment))
			for i, a := range rt.Assignment {
				added[i] = a.Replicas
			}
			err = cm.node.AddPartitionsAssigned(context.Background(), rt.Topic, int(rt.Count), added)
		default:
			err = cm.node.AddPartitions(context.Background(), rt.Topic, int(rt.Count))
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			if st.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: create partitions", "topic", rt.Topic, "err", err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kresp(resp)
}

// describeCluster fills DescribeCluster from the metadata cache: every
// live broker and the controller.
func (cm *clusterMode) describeCluster(resp *kmsg.DescribeClusterResponse) {
	mc := cm.node.Metadata()
	if c := mc.ControllerID(); c >= 0 {
		resp.ControllerID = c
	}
	live := mc.Brokers()
	if len(live) == 0 {
		return
	}
	resp.Brokers = resp.Brokers[:0]
	for _, lb := range live {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port = lb.ID, lb.Host, lb.Port
		if lb.Rack != "" {
			rack := lb.Rack
			b.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
}
