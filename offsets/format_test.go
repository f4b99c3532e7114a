package offsets

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
)

func TestOffsetRecordRoundTrip(t *testing.T) {
	k := offsetKey{Group: "g1", Topic: "orders", Partition: 7}
	kb := appendOffsetKey(nil, k)
	// Version 1, "g1", "orders", 7.
	want := []byte{0, 1, 0, 2, 'g', '1', 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 7}
	if string(kb) != string(want) {
		t.Fatalf("key bytes %v, want %v", kb, want)
	}
	got, isOffset, err := decodeOffsetKey(kb)
	if err != nil || !isOffset || got != k {
		t.Fatalf("decode key: %+v %v %v", got, isOffset, err)
	}
	if gk, isOffset, err := decodeOffsetKey(appendGroupKey(nil, "grp")); err != nil || isOffset || gk.Group != "grp" {
		t.Fatalf("group metadata key: %+v isOffset %v err %v", gk, isOffset, err)
	}
	if _, _, err := decodeOffsetKey([]byte{0, 1, 0, 9, 'g'}); err == nil {
		t.Fatal("truncated key decoded")
	}

	o := metastore.CommittedOffset{Offset: 1234, LeaderEpoch: 5, Metadata: "meta", CommitTime: time.UnixMilli(1700000000123)}
	vb := appendOffsetValue(nil, o)
	if len(vb) != 2+8+4+2+4+8 {
		t.Fatalf("value is %d bytes", len(vb))
	}
	gotO, err := decodeOffsetValue(vb)
	if err != nil || gotO.Offset != o.Offset || gotO.LeaderEpoch != o.LeaderEpoch || gotO.Metadata != o.Metadata || !gotO.CommitTime.Equal(o.CommitTime) || !gotO.ExpireTime.IsZero() {
		t.Fatalf("decode value: %+v %v", gotO, err)
	}
	// Version 1 (Kafka before 2.1): offset, metadata, commit and expire times.
	v1 := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 20}
	gotO, err = decodeOffsetValue(v1)
	if err != nil || gotO.Offset != 42 || gotO.LeaderEpoch != -1 || gotO.CommitTime.UnixMilli() != 10 || gotO.ExpireTime.UnixMilli() != 20 {
		t.Fatalf("decode v1 value: %+v %v", gotO, err)
	}
	if _, err := decodeOffsetValue(vb[:len(vb)-1]); err == nil {
		t.Fatal("truncated value decoded")
	}
}

// TestOffsetRecordsMatchKafka decodes our records with franz-go's codecs of
// Kafka's OffsetCommitKey/OffsetCommitValue schemas, and ours with theirs.
func TestOffsetRecordsMatchKafka(t *testing.T) {
	kb := appendOffsetKey(nil, offsetKey{Group: "g", Topic: "t", Partition: 3})
	var kk kmsg.OffsetCommitKey
	if err := kk.ReadFrom(kb); err != nil || kk.Version != 1 || kk.Group != "g" || kk.Topic != "t" || kk.Partition != 3 {
		t.Fatalf("kmsg key: %+v %v", kk, err)
	}
	vb := appendOffsetValue(nil, metastore.CommittedOffset{Offset: 77, LeaderEpoch: 4, Metadata: "m", CommitTime: time.UnixMilli(99)})
	var kv kmsg.OffsetCommitValue
	if err := kv.ReadFrom(vb); err != nil || kv.Version != 3 || kv.Offset != 77 || kv.LeaderEpoch != 4 || kv.Metadata != "m" || kv.CommitTimestamp != 99 {
		t.Fatalf("kmsg value: %+v %v", kv, err)
	}
	theirs := kmsg.NewOffsetCommitValue()
	theirs.Version, theirs.Offset, theirs.LeaderEpoch, theirs.Metadata, theirs.CommitTimestamp = 3, 5, 6, "x", 7
	o, err := decodeOffsetValue(theirs.AppendTo(nil))
	if err != nil || o.Offset != 5 || o.LeaderEpoch != 6 || o.Metadata != "x" || o.CommitTime.UnixMilli() != 7 {
		t.Fatalf("decode kmsg value: %+v %v", o, err)
	}
}

