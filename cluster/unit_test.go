package cluster

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAssignReplicasMatchesKafka(t *testing.T) {
	// The example in Kafka's AdminUtils doc comment: 5 brokers, 10
	// partitions, rf 3, start index 0, shift 0.
	got := assignReplicas([]int32{4, 3, 2, 1, 0}, 10, 3, 0, 0, 0)
	want := map[int][]int32{0: {0, 1, 2}, 1: {1, 2, 3}, 4: {4, 0, 1}, 5: {0, 2, 3}, 9: {4, 1, 2}}
	for p, w := range want {
		if !slices.Equal(got[p], w) {
			t.Errorf("partition %d: got %v, want %v", p, got[p], w)
		}
	}
	// Random start: every assignment has distinct replicas and leaders
	// spread evenly.
	for range 50 {
		as := assignReplicas([]int32{1, 2, 3}, 6, 3, 0, -1, -1)
		leaders := map[int32]int{}
		for p, rs := range as {
			if len(rs) != 3 || rs[0] == rs[1] || rs[1] == rs[2] || rs[0] == rs[2] {
				t.Fatalf("partition %d: %v", p, rs)
			}
			leaders[rs[0]]++
		}
		for b, n := range leaders {
			if n != 2 {
				t.Fatalf("broker %d leads %d of 6: %v", b, n, as)
			}
		}
	}
}

func TestElections(t *testing.T) {
	live := func(ids ...int32) func(int32) bool { return func(id int32) bool { return slices.Contains(ids, id) } }
	cases := []struct {
		name       string
		replicas   []int32
		isr        []int32
		live       func(int32) bool
		unclean    bool
		wantLeader int32
		wantISR    []int32
	}{
		{"first live in-sync in assignment order", []int32{1, 2, 3}, []int32{3, 2}, live(2, 3), false, 2, []int32{3, 2}},
		{"dead isr members drop", []int32{1, 2, 3}, []int32{1, 2, 3}, live(3), false, 3, []int32{3}},
		{"only out-of-sync live: offline", []int32{1, 2}, []int32{1}, live(2), false, -1, nil},
		{"only out-of-sync live: unclean", []int32{1, 2}, []int32{1}, live(2), true, 2, []int32{2}},
		{"nothing live", []int32{1, 2}, []int32{1, 2}, live(), true, -1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := electOffline(c.replicas, c.isr, c.live, c.unclean)
			if r.Leader != c.wantLeader || (r.ok && !slices.Equal(r.ISR, c.wantISR)) {
				t.Fatalf("got leader %d isr %v, want %d %v", r.Leader, r.ISR, c.wantLeader, c.wantISR)
			}
		})
	}
	r := electControlledShutdown([]int32{1, 2, 3}, []int32{1, 2, 3}, live(1, 2, 3), func(id int32) bool { return id == 1 })
	if r.Leader != 2 || !slices.Equal(r.ISR, []int32{2, 3}) {
		t.Fatalf("controlled shutdown: %+v", r)
	}
	s := removeFromISR(PartitionState{Leader: 1, ISR: []int32{1}}, 1)
	if s.Leader != -1 || !slices.Equal(s.ISR, []int32{1}) {
		t.Fatalf("last isr member must stay: %+v", s)
	}
}

func TestZnodeJSON(t *testing.T) {
	st := encodePartitionState(PartitionState{ControllerEpoch: 1, Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2, 3}})
	if got, want := string(st), `{"version":1,"controller_epoch":1,"leader":1,"leader_epoch":0,"isr":[1,2,3]}`; got != want {
		t.Errorf("state: %s, want %s", got, want)
	}
	id := [16]byte{0xfb, 0xff}
	a := encodeAssignment(id, [][]int32{{1, 2, 3}})
	var m map[string]any
	json.Unmarshal(a, &m)
	if m["version"] != 3.0 || m["topic_id"] != "-_8AAAAAAAAAAAAAAAAAAA" {
		t.Errorf("assignment: %s", a)
	}
	gid, parts, err := decodeAssignment("t", a)
	if err != nil || gid != id || !slices.Equal(parts[0], []int32{1, 2, 3}) {
		t.Errorf("decode: %v %v %v", gid, parts, err)
	}
	reg, _ := json.Marshal(newBrokerRegistration("h", 9092, ""))
	json.Unmarshal(reg, &m)
	if m["version"] != 5.0 || m["rack"] != nil || m["endpoints"].([]any)[0] != "PLAINTEXT://h:9092" || m["jmx_port"] != -1.0 {
		t.Errorf("registration: %s", reg)
	}
	b, err := decodeBroker(3, reg, 77)
	if err != nil || b.Addr() != "h:9092" || b.Epoch != 77 {
		t.Errorf("decode broker: %+v %v", b, err)
	}
}

func TestParseConnect(t *testing.T) {
	s, root, err := parseConnect("a:1,b:2/x/y/")
	if err != nil || !slices.Equal(s, []string{"a:1", "b:2"}) || root != "/x/y" {
		t.Fatalf("%v %q %v", s, root, err)
	}
	s, root, _ = parseConnect("a")
	if !slices.Equal(s, []string{"a:2181"}) || root != "" {
		t.Fatalf("%v %q", s, root)
	}
}

func TestMetadataCacheApply(t *testing.T) {
	c := NewMetadataCache()
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.ControllerID, req.ControllerEpoch = 2, 5
	lb := kmsg.NewUpdateMetadataRequestLiveBroker()
	lb.ID, lb.Host, lb.Port = 1, "h", 1
	rack := "r1"
	lb.Rack = &rack
	req.LiveBrokers = append(req.LiveBrokers, lb)
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic, ts.TopicID = "t", [16]byte{1}
	for p := int32(0); p < 2; p++ {
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Partition, ps.Leader, ps.ISR, ps.Replicas = p, 1, []int32{1}, []int32{1}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = append(req.TopicStates, ts)
	c.Apply(req)
	if c.ControllerID() != 2 || len(c.Brokers()) != 1 || c.Brokers()[0].Rack != "r1" || len(c.Partitions("t")) != 2 {
		t.Fatalf("after apply: %d %+v %+v", c.ControllerID(), c.Brokers(), c.Partitions("t"))
	}
	old := *req
	old.ControllerEpoch = 4
	if c.Apply(&old) {
		t.Fatal("older controller epoch applied")
	}
	for i := range req.TopicStates[0].PartitionStates {
		req.TopicStates[0].PartitionStates[i].Leader = leaderDuringDelete
	}
	c.Apply(req)
	if len(c.Topics()) != 0 {
		t.Fatalf("topics after delete: %v", c.Topics())
	}
}
