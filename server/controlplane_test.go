package server

// Tests of the handlers in cluster mode against a fake control plane: a
// three-broker cluster as this broker's metadata would show it, without
// ZooKeeper. The handlers are called through the dispatch table, as a
// connection would call them.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
)

// fakeTopic is a topic of the fake cluster.
type fakeTopic struct {
	id      [16]byte
	parts   []metadata.PartitionInfo
	configs map[string]string
}

// fakePlane is a control plane over an in-memory cluster view. Admin calls
// change the view at once (as if the controller were instant) and are
// recorded.
type fakePlane struct {
	s *Server

	mu         sync.Mutex
	live       []metadata.Broker
	controller int32
	topics     map[string]*fakeTopic
	ctrlEpoch  int32
	// electErr, when set, fails the whole election.
	electErr error
	// createOffline makes created topics leaderless (the controller has
	// not brought them online yet).
	createOffline bool

	created     []topicSpec
	deleted     []string
	added       map[string][][]int32
	setConfigs  map[string]map[string]string
	roles       []string // "topic-partition:leader|follower"
	stopped     []string
	updateCalls int
	// partitionsCalls counts partitions() lookups.
	partitionsCalls int
}

func newFakePlane() *fakePlane {
	return &fakePlane{
		live: []metadata.Broker{
			{ID: 1, Host: "127.0.0.1", Port: 9092},
			{ID: 2, Host: "127.0.0.1", Port: 9093},
			{ID: 3, Host: "127.0.0.1", Port: 9094},
		},
		controller: 2,
		topics:     map[string]*fakeTopic{},
		added:      map[string][][]int32{},
		setConfigs: map[string]map[string]string{},
	}
}

// addTopic puts a topic in the view: leaders[i] leads partition i with
// replicas {1,2,3}.
func (fp *fakePlane) addTopic(name string, leaders ...int32) [16]byte {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	id := newTopicID()
	ft := &fakeTopic{id: id, configs: map[string]string{}}
	for i, l := range leaders {
		ft.parts = append(ft.parts, metadata.PartitionInfo{
			Topic: name, Partition: int32(i), TopicID: id, Leader: l, LeaderEpoch: 1,
			Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3},
		})
	}
	fp.topics[name] = ft
	return id
}

func (fp *fakePlane) brokers() []metadata.Broker {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return slices.Clone(fp.live)
}

func (fp *fakePlane) controllerID() int32 { return fp.controller }

func (fp *fakePlane) topicNames() []string {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	var out []string
	for n := range fp.topics {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (fp *fakePlane) topicID(name string) ([16]byte, bool) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if t := fp.topics[name]; t != nil {
		return t.id, true
	}
	return [16]byte{}, false
}

func (fp *fakePlane) partitions(name string) []metadata.PartitionInfo {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.partitionsCalls++
	if t := fp.topics[name]; t != nil {
		return slices.Clone(t.parts)
	}
	return nil
}

func (fp *fakePlane) createTopic(_ context.Context, spec topicSpec) ([16]byte, error) {
	fp.mu.Lock()
	fp.created = append(fp.created, spec)
	offline := fp.createOffline
	fp.mu.Unlock()
	leaders := make([]int32, spec.partitions)
	for i := range leaders {
		leaders[i] = int32(i%3) + 1
		if offline {
			leaders[i] = -1
		}
	}
	return fp.addTopic(spec.name, leaders...), nil
}

func (fp *fakePlane) deleteTopic(_ context.Context, name string) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.topics[name] == nil {
		return cluster.ErrTopicNotFound
	}
	delete(fp.topics, name)
	fp.deleted = append(fp.deleted, name)
	return nil
}

func (fp *fakePlane) addPartitions(_ context.Context, name string, count int32, asg [][]int32) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	t := fp.topics[name]
	for i := int32(len(t.parts)); i < count; i++ {
		t.parts = append(t.parts, metadata.PartitionInfo{Topic: name, Partition: i, TopicID: t.id, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}})
	}
	fp.added[name] = asg
	return nil
}

func (fp *fakePlane) topicConfigs(name string) (map[string]string, error) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	t := fp.topics[name]
	if t == nil {
		return nil, cluster.ErrTopicNotFound
	}
	return t.configs, nil
}

