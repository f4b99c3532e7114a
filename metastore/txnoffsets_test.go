package metastore

import (
	"errors"
	"reflect"
	"testing"
)

func pendingOf(pid int64, topic string, part int32, off int64, pos int64) PendingTxnOffset {
	return PendingTxnOffset{
		ProducerID: pid, ProducerEpoch: 3,
		TopicPartition: TopicPartition{Topic: topic, Partition: part},
		Offset:         CommittedOffset{Offset: off, LeaderEpoch: -1, Metadata: "m", CommitTime: ms},
		Position:       pos,
	}
}

// TestPendingTxnOffsetsSurviveReopen: pending offsets written before a
// restart come back as pending, apart from committed offsets.
func TestPendingTxnOffsetsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := pendingOf(7, "t", 0, 10, 1), pendingOf(7, "t", 1, 11, 1)
	c := pendingOf(9, "t", 0, 12, 2)
	c.Superseded = true
	if err := s.UpdateOffsets("g", OffsetsUpdate{PutPending: []PendingTxnOffset{c, a, b}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	got, err := s.FetchPendingTxnOffsets("g")
	if err != nil {
		t.Fatal(err)
	}
	if want := []PendingTxnOffset{a, b, c}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen:\n got %+v\nwant %+v", got, want)
	}
	if groups, err := s.ListPendingTxnGroups(); err != nil || !reflect.DeepEqual(groups, []string{"g"}) {
		t.Fatalf("ListPendingTxnGroups = %q, %v", groups, err)
	}
	if groups, err := s.ListOffsetGroups(); err != nil || len(groups) != 0 {
		t.Fatalf("ListOffsetGroups = %q, %v: pending offsets are not committed ones", groups, err)
	}
}

func TestUpdateOffsets(t *testing.T) {
	s := openTest(t, t.TempDir())
	tp := TopicPartition{Topic: "t", Partition: 0}
	p := pendingOf(7, "t", 0, 10, 1)
	if err := s.UpdateOffsets("g", OffsetsUpdate{PutPending: []PendingTxnOffset{p, pendingOf(8, "t", 0, 5, 2)}}); err != nil {
		t.Fatal(err)
	}
	t.Run("commit moves a pending offset atomically", func(t *testing.T) {
		err := s.UpdateOffsets("g", OffsetsUpdate{
			Commit:        map[TopicPartition]CommittedOffset{tp: p.Offset},
			DeletePending: []PendingKey{{ProducerID: 7, TopicPartition: tp}},
		})
		if err != nil {
			t.Fatal(err)
		}
		offs, _ := s.FetchOffsets("g")
		assertOffset(t, offs[tp], p.Offset)
		pend, _ := s.FetchPendingTxnOffsets("g")
		if len(pend) != 1 || pend[0].ProducerID != 8 {
			t.Fatalf("pending after commit = %+v, want producer 8's only", pend)
		}
	})
	t.Run("prefix isolation", func(t *testing.T) {
		if err := s.UpdateOffsets("g\x00x", OffsetsUpdate{PutPending: []PendingTxnOffset{p}}); err != nil {
			t.Fatal(err)
		}
		pend, _ := s.FetchPendingTxnOffsets("g")
		if len(pend) != 1 {
			t.Fatalf("group g sees %d pending offsets, want 1", len(pend))
		}
	})
	t.Run("delete group removes pending", func(t *testing.T) {
		if err := s.DeleteGroup("g"); err != nil {
			t.Fatal(err)
		}
		pend, _ := s.FetchPendingTxnOffsets("g")
		offs, _ := s.FetchOffsets("g")
		if len(pend) != 0 || len(offs) != 0 {
			t.Fatalf("after DeleteGroup: pending %v, offsets %v", pend, offs)
		}
		if err := s.DeleteGroup("g\x00x"); err != nil {
			t.Fatalf("DeleteGroup of a group with only pending offsets: %v", err)
		}
		if err := s.DeleteGroup("g\x00x"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second DeleteGroup = %v, want ErrNotFound", err)
		}
	})
	t.Run("negative producer id refused", func(t *testing.T) {
		bad := pendingOf(-1, "t", 0, 1, 1)
		if err := s.UpdateOffsets("g", OffsetsUpdate{PutPending: []PendingTxnOffset{bad}}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("UpdateOffsets = %v, want ErrInvalid", err)
		}
	})
}

func TestDecodePendingCorrupt(t *testing.T) {
	good := appendPending(nil, pendingOf(1, "t", 0, 1, 1))
	cases := map[string][]byte{
		"empty":         nil,
		"short":         good[:pendingFixedLen-1],
		"version":       append([]byte{9}, good[1:]...),
		"flags":         append(append(append([]byte{}, good[:11]...), 0x80), good[12:]...),
		"offset cut":    good[:len(good)-1],
		"trailing byte": append(append([]byte{}, good...), 0),
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decodePending([]byte("k"), v); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodePending = %v, want ErrCorrupt", err)
			}
		})
	}
}
