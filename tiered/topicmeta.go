package tiered

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/internal/logevery"
)

// Kafka's topic-based RemoteLogMetadataManager
// (TopicBasedRemoteLogMetadataManager): the remote log metadata of a
// cluster lives in the internal topic __remote_log_metadata, one record
// per event (topicmeta_format.go), each partition's events in the
// metadata partition metadataPartition picks. Every broker replays the
// topic into a materialized view (Kafka's RemoteLogMetadataCache), so a
// broker that restarts or becomes a partition's leader knows exactly
// which segments are remote and in which state. A write is answered once
// the view has applied it (read your writes), as Kafka's
// storeRemoteLogMetadata completes once its consumer has caught up.
//
// Sluice replays every partition of the topic on every broker, not only
// those of the user partitions the broker hosts as Kafka does: a broker
// that becomes a replica of a partition finds its metadata already
// loaded, and the topic holds a few records per remote segment.
//
// Going through the Kafka protocol (a client of the broker's own
// inter-broker listener, as the schema registry and the console) keeps
// this package below `server`: the leader of a metadata partition may be
// another broker.

// Kafka's defaults (TopicBasedRemoteLogMetadataManagerConfig).
const (
	RemoteLogMetadataTopic             = "__remote_log_metadata"
	DefaultRemoteLogMetadataPartitions = 50
	DefaultRemoteLogMetadataRF         = 3
)

// ErrMetadataNotReady: the view has not yet replayed the topic to the end
// it had when the broker started; the caller retries later.
var ErrMetadataNotReady = errors.New("tiered: remote log metadata is still loading")

// TopicMetadataOptions configure a TopicMetadata.
type TopicMetadataOptions struct {
	// Kafka are the client options that reach this broker's own
	// listener (seed, TLS, SASL).
	Kafka    []kgo.Opt
	BrokerID int32
	// Partitions of the topic when it is created (0: 50); an existing
	// topic's own count is used.
	Partitions int32
	// ReplicationFactor when it is created (0: 3), capped by the
	// number of live brokers.
	ReplicationFactor int16
	// WriteTimeout bounds a write and its application (0: 30s).
	WriteTimeout time.Duration
	Logger       *slog.Logger
	// PartitionCount, when set, is the partition count of the topic with
	// id and name in this broker's metadata; ok is false when it knows
	// no such topic. The view holds a bounded number of partitions it
	// does not know (topicmeta_guard.go).
	PartitionCount func(id [16]byte, topic string) (n int32, ok bool)
}

// TopicMetadata is the topic-based remote log metadata manager. Safe for
// concurrent use. Start it before use and Close it when done.
type TopicMetadata struct {
	opts TopicMetadataOptions
	log  *slog.Logger
	cl   *kgo.Client

	ctx     context.Context
	cancel  context.CancelFunc
	started sync.Once
	done    chan struct{} // closed when run returns (made closed if never started)

	mu   sync.Mutex
	cond *sync.Cond // broadcast on every applied batch and on failure
	// n is the topic's partition count, 0 until known.
	n int32
	// applied[p] is the next offset of metadata partition p to apply;
	// loadedTo[p] the end offset seen at start: the view is ready once
	// applied[p] >= loadedTo[p] for every p.
	applied, loadedTo []int64
	ready             bool
	closed            bool
	parts             map[TopicIDPartition]*topicPart
	// unknown are the partitions of parts that PartitionCount did not
	// know when they were added, at most maxUnknownPartitions.
	unknown map[TopicIDPartition]struct{}
	skipped logevery.Counter // records refused or undecodable
}

// topicPart is one user partition's materialized metadata.
type topicPart struct {
	// segs are by StartOffset, then the order they were added; replaced
	// whole on every change, so a reader may keep the slice it got.
	segs     []SegmentMetadata
	finished *remoteState // summary of segs, nil until asked after a change
	deleting bool         // a DELETE_PARTITION_MARKED/STARTED was seen
}

