package consumer

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/offsets"
)

// throughBytes encodes r as __consumer_offsets key and value bytes and
// decodes them back, as a coordinator failover reads them.
func throughBytes(t *testing.T, r Record) Record {
	t.Helper()
	kb, err := offsets.AppendConsumerKey(nil, r.Key)
	must(t, err)
	k, err := offsets.DecodeConsumerKey(kb)
	must(t, err)
	out := Record{Key: k}
	if r.Value != nil {
		vb, err := r.Value.AppendTo(nil)
		must(t, err)
		out.Value, err = offsets.DecodeConsumerValue(k.Type, vb)
		must(t, err)
	}
	return out
}

// sampleGroup is a group mid-rebalance: A revoking, B waiting for A's
// partitions, C a static member away with -2, a resolved regex.
func sampleGroup(t testing.TB) *Group {
	g := NewGroup("orders-app")
	g.Epoch = 7
	must(t, g.UpdateMember(Member{ID: "A", ClientID: "c-a", ClientHost: "/10.0.0.1", RackID: "r1",
		SubscribedTopicNames: []string{"t1"}, RebalanceTimeoutMs: 30000, ServerAssignor: "uniform",
		State: UnrevokedPartitions, MemberEpoch: 6, PreviousMemberEpoch: 5,
		Assigned: a(topic1, 0, 1), PendingRevocation: a(topic1, 2, 3)}))
	must(t, g.UpdateMember(Member{ID: "B", ClientID: "c-b", ClientHost: "/10.0.0.2",
		SubscribedTopicNames: []string{"t1", "t2"}, SubscribedTopicRegex: "^t.*", RebalanceTimeoutMs: 45000,
		State: UnreleasedPartitions, MemberEpoch: 7, PreviousMemberEpoch: 0, Assigned: a(topic2, 0)}))
	must(t, g.UpdateMember(Member{ID: "C", InstanceID: "host-c", ClientID: "c-c", ClientHost: "/10.0.0.3",
		SubscribedTopicNames: []string{"t2"}, RebalanceTimeoutMs: 1000,
		State: Stable, MemberEpoch: StaticLeaveEpoch, PreviousMemberEpoch: 6, Assigned: a(topic2, 1)}))
	g.SetTarget(7, map[string]assignor.Assignment{"A": a(topic1, 0, 1), "B": a(topic1, 2, 3, topic2, 0), "C": a(topic2, 1)})
	g.Regexes["^t.*"] = ResolvedRegex{Topics: []string{"t1", "t2"}, Version: 42, Timestamp: 1700000000000}
	return g
}

func groupRecords(g *Group) []Record {
	recs := []Record{GroupEpochRecord(g)}
	for _, id := range []string{"A", "B", "C"} {
		if m, ok := g.Member(id); ok {
			recs = append(recs, MemberRecords(g.ID, m)...)
		}
	}
	recs = append(recs, TargetRecords(g)...)
	for re, r := range g.Regexes {
		recs = append(recs, RegexRecord(g.ID, re, &r))
	}
	return recs
}

// assertSameGroup compares two groups' epochs, members (nil and empty
// assignments alike), targets, regexes, partition epochs and static
// members.
func assertSameGroup(t *testing.T, want, got *Group) {
	t.Helper()
	if want.ID != got.ID || want.Epoch != got.Epoch || want.AssignmentEpoch != got.AssignmentEpoch {
		t.Fatalf("group %s epoch %d/%d, want %s %d/%d", got.ID, got.Epoch, got.AssignmentEpoch, want.ID, want.Epoch, want.AssignmentEpoch)
	}
	if len(want.members) != len(got.members) {
		t.Fatalf("%d members, want %d", len(got.members), len(want.members))
	}
	for id, wm := range want.members {
		gm, ok := got.members[id]
		if !ok || !reflect.DeepEqual(normalize(gm), normalize(wm)) {
			t.Fatalf("member %s:\n got %+v\nwant %+v", id, gm, wm)
		}
	}
	for _, g := range []*Group{want, got} {
		for id, a := range g.Target {
			if len(a) == 0 {
				g.Target[id] = nil
			}
		}
	}
	if !reflect.DeepEqual(want.Target, got.Target) || !reflect.DeepEqual(want.Regexes, got.Regexes) ||
		!reflect.DeepEqual(want.partitionEpochs, got.partitionEpochs) || !reflect.DeepEqual(want.static, got.static) {
		t.Fatalf("state differs:\n got target %v regexes %v epochs %v static %v\nwant target %v regexes %v epochs %v static %v",
			got.Target, got.Regexes, got.partitionEpochs, got.static, want.Target, want.Regexes, want.partitionEpochs, want.static)
	}
}

// TestReplayRestoresGroup writes a group mid-rebalance as records, through
// their bytes, and replays them into a fresh group, as a coordinator
// failover does: members keep their epochs, states and assignments.
func TestReplayRestoresGroup(t *testing.T) {
	g := sampleGroup(t)
	loaded := NewGroup(g.ID)
	for _, r := range groupRecords(g) {
		must(t, loaded.Replay(throughBytes(t, r)))
	}
	assertSameGroup(t, g, loaded)

	// B leaves: its tombstones release its partitions on replay too.
	g.RemoveMember("B")
	for _, r := range MemberTombstones(g.ID, "B") {
		must(t, loaded.Replay(throughBytes(t, r)))
	}
	delete(g.Regexes, "^t.*")
	must(t, loaded.Replay(throughBytes(t, RegexRecord(g.ID, "^t.*", nil))))
	assertSameGroup(t, g, loaded)
	if loaded.PartitionEpoch(topic2, 0) != -1 {
		t.Fatal("a removed member's partition is still held")
	}
}

