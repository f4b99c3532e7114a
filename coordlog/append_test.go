package coordlog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice/sluice/record"
)

var errNotLeader = errors.New("test: not the coordinator")

func TestAppend(t *testing.T) {
	recs := []record.BuildRecord{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}}
	t.Run("leader", func(t *testing.T) {
		p := newPartition(t, true)
		if err := Append(context.Background(), p, recs, time.Minute, errNotLeader); err != nil {
			t.Fatal(err)
		}
		if hw := p.HighWatermark(); hw != 1 {
			t.Errorf("high watermark %d after Append, want 1 (committed)", hw)
		}
	})
	t.Run("follower", func(t *testing.T) {
		p := newPartition(t, false)
		if err := Append(context.Background(), p, recs, time.Minute, errNotLeader); !errors.Is(err, errNotLeader) {
			t.Fatalf("Append on a follower = %v, want errNotLeader", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		p := newPartition(t, true)
		p.Close()
		if err := Append(context.Background(), p, recs, time.Minute, errNotLeader); !errors.Is(err, errNotLeader) {
			t.Fatalf("Append on a closed partition = %v, want errNotLeader", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		p := newPartition(t, true)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := Append(ctx, p, recs, time.Minute, errNotLeader)
		if err != nil && (errors.Is(err, errNotLeader) || !errors.Is(err, context.Canceled)) {
			t.Fatalf("Append with a cancelled ctx = %v, want nil or context.Canceled", err)
		}
	})
}