// NewTopicMetadata returns a TopicMetadata; it sends nothing until Start.
func NewTopicMetadata(opts TopicMetadataOptions) (*TopicMetadata, error) {
	if opts.Partitions <= 0 {
		opts.Partitions = DefaultRemoteLogMetadataPartitions
	}
	if opts.ReplicationFactor <= 0 {
		opts.ReplicationFactor = DefaultRemoteLogMetadataRF
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	kopts := append(slices.Clone(opts.Kafka),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("tiered: remote log metadata client: %w", err)
	}
	m := &TopicMetadata{opts: opts, log: opts.Logger, cl: cl, parts: map[TopicIDPartition]*topicPart{}, done: make(chan struct{})}
	m.cond = sync.NewCond(&m.mu)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Start creates the topic when missing and replays it in the background;
// until the replay reaches the end seen at start, reads answer
// ErrMetadataNotReady.
func (m *TopicMetadata) Start() {
	m.started.Do(func() { go m.run() })
}

// Close stops the replay and the client.
func (m *TopicMetadata) Close() error {
	m.started.Do(func() { close(m.done) }) // never started: nothing runs
	m.cancel()
	m.mu.Lock()
	m.closed = true
	m.cond.Broadcast()
	m.mu.Unlock()
	<-m.done
	m.cl.Close()
	return nil
}

// run finds the topic, then applies its records until Close. While this
// broker's metadata does not show the topic, run looks for it again every
// second and, until the view is ready, asks the controller whether it
// exists (absent): a topic that exists but is not yet visible here (a
// restarted broker whose metadata has not caught up) keeps the view not
// ready (ErrMetadataNotReady, retriable), as Kafka's
// TopicBasedRemoteLogMetadataManager is not initialized until it sees its
// topic; a topic the controller does not know makes the view ready and
// empty (nothing was ever remote in this cluster): the first broker to
// copy a segment creates it (write), so a cluster that never tiered
// anything is not held up.
func (m *TopicMetadata) run() {
	defer close(m.done)
	var n int32
	var ends []int64
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		var err error
		n, ends, err = m.find(m.ctx)
		if err == nil {
			break
		}
		if m.ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		ready := m.ready
		m.mu.Unlock()
		if errors.Is(err, errNoMetadataTopic) && !ready {
			// Asked only until the view is ready: a topic created
			// later (by the first broker to copy) is found by find,
			// which makes the view not ready until it is loaded.
			if absent, aerr := m.absent(m.ctx); absent {
				m.mu.Lock()
				m.ready = true
				m.mu.Unlock()
				m.log.Info("tiered: no remote log metadata topic yet: nothing is remote", "topic", RemoteLogMetadataTopic)
			} else {
				m.log.Debug("tiered: remote log metadata topic not visible here yet, retrying", "err", aerr)
			}
		} else if !errors.Is(err, errNoMetadataTopic) {
			m.log.Debug("tiered: remote log metadata topic not readable yet, retrying", "err", err)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
	m.mu.Lock()
	m.n, m.loadedTo, m.applied, m.ready = n, ends, make([]int64, n), false
	m.checkReadyLocked()
	m.cond.Broadcast()
	m.mu.Unlock()
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < n; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	m.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{RemoteLogMetadataTopic: offsets})
	for {
		fetches := m.cl.PollFetches(m.ctx)
		if m.ctx.Err() != nil {
			return
		}
		fetches.EachError(func(_ string, p int32, err error) {
			m.log.Debug("tiered: reading remote log metadata", "partition", p, "err", err)
		})
		m.mu.Lock()
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Partition < 0 || r.Partition >= m.n {
				return
			}
			rec, err := decodeRLMRecord(r.Value)
			if err == nil {
				err = m.applyLocked(&rec)
			}
			if err != nil {
				// Kafka's consumer task fails on such a record; skipping
				// it keeps every other partition's metadata served.
				m.logSkipped(r.Partition, r.Offset, err)
			}
			m.applied[r.Partition] = max(m.applied[r.Partition], r.Offset+1)
		})
		m.checkReadyLocked()
		m.cond.Broadcast()
		m.mu.Unlock()
	}
}

// errNoMetadataTopic: __remote_log_metadata does not exist (yet).
var errNoMetadataTopic = errors.New("tiered: no remote log metadata topic")

// absent reports whether the controller knows no topic named
// __remote_log_metadata, which this broker's metadata does not show: it
// validates the topic's creation (CreateTopics validate_only, sent to the
// controller), which answers TOPIC_ALREADY_EXISTS for a topic that
// exists. A refusal for any other reason that is not retriable comes from
// checks after the one for existence, so the topic is absent too; a
// retriable error or no answer is not an answer (false, with the error).
func (m *TopicMetadata) absent(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := kadm.NewClient(m.cl).ValidateCreateTopics(ctx, -1, -1, nil, RemoteLogMetadataTopic)
	if err == nil {
		r, ok := res[RemoteLogMetadataTopic]
		if !ok {
			return false, fmt.Errorf("no answer for %s in CreateTopics", RemoteLogMetadataTopic)
		}
		err = r.Err
	}
	var ke *kerr.Error
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, err
	case errors.As(err, &ke) && !ke.Retriable:
		return true, nil
	}
	return false, err
}

