package coordlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sluice/sluice/record"
)

type replayed struct {
	off        int64
	key, value string
	tombstone  bool
}

func collect(got *[]replayed) ReplayFunc {
	return func(off int64, key, value []byte) error {
		*got = append(*got, replayed{off: off, key: string(key), value: string(value), tombstone: value == nil})
		return nil
	}
}

// TestReplay: records come in offset order with tombstones as nil values,
// control batches are skipped, records at or past end are not read, an
// empty range reads nothing, and the stats count what was read.
func TestReplay(t *testing.T) {
	p := newPartition(t, false)
	batch := func(base int64, attrs int16, recs ...record.BuildRecord) []byte {
		return record.AppendBatch(nil, record.BatchOptions{BaseOffset: base, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Attributes: attrs}, recs)
	}
	rec := func(k, v string) record.BuildRecord {
		r := record.BuildRecord{Key: []byte(k), Timestamp: 1}
		if v != "" {
			r.Value = []byte(v)
		}
		return r
	}
	b1 := batch(0, 0, rec("k1", "v1"), rec("k2", "v2"))
	// A control batch (an abort marker's layout) at offset 2.
	b2 := batch(2, record.ControlBit, record.BuildRecord{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}, Timestamp: 1})
	b3 := batch(3, 0, rec("k1", ""), rec("k3", "v3"), rec("k4", "v4"))
	if err := p.AppendAsFollower(slices.Concat(b1, b2, b3)); err != nil {
		t.Fatal(err)
	}
	n1, n2, n3 := int64(len(b1)), int64(len(b2)), int64(len(b3))
	// stats: batches past end are not read; the batch that straddles end
	// is read whole but only its records below end are counted.
	for _, tt := range []struct {
		end   int64
		want  []replayed
		stats ReplayStats
	}{
		{end: 0},
		{end: 1, want: []replayed{{0, "k1", "v1", false}}, stats: ReplayStats{Batches: 1, Records: 1, Bytes: n1}},
		{end: 3, want: []replayed{{0, "k1", "v1", false}, {1, "k2", "v2", false}}, stats: ReplayStats{Batches: 1, Records: 2, Bytes: n1 + n2}},
		{end: 5, want: []replayed{{0, "k1", "v1", false}, {1, "k2", "v2", false}, {3, "k1", "", true}, {4, "k3", "v3", false}},
			stats: ReplayStats{Batches: 2, Records: 4, Bytes: n1 + n2 + n3}},
		{end: 6, want: []replayed{{0, "k1", "v1", false}, {1, "k2", "v2", false}, {3, "k1", "", true}, {4, "k3", "v3", false}, {5, "k4", "v4", false}},
			stats: ReplayStats{Batches: 2, Records: 5, Bytes: n1 + n2 + n3}},
	} {
		t.Run(fmt.Sprintf("end=%d", tt.end), func(t *testing.T) {
			var got []replayed
			st, err := Replay(p, tt.end, collect(&got))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("replayed %v, want %v", got, tt.want)
			}
			if st != tt.stats {
				t.Errorf("stats %+v, want %+v", st, tt.stats)
			}
		})
	}
}

// TestReplayError: the callback's error stops the replay and comes back
// wrapped, with where it happened.
func TestReplayError(t *testing.T) {
	p := newPartition(t, true)
	recs := []record.BuildRecord{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}
	if err := Append(context.Background(), p, recs, DefaultRetryBackoff, errNotLeader); err != nil {
		t.Fatal(err)
	}
	errBad := errors.New("bad record")
	calls := 0
	_, err := Replay(p, p.LogEndOffset(), func(off int64, key, value []byte) error {
		calls++
		if string(key) == "b" {
			return errBad
		}
		return nil
	})
	if !errors.Is(err, errBad) || calls != 2 {
		t.Fatalf("Replay = %v after %d calls, want errBad after 2", err, calls)
	}
	if want := "coordlog: __internal-0 batch at 0: offset 1: bad record"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
