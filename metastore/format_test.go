package metastore

import (
	"bytes"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/sluice/sluice/auth/sasl"
)

func TestNameEncoding(t *testing.T) {
	cases := []struct {
		name string
		want []byte
	}{
		{"", []byte{0, 1}},
		{"a", []byte{'a', 0, 1}},
		{"a\x00", []byte{'a', 0, 0xff, 0, 1}},
		{"\x00\x00", []byte{0, 0xff, 0, 0xff, 0, 1}},
		{"a.b", []byte{'a', '.', 'b', 0, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := appendName(nil, tc.name)
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("appendName(%q) = %x, want %x", tc.name, got, tc.want)
			}
			name, rest, ok := decodeName(append(got, 7))
			if !ok || name != tc.name || !bytes.Equal(rest, []byte{7}) {
				t.Fatalf("decodeName = %q, %x, %v", name, rest, ok)
			}
		})
	}
}

// TestNameOrderAndPrefixFree checks that encoded names sort like the raw
// names and that no encoded name is a prefix of another.
func TestNameOrderAndPrefixFree(t *testing.T) {
	names := []string{"", "a", "a\x00", "a\x00\x00", "a\x00b", "a\x01", "a.b", "ab", "b", "\xff", "\x00"}
	sort.Strings(names)
	for i := range names {
		for j := range names {
			ei, ej := appendName(nil, names[i]), appendName(nil, names[j])
			if c := bytes.Compare(ei, ej); c != compareInts(i, j) {
				t.Fatalf("order of %q vs %q: encoded compare %d", names[i], names[j], c)
			}
			if i != j && bytes.HasPrefix(ej, ei) {
				t.Fatalf("esc(%q) is a prefix of esc(%q)", names[i], names[j])
			}
		}
	}
}