// find returns the topic's partition count and end offsets, or
// errNoMetadataTopic.
func (m *TopicMetadata) find(ctx context.Context) (int32, []int64, error) {
	adm := kadm.NewClient(m.cl)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, RemoteLogMetadataTopic)
	if err != nil {
		return 0, nil, err
	}
	td, ok := md.Topics[RemoteLogMetadataTopic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return 0, nil, errNoMetadataTopic
	}
	if td.Err != nil {
		return 0, nil, td.Err
	}
	n := int32(len(td.Partitions))
	offs, err := adm.ListEndOffsets(ctx, RemoteLogMetadataTopic)
	if err != nil {
		return 0, nil, err
	}
	ends := make([]int64, n)
	for p := int32(0); p < n; p++ {
		o, ok := offs.Lookup(RemoteLogMetadataTopic, p)
		if !ok {
			return 0, nil, fmt.Errorf("no end offset for %s-%d", RemoteLogMetadataTopic, p)
		}
		if o.Err != nil {
			return 0, nil, fmt.Errorf("end offset of %s-%d: %w", RemoteLogMetadataTopic, p, o.Err)
		}
		ends[p] = o.Offset
	}
	return n, ends, nil
}

// create creates the topic with Kafka's defaults (retention -1,
// replication factor 3). A cluster of fewer brokers refuses that
// (INVALID_REPLICATION_FACTOR) and gets one replica per live broker: the
// factor is capped by the brokers only then, after asking again for ten
// seconds, never by a view of the cluster that has not yet seen every
// broker register.
func (m *TopicMetadata) create(ctx context.Context) error {
	adm := kadm.NewClient(m.cl)
	configs := map[string]*string{
		"retention.ms":    kadm.StringPtr("-1"),
		"retention.bytes": kadm.StringPtr("-1"),
		"cleanup.policy":  kadm.StringPtr("delete"),
	}
	try := func(rf int16) error {
		res, err := adm.CreateTopic(ctx, m.opts.Partitions, rf, configs, RemoteLogMetadataTopic)
		if err == nil {
			err = res.Err
		}
		if err == nil {
			m.log.Info("tiered: created the remote log metadata topic", "topic", RemoteLogMetadataTopic, "partitions", m.opts.Partitions, "replication_factor", rf)
		}
		return err
	}
	err := try(m.opts.ReplicationFactor)
	// Brokers still registering: ask again for a few seconds first.
	for i := 0; i < 10 && errors.Is(err, kerr.InvalidReplicationFactor) && ctx.Err() == nil; i++ {
		time.Sleep(time.Second)
		err = try(m.opts.ReplicationFactor)
	}
	if errors.Is(err, kerr.InvalidReplicationFactor) {
		md, merr := adm.BrokerMetadata(ctx)
		if merr != nil {
			return merr
		}
		if n := int16(len(md.Brokers)); n > 0 && n < m.opts.ReplicationFactor {
			err = try(n)
		}
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create %s: %w", RemoteLogMetadataTopic, err)
	}
	return nil
}

// REQUIRES: m.mu held.
func (m *TopicMetadata) checkReadyLocked() {
	if m.ready || m.n == 0 {
		return
	}
	for p, end := range m.loadedTo {
		if m.applied[p] < end {
			return
		}
	}
	m.ready = true
	m.log.Info("tiered: remote log metadata loaded", "topic", RemoteLogMetadataTopic, "partitions", m.n, "user_partitions", len(m.parts))
}

