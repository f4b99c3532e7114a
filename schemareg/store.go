package schemareg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The registry's storage: one Kafka client (Options.Kafka, a client of this
// broker's own listener, as the console's) that creates the compacted
// topic, replays it into the view from offset 0 and appends records at
// acks=all. Going through the Kafka protocol rather than the broker's
// replica manager keeps this package above `server` and `replica` like
// `console`, and makes a cluster member's view follow the topic's leader
// wherever it is.

// ensureTopic creates the topic (1 partition, cleanup.policy=compact) if
// it does not exist. TopicAlreadyExists is success.
func (r *Registry) ensureTopic(ctx context.Context) error {
	adm := kadm.NewClient(r.cl)
	rf := r.opts.ReplicationFactor
	if rf == 0 {
		rf = -1 // the broker's default.replication.factor
	}
	res, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, r.opts.Topic)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("schemareg: create %s: %w", r.opts.Topic, err)
	}
	if res.Err != nil && !errors.Is(res.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("schemareg: create %s: %w", r.opts.Topic, res.Err)
	}
	return nil
}

// endOffset is the topic's log end offset (high watermark) now.
func (r *Registry) endOffset(ctx context.Context) (int64, error) {
	adm := kadm.NewClient(r.cl)
	offs, err := adm.ListEndOffsets(ctx, r.opts.Topic)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(r.opts.Topic, 0)
	if !ok {
		return 0, kerr.UnknownTopicOrPartition // kadm leaves out a topic the broker does not know
	}
	if o.Err != nil {
		return 0, o.Err
	}
	return o.Offset, nil
}

// load makes the view current enough to answer a request: the first call
// finds out whether the topic exists and, if so, starts the replay loop and
// waits until the view has reached the end offset seen then. Until a
// registry is first used it sends nothing to Kafka, and a broker whose
// registry is never written never gets a _schemas topic. While the topic
// does not exist, load looks again at most once a second: another
// broker's registry (or a Confluent registry) may create it.
func (r *Registry) load(ctx context.Context) error {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if r.consuming {
		return r.waitApplied(ctx, r.loadedTo)
	}
	if r.checkedMissing && time.Since(r.missingAt) < time.Second {
		return nil
	}
	end, err := r.endOffset(ctx)
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		r.checkedMissing, r.missingAt = true, time.Now()
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s: %w", errStore, r.opts.Topic, err)
	}
	r.startConsumingLocked(end)
	return r.waitApplied(ctx, end)
}

// createTopic creates the topic before the first write if load found
// none, and starts the replay loop.
func (r *Registry) createTopic(ctx context.Context) error {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if r.consuming {
		return nil
	}
	if err := r.ensureTopic(ctx); err != nil {
		return fmt.Errorf("%w: %w", errStore, err)
	}
	r.startConsumingLocked(0)
	return nil
}

// startConsumingLocked starts the replay loop from offset 0; the view is
// loaded once it has applied every record below end.
// REQUIRES: r.loadMu held.
func (r *Registry) startConsumingLocked(end int64) {
	r.consuming, r.loadedTo = true, end
	r.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.opts.Topic: {0: kgo.NewOffset().AtStart()}})
	go r.run()
}

// run applies the topic's records to the view until the registry closes.
func (r *Registry) run() {
	defer close(r.done)
	for {
		fetches := r.cl.PollFetches(r.ctx)
		if r.ctx.Err() != nil {
			return
		}
		fetches.EachError(func(t string, p int32, err error) {
			r.log.Warn("schemareg: fetch", "topic", t, "partition", p, "err", err)
		})
		r.view.mu.Lock()
		fetches.EachRecord(func(rec *kgo.Record) {
			if rec.Offset < r.view.applied {
				return
			}
			if err := r.view.applyLocked(rec.Key, rec.Value, rec.Offset); err != nil {
				r.log.Warn("schemareg: skipping a record", "offset", rec.Offset, "err", err)
			}
		})
		r.view.cond.Broadcast()
		r.view.mu.Unlock()
	}
}

// waitApplied blocks until the view has applied every record below off, or
// ctx ends.
func (r *Registry) waitApplied(ctx context.Context, off int64) error {
	wake := func() {
		r.view.mu.Lock()
		r.view.cond.Broadcast()
		r.view.mu.Unlock()
	}
	stop := context.AfterFunc(ctx, wake)
	defer stop()
	stopClose := context.AfterFunc(r.ctx, wake)
	defer stopClose()
	r.view.mu.Lock()
	defer r.view.mu.Unlock()
	for r.view.applied < off {
		if r.ctx.Err() != nil {
			return fmt.Errorf("%w: the registry is closing", errStore)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: waiting for the view to reach offset %d: %w", errTimeout, off, err)
		}
		r.view.cond.Wait()
	}
	return nil
}