func (fp *fakePlane) setTopicConfigs(_ context.Context, name string, overrides map[string]string) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.topics[name].configs = overrides
	fp.setConfigs[name] = overrides
	return nil
}

func (fp *fakePlane) electLeaders(_ context.Context, tps []metadata.TopicPartition, _ bool) (map[metadata.TopicPartition]error, error) {
	if fp.electErr != nil {
		return nil, fp.electErr
	}
	out := map[metadata.TopicPartition]error{}
	for _, tp := range tps {
		out[tp] = nil
	}
	return out, nil
}

func (fp *fakePlane) findCoordinator(_ context.Context, req *kmsg.FindCoordinatorRequest) (*kmsg.FindCoordinatorResponse, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	resp.NodeID, resp.Host, resp.Port = 3, "127.0.0.1", 9094
	return resp, nil
}

// fakeBrokerEpoch is this broker's registration epoch in the fake cluster.
const fakeBrokerEpoch = 100

// acceptControllerRequest: the controller is broker 2 at epoch ctrlEpoch
// or later (a later one is "confirmed by ZooKeeper" and remembered).
func (fp *fakePlane) acceptControllerRequest(controllerID, epoch int32, brokerEpoch int64) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	switch {
	case epoch < fp.ctrlEpoch:
		return cluster.ErrStaleControllerEpoch
	case controllerID != fp.controller:
		return cluster.ErrNotFromController
	case brokerEpoch != fakeBrokerEpoch:
		return cluster.ErrStaleBrokerEpoch
	}
	fp.ctrlEpoch = epoch
	return nil
}

// checkReplicaDelete: only replicas of topics the fake cluster no longer
// has may be deleted.
func (fp *fakePlane) checkReplicaDelete(topic string, _ int32) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.topics[topic] != nil {
		return cluster.ErrNotFromController
	}
	return nil
}

func (fp *fakePlane) checkFollower(id int32, epoch int64) error {
	if epoch >= 0 && epoch != fakeBrokerEpoch+int64(id) {
		return cluster.ErrStaleBrokerEpoch
	}
	return nil
}

func (fp *fakePlane) applyUpdateMetadata(r *kmsg.UpdateMetadataRequest) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.updateCalls++
	fp.live = nil
	for _, b := range r.LiveBrokers {
		fp.live = append(fp.live, metadata.Broker{ID: b.ID})
	}
	return nil
}

func (fp *fakePlane) controlledShutdown(int32, int64) ([]metadata.TopicPartition, error) {
	return nil, cluster.ErrNotController
}

func (fp *fakePlane) TopicAssignment(name string) ([16]byte, [][]int32, map[string]string, error) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	t := fp.topics[name]
	if t == nil {
		return [16]byte{}, nil, nil, cluster.ErrTopicNotFound
	}
	var asg [][]int32
	for _, p := range t.parts {
		asg = append(asg, p.Replicas)
	}
	return t.id, asg, t.configs, nil
}

func (fp *fakePlane) ReplicaOptions(t *replica.Topic, o replication.Options) replication.Options {
	o.MinInsyncReplicas = t.Config.MinISR
	return o
}

func (fp *fakePlane) liveLeaders([]kmsg.LeaderAndISRRequestLiveLeader) {}

func (fp *fakePlane) controllerStats() metadata.ControllerStats { return metadata.ControllerStats{} }

func (fp *fakePlane) RoleChanging(*replica.Partition, replication.LeaderAndIsr, int32) {}

func (fp *fakePlane) RoleChanged(p *replica.Partition, ps replication.LeaderAndIsr) {
	role := "follower"
	if ps.Leader == fp.s.nodeID {
		role = "leader"
	}
	fp.mu.Lock()
	fp.roles = append(fp.roles, p.Topic()+"-"+string(rune('0'+p.Index()))+":"+role)
	fp.mu.Unlock()
}

func (fp *fakePlane) ReplicaStopped(p *replica.Partition) {
	fp.mu.Lock()
	fp.stopped = append(fp.stopped, p.Topic())
	fp.mu.Unlock()
}

func (fp *fakePlane) close() {}

