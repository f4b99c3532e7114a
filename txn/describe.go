package txn

import (
	"fmt"
	"slices"
	"time"
)

// Txn describes one transactional id (DescribeTransactions,
// ListTransactions).
type Txn struct {
	TransactionalID string
	State           State
	ProducerID      int64
	ProducerEpoch   int16
	TimeoutMs       int32
	StartMs         int64 // -1 when no transaction started
	Partitions      []TopicPartition
}

func describe(m *txnMeta) Txn {
	return Txn{
		TransactionalID: m.id, State: m.cur.State, ProducerID: m.cur.ProducerID, ProducerEpoch: m.cur.ProducerEpoch,
		TimeoutMs: m.cur.TimeoutMs, StartMs: m.cur.StartMs, Partitions: slices.Clone(m.cur.Partitions),
	}
}

// Describe returns id's committed state. Errors: ErrInvalidRequest (an
// empty id), ErrNotCoordinator, ErrLoadInProgress,
// ErrTransactionalIDNotFound.
func (c *Coordinator) Describe(id string) (Txn, error) {
	if id == "" {
		return Txn{}, fmt.Errorf("%w: empty transactional id", ErrInvalidRequest)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, err := c.shardLocked(id)
	if err != nil {
		return Txn{}, err
	}
	m := sh.txns[id]
	if m == nil || m.cur.State == Dead {
		return Txn{}, fmt.Errorf("%w: %q", ErrTransactionalIDNotFound, id)
	}
	return describe(m), nil
}

// CountByState returns how many transactional ids of the partitions led
// here are in each state (Dead left out), for the broker's metrics. Cheap:
// no copies; partitions still loading count what they loaded so far.
func (c *Coordinator) CountByState() map[State]int {
	out := map[State]int{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sh := range c.shards {
		for _, m := range sh.txns {
			if m.cur.State != Dead {
				out[m.cur.State]++
			}
		}
	}
	return out
}

// ListFilter selects transactions for List; empty fields select all.
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	// MinDuration, when positive, selects transactions that started at
	// least that long ago (ListTransactions v1, KIP-994).
	MinDuration time.Duration
}

// List returns the transactional ids of every partition led here that f
// selects, sorted by id. Errors: ErrLoadInProgress while a partition led
// here is loading, as Kafka answers.
func (c *Coordinator) List(f ListFilter) ([]Txn, error) {
	n := c.opts.NumPartitions()
	for i := int32(0); i < n; i++ {
		if _, loading := c.parts.State(i); loading {
			return nil, fmt.Errorf("%w: %s-%d", ErrLoadInProgress, Topic, i)
		}
	}
	now := c.nowMs()
	var out []Txn
	c.mu.Lock()
	for _, sh := range c.shards {
		for _, m := range sh.txns {
			v := m.cur
			switch {
			case v.State == Dead:
			case len(f.States) > 0 && !slices.Contains(f.States, v.State):
			case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, v.ProducerID):
			case f.MinDuration > 0 && (v.StartMs < 0 || now-v.StartMs < f.MinDuration.Milliseconds()):
			default:
				out = append(out, describe(m))
			}
		}
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b Txn) int {
		switch {
		case a.TransactionalID < b.TransactionalID:
			return -1
		case a.TransactionalID > b.TransactionalID:
			return 1
		}
		return 0
	})
	return out, nil
}
