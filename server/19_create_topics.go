package server

// CreateTopics (key 19), served v0-v7.
//
//	v0: topics with partitions, replication factor, replica assignment, configs
//	v1: validate_only; per-topic error message
//	v2: throttle time
//	v4: -1 partitions / replication factor mean the broker defaults (KIP-464)
//	v5: flexible; the response echoes partitions, replication factor and the
//	    resulting configs (KIP-525)
//	v7: topic id in the response
//
// Names are checked as Kafka checks them (1-249 of [a-zA-Z0-9._-], not "."
// or "..", no collision with an existing topic once '.' becomes '_'). The
// replication factor may not exceed the live brokers (on a single node: 1);
// a manual assignment must give every partition the same number of distinct
// live brokers. Sluice applies -1 defaults at every version. An internal
// topic (__consumer_offsets, __transaction_state) can only be created with the shape the broker
// gives it (see checkInternalTopic).
//
// As in Kafka's handleCreateTopicsRequest, a name given twice is
// INVALID_REQUEST, then Create (on the cluster or the topic) is checked,
// and only an authorized topic is validated: without Create the answer is
// TOPIC_AUTHORIZATION_FAILED whether or not the topic exists. Without
// DescribeConfigs on a topic, its topic_config_error_code (v5+) is
// TOPIC_AUTHORIZATION_FAILED and a created topic answers no configs,
// partitions, replication factor or id, as Kafka (ZooKeeper mode) answers.
//
// The control plane creates the topic: a single node synchronously; a
// cluster by writing it to ZooKeeper, after which this request waits, up to
// its timeout, until this broker's metadata shows a leader for every new
// partition, so a client can produce right after (Kafka's
// DelayedCreatePartitions). A timeout still answers success: the topic
// exists.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/topicname"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/quota"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/sharecoord"
	"github.com/sluice/sluice/txn"
)

// createWaitMax bounds how long CreateTopics waits for leaders when the
// request has no timeout.
const createWaitMax = 30 * time.Second