// newFakeClusterServer starts a Server as broker 1 of the fake cluster on a
// memory store.
func newFakeClusterServer(t *testing.T) (*Server, *fakePlane) {
	t.Helper()
	cfg := config.Default()
	cfg.BrokerID = 1
	cfg.NumPartitions = 2
	cfg.DefaultReplicationFactor = 3
	fp := newFakePlane()
	s := newTestServer(t, &cfg, Options{
		ClusterID: "fake", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092,
		controlPlane: func(s *Server) controlPlane { fp.s = s; return fp },
	})
	return s, fp
}

// call runs req through the dispatch table at version v and returns the
// kmsg response (nil with the handler's error).
func call(t *testing.T, s *Server, v int16, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	req.SetVersion(v)
	a, ok := s.apis[req.Key()]
	if !ok || v < a.min || v > a.max {
		t.Fatalf("%s v%d not served", kmsg.NameForKey(req.Key()), v)
	}
	resp, err := a.handle(s, &reqCtx{version: v}, req)
	if err != nil || resp == nil {
		return nil, err
	}
	if resp.kresp == nil {
		if resp.release != nil {
			resp.release()
		}
		return nil, nil
	}
	return resp.kresp, nil
}

func mustCall(t *testing.T, s *Server, v int16, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := call(t, s, v, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func code(c int16) string {
	if c == 0 {
		return "none"
	}
	return kerr.ErrorForCode(c).Error()
}

func TestClusterMetadataFromControlPlane(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	fp.addTopic("orders", 2, -1)
	fp.addTopic(offsets.Topic, 3)

	req := kmsg.NewPtrMetadataRequest()
	resp := mustCall(t, s, 12, req).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 3 || resp.ControllerID != 2 || *resp.ClusterID != "fake" {
		t.Fatalf("brokers %v controller %d cluster %v", resp.Brokers, resp.ControllerID, *resp.ClusterID)
	}
	if len(resp.Topics) != 2 {
		t.Fatalf("topics: %+v", resp.Topics)
	}
	for _, mt := range resp.Topics {
		switch *mt.Topic {
		case "orders":
			if mt.IsInternal || len(mt.Partitions) != 2 {
				t.Fatalf("orders: %+v", mt)
			}
			if p := mt.Partitions[0]; p.Leader != 2 || p.ErrorCode != 0 || !slices.Equal(p.ISR, []int32{1, 2, 3}) {
				t.Errorf("orders-0: %+v", p)
			}
			if p := mt.Partitions[1]; p.ErrorCode != kerr.LeaderNotAvailable.Code {
				t.Errorf("orders-1 without a leader: %s", code(p.ErrorCode))
			}
		case offsets.Topic:
			if !mt.IsInternal {
				t.Errorf("%s not internal", offsets.Topic)
			}
		}
	}

	// An unknown topic is created with the broker defaults and is
	// LEADER_NOT_AVAILABLE until the controller brings it online.
	fp.createOffline = true
	req = kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("fresh")
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp = mustCall(t, s, 12, req).(*kmsg.MetadataResponse)
	if c := resp.Topics[0].ErrorCode; c != kerr.LeaderNotAvailable.Code {
		t.Fatalf("auto-created topic: %s", code(c))
	}
	if len(fp.created) != 1 || fp.created[0].partitions != 2 || fp.created[0].rf != 3 {
		t.Fatalf("created %+v", fp.created)
	}
	// Not allowed: unknown.
	req.AllowAutoTopicCreation = false
	req.Topics[0].Topic = kmsg.StringPtr("other")
	resp = mustCall(t, s, 12, req).(*kmsg.MetadataResponse)
	if c := resp.Topics[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %s", code(c))
	}
}

func TestClusterCreateTopicsChecksTheCluster(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	fp.addTopic("taken", 1)
	topic := func(name string, parts int32, rf int16, asg ...[]int32) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		for i, reps := range asg {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), reps
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		return rt
	}
	cases := []struct {
		name string
		rt   kmsg.CreateTopicsRequestTopic
		want int16
	}{
		{"rf above live brokers", topic("a", 1, 4), kerr.InvalidReplicationFactor.Code},
		{"exists", topic("taken", 1, 1), kerr.TopicAlreadyExists.Code},
		{"collides", topic("tak.en", 1, 1), kerr.TopicAlreadyExists.Code},
		{"assignment names a dead broker", topic("b", -1, -1, []int32{1, 9}), kerr.InvalidReplicaAssignment.Code},
		{"assignment lists a broker twice", topic("c", -1, -1, []int32{2, 2}), kerr.InvalidReplicaAssignment.Code},
		{"ok", topic("d", 3, 3), 0},
		{"ok assigned", topic("e", -1, -1, []int32{3, 1}, []int32{1, 2}), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Topics = []kmsg.CreateTopicsRequestTopic{tc.rt}
			req.TimeoutMillis = 5000
			resp := mustCall(t, s, 7, req).(*kmsg.CreateTopicsResponse)
			got := resp.Topics[0].ErrorCode
			if tc.name == "collides" {
				// tak.en is not taken, but collides with nothing either
				// (taken has no '.'): it is created.
				tc.want = 0
			}
			if got != tc.want {
				t.Fatalf("got %s, want %s (%v)", code(got), code(tc.want), resp.Topics[0].ErrorMessage)
			}
		})
	}
	var names []string
	for _, c := range fp.created {
		names = append(names, c.name)
	}
	if !slices.Equal(names, []string{"tak.en", "d", "e"}) {
		t.Fatalf("created %v", names)
	}
	if e := fp.created[2]; e.partitions != 2 || e.rf != 2 || !slices.Equal(e.assignment[0], []int32{3, 1}) {
		t.Fatalf("assigned topic spec %+v", e)
	}
	// "tak_en" now collides with "tak.en".
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = []kmsg.CreateTopicsRequestTopic{topic("tak_en", 1, 1)}
	resp := mustCall(t, s, 7, req).(*kmsg.CreateTopicsResponse)
	if c := resp.Topics[0].ErrorCode; c != kerr.InvalidTopicException.Code {
		t.Fatalf("colliding name: %s", code(c))
	}
}