// TestReplayLaterRecordWins checks that a member's later records replace
// earlier ones, and that a record of a partition metadata (type 4, Kafka
// before 4.1) is accepted and ignored.
func TestReplayLaterRecordWins(t *testing.T) {
	g := NewGroup("g")
	m := Member{ID: "A", SubscribedTopicNames: []string{"t1"}, State: Stable, MemberEpoch: 1, Assigned: a(topic1, 0, 1, 2)}
	for _, r := range MemberRecords("g", m) {
		must(t, g.Replay(throughBytes(t, r)))
	}
	m.MemberEpoch, m.PreviousMemberEpoch, m.Assigned = 2, 1, a(topic1, 2)
	for _, r := range MemberRecords("g", m) {
		must(t, g.Replay(throughBytes(t, r)))
	}
	pm := Record{Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupPartitionMetadataType, Group: "g"},
		Value: offsets.ConsumerGroupPartitionMetadataValue{Topics: []offsets.ConsumerTopicMetadata{{TopicID: topic1, TopicName: "t1", NumPartitions: 3}}}}
	must(t, g.Replay(throughBytes(t, pm)))
	must(t, g.Replay(Record{Key: pm.Key}))
	got, _ := g.Member("A")
	if got.MemberEpoch != 2 || !reflect.DeepEqual(got.Assigned, a(topic1, 2)) {
		t.Fatalf("member after two updates: %+v", got)
	}
	if g.PartitionEpoch(topic1, 0) != -1 || g.PartitionEpoch(topic1, 2) != 2 {
		t.Fatal("partition epochs not moved by the later record")
	}
}

func TestReplayRefuses(t *testing.T) {
	g := sampleGroup(t)
	cases := map[string]Record{
		"another group's record": GroupEpochRecord(NewGroup("other")),
		"member tombstone before its assignment tombstone": {
			Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupMemberMetadataType, Group: g.ID, Member: "A"}},
		"value of another type": {
			Key:   offsets.ConsumerKey{Type: offsets.ConsumerGroupMetadataType, Group: g.ID},
			Value: offsets.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 1}},
		"a pointer value": {
			Key:   offsets.ConsumerKey{Type: offsets.ConsumerGroupMemberMetadataType, Group: g.ID, Member: "Z"},
			Value: &offsets.ConsumerGroupMemberMetadataValue{ClientID: "c"}},
		"a pointer group epoch": {
			Key:   offsets.ConsumerKey{Type: offsets.ConsumerGroupMetadataType, Group: g.ID},
			Value: &offsets.ConsumerGroupMetadataValue{Epoch: 99}},
		"a partition held twice": {
			Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupCurrentMemberAssignmentType, Group: g.ID, Member: "B"},
			Value: offsets.ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 7,
				AssignedPartitions: []offsets.ConsumerTopicPartitions{{TopicID: topic1, Partitions: []int32{0}}}}},
	}
	for name, r := range cases {
		if err := g.Replay(r); err == nil {
			t.Errorf("%s: replayed", name)
		}
	}
	if err := g.Replay(Record{Key: offsets.ConsumerKey{Type: 2, Group: g.ID}}); err == nil || !strings.Contains(err.Error(), "not a consumer group record") {
		t.Errorf("type 2: %v", err)
	}
}

// TestClassicMemberReplay: a classic member's records (ClassicMemberMetadata
// in its ConsumerGroupMemberMetadata) replay into a member that still
// speaks the classic protocol, with its session timeout and protocols.
func TestClassicMemberReplay(t *testing.T) {
	m := Member{
		ID: "c1", ClientID: "kcat", ClientHost: "/127.0.0.1", SubscribedTopicNames: []string{"t"},
		RebalanceTimeoutMs: 30000, MemberEpoch: 4, PreviousMemberEpoch: 3,
		Assigned: assignor.Assignment{}, PendingRevocation: assignor.Assignment{},
		Classic: &offsets.ClassicMemberMetadata{SessionTimeoutMs: 6000, SupportedProtocols: []offsets.ClassicProtocol{
			{Name: "range", Metadata: []byte{0, 1, 0, 0, 0, 1, 0, 1, 't'}}, {Name: "roundrobin", Metadata: []byte{0, 0}},
		}},
	}
	g := NewGroup("g")
	for _, r := range MemberRecords("g", m) {
		if err := g.Replay(throughBytes(t, r)); err != nil {
			t.Fatal(err)
		}
	}
	got, ok := g.Member("c1")
	if !ok || !got.UsesClassic() {
		t.Fatalf("replayed member %+v", got)
	}
	if got.Classic.SessionTimeoutMs != 6000 || len(got.Classic.SupportedProtocols) != 2 ||
		got.Classic.SupportedProtocols[1].Name != "roundrobin" || string(got.Classic.SupportedProtocols[0].Metadata) != string(m.Classic.SupportedProtocols[0].Metadata) {
		t.Fatalf("classic metadata %+v, want %+v", got.Classic, m.Classic)
	}
	if g.ClassicMembers() != 1 || g.AllClassicExcept("c1") {
		t.Fatalf("ClassicMembers %d, AllClassicExcept(c1) %v", g.ClassicMembers(), g.AllClassicExcept("c1"))
	}
	if !g.SupportsClassicProtocols("consumer", []string{"sticky", "roundrobin"}) || g.SupportsClassicProtocols("consumer", []string{"sticky"}) ||
		g.SupportsClassicProtocols("connect", []string{"range"}) {
		t.Fatal("SupportsClassicProtocols")
	}
}