func compareInts(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestOffsetKeyRoundTrip(t *testing.T) {
	cases := []struct {
		group string
		tp    TopicPartition
	}{
		{"g", TopicPartition{"t", 0}},
		{"", TopicPartition{"", 2147483647}},
		{"g\x00", TopicPartition{"\x00t", -1}},
	}
	for _, tc := range cases {
		t.Run(tc.group+"/"+tc.tp.Topic, func(t *testing.T) {
			k := offsetKey(nil, tc.group, tc.tp)
			g, tp, err := decodeOffsetKey(k)
			if err != nil || g != tc.group || tp != tc.tp {
				t.Fatalf("decodeOffsetKey = %q %v %v", g, tp, err)
			}
			prefix := offsetGroupPrefix(nil, tc.group)
			for _, prev := range []string{"", tc.tp.Topic, tc.tp.Topic + "x", "t"} {
				if got, err := decodeOffsetTP(k, len(prefix), prev); err != nil || got != tc.tp {
					t.Fatalf("decodeOffsetTP(prev=%q) = %v, %v", prev, got, err)
				}
			}
			if !bytes.HasPrefix(k, prefix) || bytes.Compare(k, prefixEnd(prefix)) >= 0 {
				t.Fatalf("key %x outside its group range [%x, %x)", k, prefix, prefixEnd(prefix))
			}
		})
	}
}

// TestCorruptValues feeds damaged values to every decoder: each returns an
// error wrapping ErrCorrupt that names the key.
func TestCorruptValues(t *testing.T) {
	key := []byte("the-key")
	offset := appendOffset(nil, CommittedOffset{Offset: 1, Metadata: "md"})
	topic := encodeTopic(nil, Topic{Name: "t", Partitions: 1, Assignment: [][]int32{{0}}, Configs: map[string]string{"a": "b"}})
	group := encodeGroup(nil, testGroup("g"))
	decoders := map[string]func([]byte) error{
		"offset":     func(v []byte) error { _, err := decodeOffset(key, v); return err },
		"topic":      func(v []byte) error { _, err := decodeTopic(key, v); return err },
		"group":      func(v []byte) error { _, err := decodeGroup(key, v); return err },
		"producerid": func(v []byte) error { _, err := decodeProducerID(key, v); return err },
		"checkpoint": func(v []byte) error { _, err := decodeCheckpoint(key, v); return err },
	}
	cases := []struct {
		name, kind string
		value      []byte
	}{
		{"offset empty", "offset", nil},
		{"offset short", "offset", offset[:20]},
		{"offset truncated metadata", "offset", offset[:len(offset)-1]},
		{"offset trailing", "offset", append(append([]byte{}, offset...), 0)},
		{"offset version", "offset", append([]byte{9}, offset[1:]...)},
		{"topic empty", "topic", nil},
		{"topic truncated", "topic", topic[:len(topic)-3]},
		{"topic trailing", "topic", append(append([]byte{}, topic...), 1)},
		{"topic version", "topic", append([]byte{2}, topic[1:]...)},
		{"topic huge count", "topic", append(encodeTopic(nil, Topic{Name: "t"})[:1+4+1+16+4+2], 0xff, 0xff, 0xff, 0xff)},
		{"group truncated", "group", group[:len(group)/2]},
		{"group version", "group", append([]byte{0}, group[1:]...)},
		{"producerid short", "producerid", []byte{1, 0}},
		{"producerid negative", "producerid", appendProducerID(nil, -5)},
		{"checkpoint empty", "checkpoint", nil},
		{"checkpoint version", "checkpoint", []byte{2, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := decoders[tc.kind](tc.value)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if !bytes.Contains([]byte(err.Error()), key) {
				t.Fatalf("error %q does not name the key", err)
			}
		})
	}
}

// TestCorruptOnDisk writes a damaged value under a real key and checks the
// store reports ErrCorrupt through its public API instead of panicking.
func TestCorruptOnDisk(t *testing.T) {
	s := openTest(t, t.TempDir())
	if err := s.PutGroup(testGroup("g")); err != nil {
		t.Fatal(err)
	}
	raw := map[string][]byte{
		string(topicKey(nil, "bad")):                              {1, 0, 0},
		string(groupKey(nil, "bad")):                              {1, 0xff},
		string(offsetKey(nil, "g", TopicPartition{"t", 0})):       {1, 2, 3},
		string(checkpointKey(nil, "bad")):                         {},
		string(append(offsetGroupPrefix(nil, "h"), 'x', 0, 0x01)): appendOffset(nil, CommittedOffset{}), // bad partition suffix
	}
	for k, v := range raw {
		if err := s.db.Set([]byte(k), v, syncWrite); err != nil {
			t.Fatal(err)
		}
	}
	calls := map[string]func() error{
		"GetTopic":      func() error { _, err := s.GetTopic("bad"); return err },
		"ListTopics":    func() error { _, err := s.ListTopics(); return err },
		"GetGroup":      func() error { _, err := s.GetGroup("bad"); return err },
		"ListGroups":    func() error { _, err := s.ListGroups(); return err },
		"FetchOffsets":  func() error { _, err := s.FetchOffsets("g"); return err },
		"FetchOffsetsH": func() error { _, err := s.FetchOffsets("h"); return err },
		"GetCheckpoint": func() error { _, err := s.GetCheckpoint("bad"); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s = %v, want ErrCorrupt", name, err)
			}
		})
	}
	t.Run("good group still readable", func(t *testing.T) {
		if _, err := s.GetGroup("g"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestUnknownStoreFormat(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(formatKey, []byte{99}, syncWrite); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of format 99 = %v, want ErrCorrupt", err)
	}
}

// FuzzDecodeValues feeds arbitrary bytes to every value decoder and to the
// offset and SCRAM credential key decoders (pending transactional offsets
// included). Invariants: no decoder panics
// or allocates beyond the input's size; every failure wraps ErrCorrupt; whatever decodes re-encodes
// and decodes again to the same value (re-parsing is stable), and for
// offsets, producer ids, checkpoints and SCRAM credentials the re-encoding
// equals the input.
func FuzzDecodeValues(f *testing.F) {
	f.Add(appendOffset(nil, CommittedOffset{Offset: 5, LeaderEpoch: -1, Metadata: "m", CommitTime: time.UnixMilli(7)}))
	f.Add(encodeTopic(nil, Topic{Name: "t", Partitions: 2, Assignment: [][]int32{{0}, {1, 2}}, Configs: map[string]string{"k": "v"}}))
	f.Add(encodeGroup(nil, testGroup("g")))
	f.Add(appendProducerID(nil, 1000))
	f.Add(appendCheckpoint(nil, []byte("cp")))
	f.Add(offsetKey(nil, "g\x00", TopicPartition{"t", 3}))
	f.Add(encodeScram(nil, sasl.Credential{Salt: []byte("salt"), StoredKey: make([]byte, 32), ServerKey: make([]byte, 32), Iterations: 4096}))
	f.Add(scramKey(nil, "u\x00", sasl.ScramSHA512))
	f.Add(appendPending(nil, PendingTxnOffset{ProducerEpoch: 2, Position: 9, Superseded: true, Offset: CommittedOffset{Offset: 1, LeaderEpoch: -1}}))
	f.Add(appendTxnEpoch(nil, 3))
	f.Add([]byte{})
	key := []byte("k")
	f.Fuzz(func(t *testing.T, v []byte) {
		check := func(what string, err error) bool {
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: error %v does not wrap ErrCorrupt", what, err)
			}
			return err == nil
		}
		if o, err := decodeOffset(key, v); check("offset", err) {
			// Not byte-equal: the millisecond value of the zero time itself
			// decodes to the zero time and re-encodes as -1.
			o2, err := decodeOffset(key, appendOffset(nil, o))
			if err != nil || !bytes.Equal(appendOffset(nil, o2), appendOffset(nil, o)) {
				t.Fatalf("offset re-parse unstable: %v", err)
			}
		}
		if p, err := decodePending(key, v); check("pending", err) {
			p2, err := decodePending(key, appendPending(nil, p))
			if err != nil || !bytes.Equal(appendPending(nil, p2), appendPending(nil, p)) {
				t.Fatalf("pending offset re-parse unstable: %v", err)
			}
		}
		if tp, err := decodeTopic(key, v); check("topic", err) {
			tp2, err := decodeTopic(key, encodeTopic(nil, tp))
			if err != nil || !bytes.Equal(encodeTopic(nil, tp2), encodeTopic(nil, tp)) {
				t.Fatalf("topic re-parse unstable: %v", err)
			}
		}
		if g, err := decodeGroup(key, v); check("group", err) {
			g2, err := decodeGroup(key, encodeGroup(nil, g))
			if err != nil || !bytes.Equal(encodeGroup(nil, g2), encodeGroup(nil, g)) {
				t.Fatalf("group re-parse unstable: %v", err)
			}
		}
		if _, e, err := decodeTxnEpoch(txnEpochKey(7), v); check("producer epoch", err) {
			if re := appendTxnEpoch(nil, e); !bytes.Equal(re, v) {
				t.Fatalf("producer epoch re-encodes to %x, input %x", re, v)
			}
		}
		if _, _, err := decodeTxnEpoch(v, appendTxnEpoch(nil, 1)); check("producer epoch key", err) && len(v) != 9 {
			t.Fatalf("producer epoch key of %d bytes decoded", len(v))
		}
		if n, err := decodeProducerID(key, v); check("producerid", err) {
			if re := appendProducerID(nil, n); !bytes.Equal(re, v) {
				t.Fatalf("producer id re-encodes to %x, input %x", re, v)
			}
		}
		if c, err := decodeCheckpoint(key, v); check("checkpoint", err) {
			if re := appendCheckpoint(nil, c); !bytes.Equal(re, v) {
				t.Fatalf("checkpoint re-encodes to %x, input %x", re, v)
			}
		}
		if c, err := decodeScram(key, v, sasl.ScramSHA256); check("scram", err) {
			if re := encodeScram(nil, c); !bytes.Equal(re, v) {
				t.Fatalf("scram credential re-encodes to %x, input %x", re, v)
			}
		}
		if u, m, err := decodeScramKey(v); check("scram key", err) {
			if re := scramKey(nil, u, m); !bytes.Equal(re, v) {
				t.Fatalf("scram key re-encodes to %x, input %x", re, v)
			}
		}
		if g, tp, err := decodeOffsetKey(v); check("offset key", err) {
			if re := offsetKey(nil, g, tp); !bytes.Equal(re, v) {
				t.Fatalf("offset key re-encodes to %x, input %x", re, v)
			}
		}
	})
}
