package coordlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// Append appends recs (not empty) as one uncompressed batch without a
// producer id to p with acks=all, and returns once the high watermark
// passes it, so the records are committed and may be applied. It waits at
// most timeout (offsets.commit.timeout.ms, say) and no longer than ctx
// allows.
//
// Errors: when p is not (or no longer) the leader, or is closed, an error
// wrapping notLeader, the coordinator's "not the coordinator" error that
// sends clients looking for the new one; anything else (too few in-sync
// replicas, the timeout, ctx, storage) wrapped as is. After a timeout the
// records may still be committed later: a coordinator must not assume
// either way.
func Append(ctx context.Context, p *replication.Partition, recs []record.BuildRecord, timeout time.Duration, notLeader error) error {
	batch := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := p.Append(ctx, batch, -1); err != nil {
		if errors.Is(err, replication.ErrNotLeader) || errors.Is(err, replication.ErrClosed) {
			return fmt.Errorf("%w: %s-%d: %v", notLeader, p.Topic(), p.Index(), err)
		}
		return fmt.Errorf("coordlog: append to %s-%d: %w", p.Topic(), p.Index(), err)
	}
	return nil
}