func TestClusterDeleteAndCreatePartitions(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	id := fp.addTopic("t", 1, 2)

	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = id
	del.Topics = append(del.Topics, dt)
	dresp := mustCall(t, s, 6, del).(*kmsg.DeleteTopicsResponse)
	if c := dresp.Topics[0].ErrorCode; c != 0 || *dresp.Topics[0].Topic != "t" {
		t.Fatalf("delete by id: %s %v", code(c), dresp.Topics[0].Topic)
	}
	if !slices.Equal(fp.deleted, []string{"t"}) {
		t.Fatalf("deleted %v", fp.deleted)
	}

	fp.addTopic("u", 1, 2)
	cp := func(count int32, asg ...[]int32) int16 {
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "u", count
		for _, reps := range asg {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = reps
			rt.Assignment = append(rt.Assignment, a)
		}
		req.Topics = append(req.Topics, rt)
		return mustCall(t, s, 3, req).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode
	}
	if c := cp(2); c != kerr.InvalidPartitions.Code {
		t.Fatalf("count not raised: %s", code(c))
	}
	if c := cp(3, []int32{1, 2}); c != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("rf 2 for a topic of rf 3: %s", code(c))
	}
	if c := cp(4, []int32{1, 2, 3}); c != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("one assignment for two partitions: %s", code(c))
	}
	if c := cp(3, []int32{3, 2, 1}); c != 0 {
		t.Fatalf("add with assignment: %s", code(c))
	}
	if got := fp.added["u"]; len(got) != 1 || !slices.Equal(got[0], []int32{3, 2, 1}) {
		t.Fatalf("added %v", got)
	}
	if n := len(fp.partitions("u")); n != 3 {
		t.Fatalf("%d partitions", n)
	}
}