func TestGroupRecordRoundTrip(t *testing.T) {
	sg := metastore.Group{
		Name: "g", State: "Stable", ProtocolType: "consumer", Protocol: "range", Generation: 4, Leader: "m1",
		StateTime: time.UnixMilli(1234),
		Members: []metastore.GroupMember{
			{MemberID: "m1", ClientID: "c1", ClientHost: "/127.0.0.1", RebalanceTimeout: time.Minute, SessionTimeout: 10 * time.Second,
				ProtocolType: "consumer", Protocols: []metastore.GroupProtocol{{Name: "sticky", Metadata: []byte("s")}, {Name: "range", Metadata: []byte("sub1")}},
				Assignment: []byte("a1")},
			{MemberID: "m2", GroupInstanceID: "static-2", ClientID: "c2", ClientHost: "/127.0.0.2", RebalanceTimeout: time.Minute, SessionTimeout: 10 * time.Second,
				ProtocolType: "consumer", Protocols: []metastore.GroupProtocol{{Name: "range", Metadata: []byte("sub2")}}, Assignment: []byte("a2")},
		},
	}
	b := appendGroupValue(nil, sg)
	var kv kmsg.GroupMetadataValue
	if err := kv.ReadFrom(b); err != nil || kv.Version != 3 || len(kv.Members) != 2 || string(kv.Members[0].Subscription) != "sub1" {
		t.Fatalf("kmsg group value: %+v %v", kv, err)
	}
	got, err := decodeGroupValue("g", b)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "Stable" || got.Protocol != "range" || got.Generation != 4 || got.Leader != "m1" || !got.StateTime.Equal(sg.StateTime) || len(got.Members) != 2 {
		t.Fatalf("decoded %+v", got)
	}
	m := got.Members[1]
	if m.MemberID != "m2" || m.GroupInstanceID != "static-2" || m.ClientHost != "/127.0.0.2" || m.SessionTimeout != 10*time.Second ||
		m.RebalanceTimeout != time.Minute || len(m.Protocols) != 1 || m.Protocols[0].Name != "range" || string(m.Protocols[0].Metadata) != "sub2" || string(m.Assignment) != "a2" {
		t.Fatalf("decoded member %+v", m)
	}
	empty, err := decodeGroupValue("e", appendGroupValue(nil, metastore.Group{Name: "e", ProtocolType: "consumer", Generation: 9}))
	if err != nil || empty.State != "Empty" || empty.Generation != 9 || len(empty.Members) != 0 {
		t.Fatalf("empty group: %+v %v", empty, err)
	}
	if _, err := decodeGroupValue("g", b[:len(b)-3]); err == nil {
		t.Fatal("truncated group value decoded")
	}
}

// TestGroupValueOwnsItsBytes: a decoded group shares no bytes with the
// record it came from, since replay reuses its read buffer.
func TestGroupValueOwnsItsBytes(t *testing.T) {
	sg := metastore.Group{Name: "g", ProtocolType: "consumer", Protocol: "range", Generation: 1, Members: []metastore.GroupMember{
		{MemberID: "m", Protocols: []metastore.GroupProtocol{{Name: "range", Metadata: []byte("sub")}}, Assignment: []byte("asg")},
	}}
	b := appendGroupValue(nil, sg)
	got, err := decodeGroupValue("g", b)
	if err != nil {
		t.Fatal(err)
	}
	clear(b)
	if m := got.Members[0]; string(m.Protocols[0].Metadata) != "sub" || string(m.Assignment) != "asg" {
		t.Fatalf("after the record was overwritten: subscription %q, assignment %q", m.Protocols[0].Metadata, m.Assignment)
	}
}
