package offsets

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
)

// FuzzOffsetKey feeds arbitrary bytes to decodeOffsetKey, the key decoder
// of every __consumer_offsets record. Invariants:
//   - it never panics;
//   - an error wraps ErrBadRecord;
//   - a decoded key re-encodes (appendOffsetKey, or appendGroupKey for a
//     group metadata key) to bytes no longer than the input that decode to
//     the same key of the same kind.
func FuzzOffsetKey(f *testing.F) {
	f.Add(appendOffsetKey(nil, offsetKey{Group: "g1", Topic: "orders", Partition: 7}))
	f.Add(appendOffsetKey(nil, offsetKey{Group: "", Topic: "", Partition: -1}))
	f.Add(append([]byte{0, 0}, appendOffsetKey(nil, offsetKey{Group: "v0", Topic: "t", Partition: 1})[2:]...))
	f.Add(appendGroupKey(nil, "grp"))
	f.Add([]byte{0, 1, 0, 9, 'g'})  // truncated
	f.Add([]byte{0, 9, 0, 1, 'g'})  // unknown version
	f.Add([]byte{0, 2, 0xff, 0xff}) // negative length
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, isOffset, err := decodeOffsetKey(b)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		var re []byte
		if isOffset {
			re = appendOffsetKey(nil, k)
		} else {
			re = appendGroupKey(nil, k.Group)
		}
		if len(re) > len(b) {
			t.Fatalf("%x re-encodes to the longer %x", b, re)
		}
		k2, isOffset2, err := decodeOffsetKey(re)
		if err != nil || isOffset2 != isOffset || k2 != k {
			t.Fatalf("%x decodes to %+v (offset key %v), re-encoded %x to %+v (offset key %v), %v", b, k, isOffset, re, k2, isOffset2, err)
		}
	})
}

// FuzzOffsetValue feeds arbitrary bytes to decodeOffsetValue (versions
// 0-3). Invariants:
//   - it never panics;
//   - an error wraps ErrBadRecord;
//   - a decoded value re-encodes (version 3) to bytes that decode to the
//     same offset, leader epoch, metadata and commit time; the expire time
//     of version 1 is dropped, since version 3 does not carry it.
func FuzzOffsetValue(f *testing.F) {
	f.Add(appendOffsetValue(nil, metastore.CommittedOffset{Offset: 1234, LeaderEpoch: 5, Metadata: "meta", CommitTime: time.UnixMilli(1700000000123)}))
	for v := int16(0); v <= 3; v++ {
		kv := kmsg.NewOffsetCommitValue()
		kv.Version, kv.Offset, kv.LeaderEpoch, kv.Metadata = v, 42, 7, "m"
		kv.CommitTimestamp, kv.ExpireTimestamp = 10, 20
		f.Add(kv.AppendTo(nil))
	}
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) // v1, no expiry
	f.Add([]byte{0, 3, 0, 0})                                                                                                   // truncated
	f.Add([]byte{0, 4})                                                                                                         // unknown version
	f.Add([]byte{0xff, 0xff})                                                                                                   // negative version
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeOffsetValue(b)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		re := appendOffsetValue(nil, o)
		o2, err := decodeOffsetValue(re)
		if err != nil {
			t.Fatalf("%x decodes to %+v, its re-encoding %x does not: %v", b, o, re, err)
		}
		want := o
		want.ExpireTime = time.Time{}
		if o2.Offset != want.Offset || o2.LeaderEpoch != want.LeaderEpoch || o2.Metadata != want.Metadata ||
			!o2.CommitTime.Equal(want.CommitTime) || !o2.ExpireTime.Equal(want.ExpireTime) {
			t.Fatalf("%x decodes to %+v, re-encoded %x to %+v", b, o, re, o2)
		}
	})
}

// FuzzGroupValue feeds arbitrary bytes to decodeGroupValue (a
// GroupMetadataValue of versions 0-3). Invariants:
//   - it never panics;
//   - an error wraps ErrBadRecord;
//   - a decoded group re-encodes (version 3) to bytes that decode to an
//     equal group (byte slices compared by content);
//   - the decoded group shares no bytes with the input.
func FuzzGroupValue(f *testing.F) {
	sg := metastore.Group{
		Name: "g", ProtocolType: "consumer", Protocol: "range", Generation: 4, Leader: "m1", StateTime: time.UnixMilli(1234),
		Members: []metastore.GroupMember{
			{MemberID: "m1", ClientID: "c1", ClientHost: "/127.0.0.1", RebalanceTimeout: time.Minute, SessionTimeout: 10 * time.Second,
				Protocols: []metastore.GroupProtocol{{Name: "range", Metadata: []byte("sub1")}}, Assignment: []byte("a1")},
			{MemberID: "m2", GroupInstanceID: "static-2", ClientID: "c2", ClientHost: "/127.0.0.2",
				Protocols: []metastore.GroupProtocol{{Name: "range", Metadata: []byte("sub2")}}, Assignment: []byte("a2")},
		},
	}
	f.Add(appendGroupValue(nil, sg))
	f.Add(appendGroupValue(nil, metastore.Group{Name: "e", ProtocolType: "consumer", Generation: 9}))
	for v := int16(0); v <= 3; v++ {
		kv := kmsg.NewGroupMetadataValue()
		kv.Version, kv.ProtocolType, kv.Generation = v, "consumer", 2
		p, l, id := "range", "m", "static"
		kv.Protocol, kv.Leader = &p, &l
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.InstanceID, m.Subscription, m.Assignment = "m", &id, []byte{1, 2}, []byte{3}
		kv.Members = append(kv.Members, m)
		f.Add(kv.AppendTo(nil))
	}
	full := appendGroupValue(nil, sg)
	f.Add(full[:len(full)-3]) // truncated
	f.Add([]byte{0, 4, 0, 0}) // unknown version
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		got, err := decodeGroupValue("g", in)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		re := appendGroupValue(nil, got)
		again, err := decodeGroupValue("g", re)
		if err != nil {
			t.Fatalf("%x decodes to %+v, its re-encoding %x does not: %v", b, got, re, err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(again)) {
			t.Fatalf("%x decodes to\n%+v\nre-encoded %x to\n%+v", b, got, re, again)
		}
		for i := range in {
			in[i] ^= 0xff
		}
		if !reflect.DeepEqual(normalize(got), normalize(again)) {
			t.Fatalf("the group decoded from %x changed with its input", b)
		}
	})
}

// normalize makes nil and empty byte slices alike, for DeepEqual.
func normalize(sg metastore.Group) metastore.Group {
	out := sg
	out.Members = nil
	for _, m := range sg.Members {
		m.Assignment = append([]byte{}, m.Assignment...)
		var ps []metastore.GroupProtocol
		for _, p := range m.Protocols {
			ps = append(ps, metastore.GroupProtocol{Name: p.Name, Metadata: append([]byte{}, p.Metadata...)})
		}
		m.Protocols = ps
		out.Members = append(out.Members, m)
	}
	return out
}