// beginWrite prepares a write operation, before it validates anything:
// it creates the topic if there is none and, in a cluster, refuses unless
// this broker is the writer.
// REQUIRES: r.writeMu held.
func (r *Registry) beginWrite(ctx context.Context) error {
	if err := r.createTopic(ctx); err != nil {
		return err
	}
	epoch, err := r.checkWriter(ctx)
	if err != nil {
		return err
	}
	// The view must hold every record in the topic before this writer
	// picks an id or a version: a broker that has just become the writer
	// may not have applied what the previous one wrote.
	if r.opts.Cluster && (epoch < 0 || epoch != r.syncedEpoch) {
		// A leader new to its epoch keeps the high watermark it had as a
		// follower, which may lie below records the previous writer had
		// already answered for: it advances only once the followers fetch
		// from the new leader. The end offset (the high watermark) could
		// leave those records out of the view, and their ids would be
		// handed out again. A NOOP appended at acks=all is answered only
		// once everything before it is committed, and once the view has
		// applied it, the view holds them (Confluent's
		// waitUntilKafkaReaderReachesLastOffset, on becoming the leader).
		if err := r.writeLocked(ctx, storeKey{KeyType: keyNoop}, nil); err != nil {
			return err
		}
		r.syncedEpoch = epoch
		return nil
	}
	for {
		end, err := r.endOffset(ctx)
		switch {
		case err == nil:
			return r.waitApplied(ctx, end)
		case !errors.Is(err, kerr.UnknownTopicOrPartition) && !errors.Is(err, kerr.NotLeaderForPartition):
			return fmt.Errorf("%w: %s: %w", errStore, r.opts.Topic, err)
		}
		// A topic just created: its partition is not hosted yet.
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w", errTimeout, r.opts.Topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeLocked appends key/value (value nil: a tombstone) at acks=all and
// waits until the view has applied it.
// REQUIRES: r.writeMu held (one writer at a time keeps ids unique), and
// beginWrite returned nil under it.
func (r *Registry) writeLocked(ctx context.Context, key storeKey, value any) error {
	rec := &kgo.Record{Topic: r.opts.Topic, Partition: 0, Key: encodeKey(key)}
	if value != nil {
		b, err := jsonMarshal(value)
		if err != nil {
			return err
		}
		rec.Value = b
	}
	res := r.cl.ProduceSync(ctx, rec)
	if err := res.FirstErr(); err != nil {
		if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
			return errSchemaTooLarge()
		}
		return fmt.Errorf("%w: append to %s: %w", errStore, r.opts.Topic, err)
	}
	return r.waitApplied(ctx, rec.Offset+1)
}

// checkWriter refuses a write in a cluster unless this broker leads
// partition 0 of the topic: the partition's leader is the registry's one
// writer, so two brokers never hand out the same id. It returns the
// partition's leader epoch (-1 when the metadata has none, and outside a
// cluster).
func (r *Registry) checkWriter(ctx context.Context) (int32, error) {
	if !r.opts.Cluster {
		return -1, nil
	}
	leader, epoch, err := r.writerID(ctx)
	if err != nil {
		return -1, err
	}
	if leader != r.opts.BrokerID {
		return -1, &apiError{codeUnknownLeader, fmt.Sprintf("this broker (%d) is not the schema registry's writer: writes go to the registry of broker %d, the leader of %s-0", r.opts.BrokerID, leader, r.opts.Topic)}
	}
	return epoch, nil
}

// writerID is the broker that leads partition 0 of the topic and its
// leader epoch, waiting (bounded by ctx) while it has no leader.
func (r *Registry) writerID(ctx context.Context) (leader, epoch int32, err error) {
	leader = -1
	for {
		md, err := kadm.NewClient(r.cl).Metadata(ctx, r.opts.Topic)
		if err != nil {
			return -1, -1, fmt.Errorf("%w: metadata of %s: %w", errStore, r.opts.Topic, err)
		}
		if t, ok := md.Topics[r.opts.Topic]; ok {
			if p, ok := t.Partitions[0]; ok && p.Err == nil {
				leader, epoch = p.Leader, p.LeaderEpoch
			}
		}
		if leader >= 0 {
			break
		}
		// A topic just created, or a leader election under way.
		select {
		case <-ctx.Done():
			return -1, -1, &apiError{codeUnknownLeader, fmt.Sprintf("%s-0 has no leader: the schema registry's writer is unknown", r.opts.Topic)}
		case <-time.After(100 * time.Millisecond):
		}
	}
	return leader, epoch, nil
}

// catchUp makes the view hold every record committed to the topic now: it
// waits until the replay loop has applied everything below the topic's
// current end offset. A topic that did not exist when load last looked is
// looked for again at once.
func (r *Registry) catchUp(ctx context.Context) error {
	r.loadMu.Lock()
	consuming := r.consuming
	r.checkedMissing = false
	r.loadMu.Unlock()
	if !consuming {
		return r.load(ctx)
	}
	end, err := r.endOffset(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errStore, r.opts.Topic, err)
	}
	return r.waitApplied(ctx, end)
}