func TestClusterConfigsGoThroughControlPlane(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	fp.addTopic("t", 2) // no replica here: configs still come from the cluster
	fp.topics["t"].configs = map[string]string{"retention.ms": "1000"}

	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = resourceTopic, "t", []string{"retention.ms"}
	dreq.Resources = append(dreq.Resources, dr)
	dresp := mustCall(t, s, 4, dreq).(*kmsg.DescribeConfigsResponse)
	if c := dresp.Resources[0].Configs; len(c) != 1 || *c[0].Value != "1000" || c[0].Source != kmsg.ConfigSource(sourceDynamicTopic) {
		t.Fatalf("describe: %+v", dresp.Resources[0])
	}

	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = resourceTopic, "t"
	op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	op.Name, op.Op, op.Value = "segment.ms", opSet, kmsg.StringPtr("60000")
	ir.Configs = append(ir.Configs, op)
	ireq.Resources = append(ireq.Resources, ir)
	iresp := mustCall(t, s, 1, ireq).(*kmsg.IncrementalAlterConfigsResponse)
	if c := iresp.Resources[0].ErrorCode; c != 0 {
		t.Fatalf("incremental alter: %s", code(c))
	}
	if got := fp.setConfigs["t"]; got["retention.ms"] != "1000" || got["segment.ms"] != "60000" {
		t.Fatalf("written %v", got)
	}

	// A bad value never reaches the control plane.
	op.Value = kmsg.StringPtr("soon")
	ireq.Resources[0].Configs[0] = op
	delete(fp.setConfigs, "t")
	iresp = mustCall(t, s, 1, ireq).(*kmsg.IncrementalAlterConfigsResponse)
	if c := iresp.Resources[0].ErrorCode; c != kerr.InvalidConfig.Code || fp.setConfigs["t"] != nil {
		t.Fatalf("bad value: %s, written %v", code(c), fp.setConfigs["t"])
	}

	// Unknown topic: the control plane's error.
	dreq.Resources[0].ResourceName = "nope"
	dresp = mustCall(t, s, 4, dreq).(*kmsg.DescribeConfigsResponse)
	if c := dresp.Resources[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %s", code(c))
	}
}