// applyLocked applies one event to the view as Kafka's
// RemoteLogMetadataCache: a new segment is added once, an update moves a
// known segment along a valid transition (an invalid one, or one for an
// unknown segment, is ignored: two brokers deleting the same partition
// both record the deletion), DELETE_SEGMENT_FINISHED drops the segment
// and DELETE_PARTITION_FINISHED the partition. A record no broker could
// have written is refused first (admitLocked, topicmeta_guard.go): the
// error says why. REQUIRES: m.mu held.
func (m *TopicMetadata) applyLocked(r *MetadataRecord) error {
	if err := m.admitLocked(r); err != nil {
		return err
	}
	switch r.Kind {
	case MetadataSegmentKey:
		s := r.Segment
		if s.State != CopySegmentStarted {
			return fmt.Errorf("%w: segment %s of %s added in state %s", errRefusedRecord, s.SegmentID, s.Partition, s.State)
		}
		tp := m.partLocked(s.Partition)
		if slices.ContainsFunc(tp.segs, func(x SegmentMetadata) bool { return x.SegmentID == s.SegmentID }) {
			return nil
		}
		segs := append(slices.Clone(tp.segs), s)
		slices.SortStableFunc(segs, func(a, b SegmentMetadata) int { return cmpInt64(a.StartOffset, b.StartOffset) })
		tp.segs, tp.finished = segs, nil
	case MetadataUpdateKey:
		u := r.Segment
		tp := m.parts[u.Partition]
		if tp == nil {
			return nil
		}
		i := slices.IndexFunc(tp.segs, func(x SegmentMetadata) bool { return x.SegmentID == u.SegmentID })
		if i < 0 || !tp.segs[i].State.validNext(u.State) {
			return nil
		}
		segs := slices.Clone(tp.segs)
		if u.State == DeleteSegmentFinished {
			segs = slices.Delete(segs, i, i+1)
		} else {
			segs[i].State, segs[i].EventTimestamp, segs[i].BrokerID = u.State, u.EventTimestamp, u.BrokerID
		}
		tp.segs, tp.finished = segs, nil
	case MetadataDeleteKey:
		d := r.Delete
		if d.State == DeletePartitionFinished {
			delete(m.parts, d.Partition)
			delete(m.unknown, d.Partition)
			return nil
		}
		m.partLocked(d.Partition).deleting = true
	}
	return nil
}

// REQUIRES: m.mu held.
func (m *TopicMetadata) partLocked(tp TopicIDPartition) *topicPart {
	p := m.parts[tp]
	if p == nil {
		p = &topicPart{}
		m.parts[tp] = p
	}
	return p
}

