package coordlog

import (
	"context"
	"errors"
	"fmt"
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
// control batches are skipped, records at or past end are not read, and an
// empty range reads nothing.
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
	var log []byte
	log = append(log, batch(0, 0, rec("k1", "v1"), rec("k2", "v2"))...)
	// A control batch (an abort marker's layout) at offset 2.
	log = append(log, batch(2, record.ControlBit, record.BuildRecord{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}, Timestamp: 1})...)
	log = append(log, batch(3, 0, rec("k1", ""), rec("k3", "v3"), rec("k4", "v4"))...)
	if err := p.AppendAsFollower(log); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		end  int64
		want []replayed
	}{
		{end: 0},
		{end: 1, want: []replayed{{0, "k1", "v1", false}}},
		{end: 5, want: []replayed{{0, "k1", "v1", false}, {1, "k2", "v2", false}, {3, "k1", "", true}, {4, "k3", "v3", false}}},
		{end: 6, want: []replayed{{0, "k1", "v1", false}, {1, "k2", "v2", false}, {3, "k1", "", true}, {4, "k3", "v3", false}, {5, "k4", "v4", false}}},
	} {
		t.Run(fmt.Sprintf("end=%d", tt.end), func(t *testing.T) {
			var got []replayed
			if err := Replay(p, tt.end, collect(&got)); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("replayed %v, want %v", got, tt.want)
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
	err := Replay(p, p.LogEndOffset(), func(off int64, key, value []byte) error {
		calls++
		if string(key) == "b" {
			return errBad
		}
		return nil
	})
	if !errors.Is(err, errBad) || calls != 2 {
		t.Fatalf("Replay = %v after %d calls, want errBad after 2", err, calls)
	}
	if want := "coordlog: __internal-0 offset 1: bad record"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