func TestClusterElectLeadersErrors(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	fp.addTopic("t", 1, 2)
	fp.electErr = cluster.ErrNotController

	req := kmsg.NewPtrElectLeadersRequest()
	req.Topics = nil // all
	resp := mustCall(t, s, 0, req).(*kmsg.ElectLeadersResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("v0: every known partition gets the error: %+v", resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.NotController.Code {
			t.Fatalf("v0 partition %d: %s", p.Partition, code(p.ErrorCode))
		}
	}
	resp = mustCall(t, s, 2, req).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.NotController.Code || len(resp.Topics) != 0 {
		t.Fatalf("v2 top-level: %s %+v", code(resp.ErrorCode), resp.Topics)
	}
}

// leaderAndIsr makes broker leader of partition p of topic with replicas
// {1,2,3}.
func leaderAndIsr(topic string, id [16]byte, p, leader, epoch, ctrlEpoch int32) *kmsg.LeaderAndISRRequest {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 2, ctrlEpoch, fakeBrokerEpoch
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = topic, id
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Topic, ps.Partition, ps.ControllerEpoch = topic, p, ctrlEpoch
	ps.Leader, ps.LeaderEpoch = leader, epoch
	ps.ISR, ps.Replicas = []int32{1, 2, 3}, []int32{1, 2, 3}
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	return req
}

func TestClusterReplicasFollowTheController(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	id := fp.addTopic("t", 1, 2)

	produce := func(p int32) int16 { return produceOne(t, s, "t", p, 1, 5000) }
	listOffsets := func(p int32) int16 {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return mustCall(t, s, 7, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
	}

	// No replica here yet: the cluster knows the partition, so another
	// broker leads it.
	if c := listOffsets(0); c != kerr.NotLeaderForPartition.Code {
		t.Fatalf("list offsets before LeaderAndIsr: %s", code(c))
	}
	if c := listOffsets(7); c != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("list offsets of a partition the cluster lacks: %s", code(c))
	}

	// Broker 1 (us) leads t-0, follows t-1 (leader 2).
	lresp := mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5)).(*kmsg.LeaderAndISRResponse)
	if c := lresp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("LeaderAndIsr leader: %s", code(c))
	}
	mustCall(t, s, 5, leaderAndIsr("t", id, 1, 2, 1, 5))
	if !slices.Equal(fp.roles, []string{"t-0:leader", "t-1:follower"}) {
		t.Fatalf("roles %v", fp.roles)
	}
	if c := produce(0); c != 0 {
		t.Fatalf("produce to the leader: %s", code(c))
	}
	if c := produce(1); c != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a follower: %s", code(c))
	}
	if c := listOffsets(1); c != kerr.NotLeaderForPartition.Code {
		t.Fatalf("list offsets on a follower: %s", code(c))
	}

	// A follower (broker 2) fetches t-0 from us: it reads to the log end
	// and, once it has caught up, the high watermark moves with it.
	fetch := func(replica int32, offset int64) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = replica, 1<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := call(t, s, 11, req)
		if err != nil || resp != nil {
			t.Fatalf("fetch answered %v, %v (fetch responses go to the writer)", resp, err)
		}
		// Read what the handler filled through the partition itself.
		p := s.rm.Partition("t", 0)
		return kmsg.FetchResponseTopicPartition{HighWatermark: p.HighWatermark()}
	}
	if hw := fetch(2, 0).HighWatermark; hw != 0 {
		t.Fatalf("high watermark before the followers caught up: %d", hw)
	}
	fetch(2, 1)
	if hw := fetch(3, 1).HighWatermark; hw != 1 {
		t.Fatalf("high watermark after both followers fetched past the record: %d", hw)
	}

	// An older controller is refused and changes nothing.
	lresp = mustCall(t, s, 5, leaderAndIsr("t", id, 0, 2, 2, 4)).(*kmsg.LeaderAndISRResponse)
	if lresp.ErrorCode != kerr.StaleControllerEpoch.Code || !s.rm.Partition("t", 0).IsLeader() {
		t.Fatalf("stale controller: %s, still leader %v", code(lresp.ErrorCode), s.rm.Partition("t", 0).IsLeader())
	}

	// StopReplica with delete removes the local replica and its log.
	sreq := kmsg.NewPtrStopReplicaRequest()
	sreq.ControllerID, sreq.ControllerEpoch, sreq.BrokerEpoch = 2, 5, fakeBrokerEpoch
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = "t"
	for _, p := range []int32{0, 1} {
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.LeaderEpoch, ps.Delete = p, -2, true
		st.PartitionStates = append(st.PartitionStates, ps)
	}
	sreq.Topics = append(sreq.Topics, st)
	// While the cluster still assigns the topic here, no delete.
	sresp := mustCall(t, s, 3, sreq).(*kmsg.StopReplicaResponse)
	for _, p := range sresp.Partitions {
		if p.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Fatalf("StopReplica delete of an assigned replica %d: %s", p.Partition, code(p.ErrorCode))
		}
	}
	if s.rm.Partition("t", 0) == nil {
		t.Fatal("an assigned replica was deleted")
	}
	fp.deleteTopic(context.Background(), "t")
	fp.stopped = nil
	sresp = mustCall(t, s, 3, sreq).(*kmsg.StopReplicaResponse)
	for _, p := range sresp.Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("StopReplica %d: %s", p.Partition, code(p.ErrorCode))
		}
	}
	if s.rm.Topic("t") != nil || len(fp.stopped) != 2 {
		t.Fatalf("topic still local (%v) or replicas not stopped (%v)", s.rm.Topic("t") != nil, fp.stopped)
	}
	if _, err := s.store.OpenLog(engine.PartitionID{Topic: "t", Partition: 0}, engine.LogConfig{}); err == nil {
		t.Fatal("log of t-0 still there")
	}
}

func TestClusterUpdateMetadataAndControlledShutdown(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 2, 3, fakeBrokerEpoch
	for _, id := range []int32{1, 3} {
		b := kmsg.NewUpdateMetadataRequestLiveBroker()
		b.ID = id
		req.LiveBrokers = append(req.LiveBrokers, b)
	}
	resp := mustCall(t, s, 7, req).(*kmsg.UpdateMetadataResponse)
	if resp.ErrorCode != 0 || fp.updateCalls != 1 || len(s.md.brokers()) != 2 {
		t.Fatalf("update metadata: %s, calls %d", code(resp.ErrorCode), fp.updateCalls)
	}
	req.ControllerEpoch = 2
	resp = mustCall(t, s, 7, req).(*kmsg.UpdateMetadataResponse)
	if resp.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("stale update metadata: %s", code(resp.ErrorCode))
	}
	csreq := kmsg.NewPtrControlledShutdownRequest()
	csreq.BrokerID = 3
	csresp := mustCall(t, s, 3, csreq).(*kmsg.ControlledShutdownResponse)
	if csresp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("controlled shutdown on a non-controller: %s", code(csresp.ErrorCode))
	}
}