func handleCreateTopics(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.CreateTopicsRequest)
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
	clusterCreate := s.az.allowedCluster(rc, acl.OpCreate)
	mq := s.mutationQuota(rc, r.Version >= 6) // KIP-599: strict from v6
	for _, rt := range r.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		// Create is checked before the topic is validated, so that a
		// refusal does not tell whether it exists or collides with one.
		var spec topicSpec
		var err error
		// Kafka's topic_config_error_code: without DescribeConfigs on
		// the topic, TOPIC_AUTHORIZATION_FAILED, and a created topic's
		// configs, partitions, replication factor and id stay hidden;
		// it is cleared when the creation itself fails, but not for a
		// topic refused before (a duplicate, or no Create).
		describeConfigs := s.az.allowedTopic(rc, acl.OpDescribeConfigs, rt.Topic)
		refusedFirst := seen[rt.Topic] > 1
		if refusedFirst || clusterCreate || s.az.allowedTopic(rc, acl.OpCreate, rt.Topic) {
			spec, err = s.rules.newTopicSpec(rt, seen[rt.Topic] > 1)
		} else {
			err, refusedFirst = errTopicAuthorization, true
		}
		if err == nil && !r.ValidateOnly {
			err = mq.Record(float64(spec.partitions))
		}
		if err == nil && !r.ValidateOnly {
			st.TopicID, err = s.admin.createTopic(ctx, spec)
			if err == nil {
				created = append(created, spec.name)
			}
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			if st.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: create topic", "topic", rt.Topic, "err", err)
			}
			if refusedFirst && !describeConfigs {
				st.ConfigErrorCode = errorCode(errTopicAuthorization)
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if !describeConfigs {
			st.ConfigErrorCode = errorCode(errTopicAuthorization)
			st.TopicID = [16]byte{}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.NumPartitions, st.ReplicationFactor = spec.partitions, spec.rf
		for _, d := range topicConfigDefs {
			v, src := s.configValue(spec.configs, d.Name)
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.Source = d.Name, &v, src
			st.Configs = append(st.Configs, c)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if _, local := s.md.(localPlane); local {
		// A single node created them synchronously, led by this broker:
		// they are online (and building each one's partition list to
		// check cost ~13 KB of garbage per topic of 100 partitions).
		created = nil
	}
	for _, name := range created {
		for ctx.Err() == nil && !online(s.md.partitions(name), s.md.brokers()) {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	rc.throttle(quota.ControllerMutation, mq.ThrottleMs())
	return kresp(resp), nil
}

// topicRules validates topic administration requests (CreateTopics,
// CreatePartitions, Metadata's auto-creation) against the cluster's view
// and the broker config: names and collisions, partition counts,
// replication factors, manual assignments, configs and the internal
// topics' shape. It changes nothing.
type topicRules struct {
	cfg *config.Config
	md  metadataView
	// rm is the single node's registry, whose names eachName reads
	// without copying them.
	rm *replica.Manager
	// maxPartitions bounds one topic's partition count:
	// INVALID_PARTITIONS above it.
	maxPartitions int32
	// relations checks the rules between a topic's configs
	// (Server.checkTopicConfigRelations).
	relations func(overrides map[string]string) error
	// txnSpec is the shape of __transaction_state (Server.txnTopicSpec).
	txnSpec func() topicSpec
	// shareSpec is the shape of __share_group_state (Server.shareStateTopicSpec).
	shareSpec func() topicSpec
}

// newTopicSpec turns a CreateTopics entry into a validated topicSpec.
func (r *topicRules) newTopicSpec(rt kmsg.CreateTopicsRequestTopic, duplicate bool) (topicSpec, error) {
	spec := topicSpec{name: rt.Topic, partitions: rt.NumPartitions, rf: rt.ReplicationFactor, configs: map[string]string{}}
	if duplicate {
		return spec, fmt.Errorf("%w: topic %q appears more than once in the request", errInvalidRequest, rt.Topic)
	}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return spec, fmt.Errorf("%w: null value for config %q", errInvalidConfig, c.Name)
		}
		spec.configs[c.Name] = *c.Value
	}
	asg, err := replicaAssignment(rt)
	if err != nil {
		return spec, err
	}
	if asg != nil {
		spec.assignment, spec.partitions, spec.rf = asg, int32(len(asg)), int16(len(asg[0]))
	}
	return spec, r.checkNewTopic(&spec)
}

// checkNewTopic validates a topic to be created against the control
// plane's view, applying the broker defaults for -1 partitions and
// replication factor.
func (r *topicRules) checkNewTopic(spec *topicSpec) error {
	if err := validateTopicName(spec.name); err != nil {
		return err
	}
	var clash error
	r.eachTopicName(func(n string) bool {
		if n == spec.name {
			clash = fmt.Errorf("%w: topic %q already exists", errTopicExists, spec.name)
		} else if topicname.Collides(n, spec.name) {
			clash = fmt.Errorf("%w: topic %q collides with existing topic %q", errInvalidTopic, spec.name, n)
		}
		return clash == nil
	})
	if clash != nil {
		return clash
	}
	if isInternalTopic(spec.name) {
		if err := r.checkInternalTopic(spec); err != nil {
			return err
		}
	}
	if spec.partitions == -1 {
		spec.partitions = r.cfg.NumPartitions
	}
	if spec.rf == -1 {
		spec.rf = r.cfg.DefaultReplicationFactor
	}
	if spec.partitions <= 0 || spec.partitions > r.maxPartitions {
		return fmt.Errorf("%w: %d partitions (allowed 1..%d)", errInvalidPartitions, spec.partitions, r.maxPartitions)
	}
	if spec.rf <= 0 {
		return fmt.Errorf("%w: replication factor must be larger than 0", errInvalidReplicationFactor)
	}
	live := liveIDs(r.md.brokers())
	if spec.assignment != nil {
		if err := cluster.ValidateAssignment(spec.assignment, int(spec.rf), live); err != nil {
			return err
		}
	} else if int(spec.rf) > len(live) {
		return fmt.Errorf("%w: replication factor %d larger than the %d live brokers", errInvalidReplicationFactor, spec.rf, len(live))
	}
	if err := checkTopicConfigs(spec.configs); err != nil {
		return err
	}
	return r.relations(spec.configs)
}

// eachTopicName calls fn with every topic name the control plane knows, in
// no order, until fn returns false. fn must not call into r.rm.
func (r *topicRules) eachTopicName(fn func(name string) bool) {
	if _, local := r.md.(localPlane); local {
		r.rm.EachTopicName(fn)
		return
	}
	for _, n := range r.md.topicNames() {
		if !fn(n) {
			return
		}
	}
}

// checkInternalTopic applies the shape an internal topic must have to spec
// (defaults: the offsets.topic.* settings, the internal configs) and
// refuses any other: a client creating __consumer_offsets (CreateTopics,
// or Metadata's auto-creation) gets exactly the topic the coordinator
// would have created, or INVALID_TOPIC_EXCEPTION.
func (r *topicRules) checkInternalTopic(spec *topicSpec) error {
	want := topicSpec{name: spec.name, partitions: r.cfg.OffsetsTopicPartitions, rf: r.cfg.OffsetsTopicReplication,
		configs: offsets.TopicConfigs(r.cfg.OffsetsTopicSegmentBytes)}
	prefix := "offsets.topic"
	if spec.name == txn.Topic {
		want, prefix = r.txnSpec(), "transaction.state.log"
	}
	if spec.name == sharecoord.Topic {
		want, prefix = r.shareSpec(), "share.coordinator.state.topic"
	}
	switch {
	case spec.assignment != nil:
		return fmt.Errorf("%w: %s is an internal topic: no manual assignment", errInvalidTopic, spec.name)
	case spec.partitions != -1 && spec.partitions != want.partitions:
		return fmt.Errorf("%w: internal topic %s has %s.num.partitions (%d) partitions", errInvalidTopic, spec.name, prefix, want.partitions)
	case spec.rf != -1 && spec.rf != want.rf:
		return fmt.Errorf("%w: internal topic %s has %s.replication.factor (%d) replicas", errInvalidTopic, spec.name, prefix, want.rf)
	}
	for k, v := range spec.configs {
		if want.configs[k] != v {
			return fmt.Errorf("%w: internal topic %s takes no config %s=%s", errInvalidTopic, spec.name, k, v)
		}
	}
	spec.partitions, spec.rf, spec.configs = want.partitions, want.rf, want.configs
	return nil
}

// liveIDs returns the ids of bs.
func liveIDs(bs []metadata.Broker) []int32 {
	ids := make([]int32, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	return ids
}

// replicaAssignment returns rt's manual replica assignment indexed by
// partition (nil when it has none), checked for shape as Kafka checks it:
// partitions 0..n-1 each once (in any order), the same non-zero number of
// replicas for each, and no partition count or replication factor besides.
// Which brokers it names is for the caller to check.
func replicaAssignment(rt kmsg.CreateTopicsRequestTopic) ([][]int32, error) {
	if len(rt.ReplicaAssignment) == 0 {
		return nil, nil
	}
	if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
		return nil, fmt.Errorf("%w: both a replica assignment and partitions/replication factor were given", errInvalidRequest)
	}
	out := make([][]int32, len(rt.ReplicaAssignment))
	rf := len(rt.ReplicaAssignment[0].Replicas)
	for _, a := range rt.ReplicaAssignment {
		if a.Partition < 0 || int(a.Partition) >= len(out) || out[a.Partition] != nil {
			return nil, fmt.Errorf("%w: partitions must be 0..%d, each once (got %d)", errInvalidReplicaAssignment, len(out)-1, a.Partition)
		}
		if len(a.Replicas) != rf || rf == 0 {
			return nil, fmt.Errorf("%w: every partition needs the same, non-zero number of replicas", errInvalidReplicaAssignment)
		}
		out[a.Partition] = a.Replicas
	}
	return out, nil
}
