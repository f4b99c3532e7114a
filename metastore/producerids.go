package metastore

import (
	"errors"
	"fmt"
	"math"
)

// AllocateProducerIDs reserves the block [start, start+n) of producer ids
// and returns start. The new high mark is synced before it returns, so ids
// are handed out in increasing order and never reused, across restarts too;
// ids of a block the broker did not use before a crash are simply skipped.
// The first block starts at 0. n must be positive (ErrInvalid).
// Safe for concurrent use: concurrent calls get disjoint blocks.
func (s *Store) AllocateProducerIDs(n int64) (start int64, err error) {
	if n <= 0 {
		return 0, fmt.Errorf("%w: producer id block of %d", ErrInvalid, n)
	}
	s.pidMu.Lock()
	defer s.pidMu.Unlock()
	if s.nextPID < 0 {
		next := int64(0)
		err := s.get(producerIDKey, func(v []byte) (err error) {
			next, err = decodeProducerID(producerIDKey, v)
			return err
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			return 0, err
		}
		s.nextPID = next
	}
	start = s.nextPID
	if start > math.MaxInt64-n {
		return 0, fmt.Errorf("%w: producer ids exhausted at %d", ErrInvalid, start)
	}
	if err := s.set(producerIDKey, appendProducerID(nil, start+n)); err != nil {
		// Unknown whether it reached the disk: reload before the next block
		// so a retry cannot hand out ids below the stored mark.
		s.nextPID = -1
		return 0, err
	}
	s.nextPID = start + n
	return start, nil
}