// TestSingleNodeLacksControllerAPIs: a single node's dispatch table has no
// inter-broker API (a request for one closes the connection, see
// decodeRequest); a cluster member's has them all.
func TestSingleNodeLacksControllerAPIs(t *testing.T) {
	single := newFuzzServer(t)
	member, _ := newFakeClusterServer(t)
	for _, key := range []int16{apiKeyLeaderAndIsr, apiKeyStopReplica, apiKeyUpdateMetadata, apiKeyControlledShutdown} {
		if _, ok := single.apis[key]; ok {
			t.Errorf("a single node serves %s", kmsg.NameForKey(key))
		}
		if _, ok := member.apis[key]; !ok {
			t.Errorf("a cluster member does not serve %s", kmsg.NameForKey(key))
		}
		frame := kbin.AppendInt16(nil, key)
		frame = kbin.AppendInt16(frame, 0)
		frame = kbin.AppendInt32(frame, 1)
		frame = kbin.AppendNullableString(frame, nil)
		if r := single.decodeRequest(frame); r.closeErr == nil {
			t.Errorf("%s to a single node: not closed", kmsg.NameForKey(key))
		}
	}
	if _, ok := single.apis[apiKeyWriteTxnMarkers]; !ok {
		t.Error("a single node does not serve WriteTxnMarkers (Admin.abortTransaction)")
	}
}

// TestClusterLeaderAndIsrOddStates: partition states with negative or
// unknown partitions, or no replicas, are answered with an error per
// partition, never a (recovered) panic.
func TestClusterLeaderAndIsrOddStates(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	id := fp.addTopic("t", 1)
	for _, tc := range []struct {
		name string
		edit func(*kmsg.LeaderAndISRRequestTopicPartition)
	}{
		{"negative partition", func(ps *kmsg.LeaderAndISRRequestTopicPartition) { ps.Partition = -1 }},
		{"partition past the assignment", func(ps *kmsg.LeaderAndISRRequestTopicPartition) { ps.Partition = 1 << 30 }},
		{"no ISR, no replicas", func(ps *kmsg.LeaderAndISRRequestTopicPartition) { ps.ISR, ps.Replicas = nil, nil }},
		{"leader not a replica", func(ps *kmsg.LeaderAndISRRequestTopicPartition) { ps.Leader, ps.Replicas = 1, []int32{2, 3} }},
		{"negative leader epoch", func(ps *kmsg.LeaderAndISRRequestTopicPartition) { ps.LeaderEpoch = -5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := leaderAndIsr("t", id, 0, 1, 1, 5)
			tc.edit(&req.TopicStates[0].PartitionStates[0])
			resp, err := call(t, s, 5, req)
			if err != nil {
				t.Fatalf("handler error: %v", err)
			}
			if ps := req.TopicStates[0].PartitionStates[0]; ps.Partition != 0 {
				// A partition the assignment lacks is unknown.
				if c := resp.(*kmsg.LeaderAndISRResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
					t.Fatalf("partition %d: %s, want UNKNOWN_TOPIC_OR_PARTITION", ps.Partition, code(c))
				}
			}
		})
	}
	ureq := kmsg.NewPtrUpdateMetadataRequest()
	ureq.ControllerID, ureq.ControllerEpoch, ureq.BrokerEpoch = 2, 5, fakeBrokerEpoch
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic = "t"
	ps := kmsg.NewUpdateMetadataRequestTopicPartition()
	ps.Partition = -7
	ts.PartitionStates = append(ts.PartitionStates, ps)
	ureq.TopicStates = append(ureq.TopicStates, ts)
	if _, err := call(t, s, 7, ureq); err != nil {
		t.Fatalf("UpdateMetadata: %v", err)
	}
	if n := s.panics.Load(); n != 0 {
		t.Fatalf("%d panics", n)
	}
}