// write appends r to tp's metadata partition at acks=all and waits until
// the view has applied it.
func (m *TopicMetadata) write(tp TopicIDPartition, r *MetadataRecord) error {
	m.mu.Lock()
	n, ready := m.n, m.ready
	m.mu.Unlock()
	if !ready {
		return ErrMetadataNotReady
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.opts.WriteTimeout)
	defer cancel()
	if n == 0 {
		// No topic yet: create it; the caller retries once run has found
		// and replayed it (another broker may have written to it since
		// this view was read).
		if err := m.create(ctx); err != nil {
			return fmt.Errorf("%w: %w", ErrMetadataNotReady, err)
		}
		return ErrMetadataNotReady
	}
	rec := &kgo.Record{Topic: RemoteLogMetadataTopic, Partition: metadataPartition(tp, n), Value: appendRLMRecord(nil, r)}
	if err := m.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("%w: write remote log metadata of %s: %w", ErrRemoteStorage, tp, err)
	}
	stop := context.AfterFunc(ctx, func() {
		m.mu.Lock()
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	defer stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.applied[rec.Partition] <= rec.Offset {
		if m.closed || ctx.Err() != nil {
			return fmt.Errorf("%w: remote log metadata of %s written at %s-%d@%d but not read back", ErrRemoteStorage, tp, RemoteLogMetadataTopic, rec.Partition, rec.Offset)
		}
		m.cond.Wait()
	}
	if r.Kind == MetadataSegmentKey && !m.heldLocked(r.Segment) {
		// The view refused the new segment (admitLocked: say too many
		// of the partition's segments are being copied already): no
		// broker's view holds it, so nothing may be uploaded for it.
		return fmt.Errorf("%w: remote segment %s of %s not recorded started: the remote log metadata view refused it", ErrRemoteStorage, r.Segment.SegmentID, tp)
	}
	if r.Kind == MetadataUpdateKey && r.Segment.State == CopySegmentFinished && !m.finishedLocked(r.Segment) {
		// The view refused the transition (applyLocked skips an invalid
		// one): another leader had already started deleting the
		// segment, so this copy is not the partition's and its caller
		// must remove what it uploaded, as Kafka's metadata cache
		// refuses the transition rather than reporting it done.
		return fmt.Errorf("%w: remote segment %s of %s not recorded finished: another leader moved it on", ErrRemoteStorage, r.Segment.SegmentID, tp)
	}
	return nil
}

// heldLocked reports whether the view holds segment s (in any state).
// REQUIRES: m.mu held.
func (m *TopicMetadata) heldLocked(s SegmentMetadata) bool {
	p := m.parts[s.Partition]
	return p != nil && slices.ContainsFunc(p.segs, func(x SegmentMetadata) bool { return x.SegmentID == s.SegmentID })
}

// finishedLocked reports whether the view holds segment u as
// COPY_SEGMENT_FINISHED. REQUIRES: m.mu held.
func (m *TopicMetadata) finishedLocked(u SegmentMetadata) bool {
	p := m.parts[u.Partition]
	if p == nil {
		return false
	}
	i := slices.IndexFunc(p.segs, func(x SegmentMetadata) bool { return x.SegmentID == u.SegmentID })
	return i >= 0 && p.segs[i].State == CopySegmentFinished
}

// viewLocked returns tp's view, or ErrMetadataNotReady. REQUIRES: m.mu held.
func (m *TopicMetadata) viewLocked(tp TopicIDPartition) (*topicPart, error) {
	if !m.ready {
		return nil, ErrMetadataNotReady
	}
	if p := m.parts[tp]; p != nil {
		return p, nil
	}
	return &topicPart{}, nil
}

// Segments returns tp's segments in every state, by start offset; the
// slice is the caller's.
func (m *TopicMetadata) Segments(tp TopicIDPartition) ([]SegmentMetadata, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.viewLocked(tp)
	if err != nil {
		return nil, err
	}
	return slices.Clone(p.segs), nil
}

// Finished returns the summary of tp's finished segments, shared and
// read-only.
func (m *TopicMetadata) Finished(tp TopicIDPartition) (*remoteState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.viewLocked(tp)
	if err != nil {
		return nil, err
	}
	if p.finished == nil {
		p.finished = summarize(p.segs)
	}
	return p.finished, nil
}

// Add records a new COPY_SEGMENT_STARTED segment.
func (m *TopicMetadata) Add(md SegmentMetadata) error {
	if md.State != CopySegmentStarted {
		return fmt.Errorf("tiered: add segment %s in state %s", md.SegmentID, md.State)
	}
	return m.write(md.Partition, &MetadataRecord{Kind: MetadataSegmentKey, Segment: md})
}

// Update moves segment id of tp to state. An invalid transition is an
// error and writes nothing, except that a deletion another broker has
// already recorded (the segment in that state, or gone) is success:
// every replica of a deleted topic deletes its remote segments, as
// Kafka's stopPartitions.
func (m *TopicMetadata) Update(tp TopicIDPartition, id UUID, state State, eventMs int64) error {
	m.mu.Lock()
	p, err := m.viewLocked(tp)
	var cur State = -1
	if err == nil {
		if i := slices.IndexFunc(p.segs, func(x SegmentMetadata) bool { return x.SegmentID == id }); i >= 0 {
			cur = p.segs[i].State
		}
	}
	m.mu.Unlock()
	deleting := state == DeleteSegmentStarted || state == DeleteSegmentFinished
	switch {
	case err != nil:
		return err
	case cur < 0 && deleting:
		return nil
	case cur < 0:
		return fmt.Errorf("tiered: %s: no remote segment %s", tp, id)
	case cur == state && deleting:
		return nil
	case !cur.validNext(state):
		return fmt.Errorf("tiered: %s: segment %s cannot go from %s to %s", tp, id, cur, state)
	}
	return m.write(tp, &MetadataRecord{Kind: MetadataUpdateKey, Segment: SegmentMetadata{
		Partition: tp, SegmentID: id, BrokerID: m.opts.BrokerID, EventTimestamp: eventMs, State: state,
	}})
}

// Forget records DELETE_PARTITION_FINISHED for tp once its remote
// segments are deleted: every broker's view drops it.
func (m *TopicMetadata) Forget(tp TopicIDPartition) error {
	return m.write(tp, &MetadataRecord{Kind: MetadataDeleteKey, Delete: PartitionDelete{
		Partition: tp, BrokerID: m.opts.BrokerID, EventTimestamp: time.Now().UnixMilli(), State: DeletePartitionFinished,
	}})
}

// Partitions lists every partition with remote metadata.
func (m *TopicMetadata) Partitions() ([]TopicIDPartition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ready {
		return nil, ErrMetadataNotReady
	}
	out := make([]TopicIDPartition, 0, len(m.parts))
	for tp := range m.parts {
		out = append(out, tp)
	}
	return out, nil
}