// TestInternalTopicIsTheBrokers: clients cannot produce to, delete, add
// partitions to or reconfigure __consumer_offsets, nor create it in
// another shape; the broker's own replica of it is unharmed.
func TestInternalTopicIsTheBrokers(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	id := fp.addTopic(offsets.Topic, 1)
	mustCall(t, s, 5, leaderAndIsr(offsets.Topic, id, 0, 1, 1, 5))
	if s.rm.Partition(offsets.Topic, 0) == nil {
		t.Fatal("no local replica of the offsets topic")
	}

	preq := kmsg.NewPtrProduceRequest()
	preq.Acks, preq.TimeoutMillis = 1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = offsets.Topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Key: []byte("forged"), Value: []byte("offset"), Timestamp: 1}})
	pt.Partitions = append(pt.Partitions, pp)
	preq.Topics = append(preq.Topics, pt)
	if c := mustCall(t, s, 9, preq).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidTopicException.Code {
		t.Errorf("produce: %s", code(c))
	}

	dreq := kmsg.NewPtrDeleteTopicsRequest()
	dreq.TopicNames = []string{offsets.Topic}
	if c := mustCall(t, s, 5, dreq).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("delete: %s", code(c))
	}

	cpreq := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = offsets.Topic, 60
	cpreq.Topics = append(cpreq.Topics, cpt)
	if c := mustCall(t, s, 3, cpreq).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode; c != kerr.InvalidTopicException.Code {
		t.Errorf("create partitions: %s", code(c))
	}

	areq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = resourceTopic, offsets.Topic
	op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	op.Name, op.Op, op.Value = "retention.ms", opSet, kmsg.StringPtr("1")
	ar.Configs = append(ar.Configs, op)
	areq.Resources = append(areq.Resources, ar)
	if c := mustCall(t, s, 1, areq).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alter configs: %s", code(c))
	}
	if fp.setConfigs[offsets.Topic] != nil {
		t.Errorf("configs written: %v", fp.setConfigs[offsets.Topic])
	}

	// Creating it: only in the broker's shape (here it exists already).
	delete(fp.topics, offsets.Topic)
	creq := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = offsets.Topic, 3, 1
	creq.Topics = append(creq.Topics, ct)
	if c := mustCall(t, s, 7, creq).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; c != kerr.InvalidTopicException.Code {
		t.Errorf("create in another shape: %s", code(c))
	}
	creq.Topics[0].NumPartitions, creq.Topics[0].ReplicationFactor = -1, -1
	if c := mustCall(t, s, 7, creq).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; c != 0 {
		t.Errorf("create in the broker's shape: %s", code(c))
	}
	if got := fp.created[len(fp.created)-1]; got.partitions != s.cfg.OffsetsTopicPartitions || got.rf != s.cfg.OffsetsTopicReplication || got.configs["cleanup.policy"] != "compact" {
		t.Errorf("created %+v", got)
	}
	if p := s.rm.Partition(offsets.Topic, 0); p == nil || p.LogEndOffset() != 0 {
		t.Fatal("the broker's replica was touched")
	}
}

// TestAcksAllWithoutTimeout: acks=-1 with timeout 0 answers at once with
// what is replicated (REQUEST_TIMED_OUT for a batch the followers do not
// have yet), never waits for the ISR forever.
func TestAcksAllWithoutTimeout(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	id := fp.addTopic("t", 1)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5))
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 0
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Value: []byte("v"), Timestamp: 1}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	done := make(chan int16, 1)
	go func() {
		resp, err := call(t, s, 9, req)
		if err != nil {
			t.Error(err)
			done <- -1
			return
		}
		done <- resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}()
	select {
	case c := <-done:
		if c != kerr.RequestTimedOut.Code {
			t.Fatalf("acks=-1 timeout 0 with the followers behind: %s", code(c))
		}
	case <-time.After(30 * time.Second): // a hang detector, not a timing bound
		t.Fatal("acks=-1 with timeout 0 is still waiting for the ISR")
	}
	if p := s.rm.Partition("t", 0); p.LogEndOffset() != 1 {
		t.Fatalf("the batch was not appended: log end %d", p.LogEndOffset())
	}
}
