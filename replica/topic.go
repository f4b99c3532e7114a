package replica

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/zerocopy"
)

// TopicConfig is a topic's effective configuration, parsed: what its
// partitions and their logs run with.
type TopicConfig struct {
	Log           engine.LogConfig
	LogAppendTime bool
	MaxMessage    int
	MinISR        int
	Rules         record.Rules // what client batches are validated against
	// KeySchemaValidation, ValueSchemaValidation: the topic configs
	// confluent.{key,value}.schema.validation (checked by the produce
	// handler, server/schema_validate.go).
	KeySchemaValidation, ValueSchemaValidation bool
	// KeySubjectStrategy, ValueSubjectStrategy: the topic configs
	// confluent.{key,value}.subject.name.strategy (Confluent's class names).
	KeySubjectStrategy, ValueSubjectStrategy string
	// Backend is the storage backend of the topic's logs (the topic
	// config storage.backend); "": the broker's (the store at each log
	// dir's root).
	Backend string
}

// backend returns c.Backend, def when it is "".
func (c *TopicConfig) backend(def string) string {
	if c.Backend == "" {
		return def
	}
	return c.Backend
}

// Partition is one open partition this broker hosts. Handlers use its
// replication state (embedded) and the methods below; the log under it
// belongs to the Manager.
type Partition struct {
	*replication.Partition // its Topic() and Index() name it
	// Stats is the topic's metrics handle (nil: no metrics), counted by
	// produce and fetch without a lookup.
	Stats *metrics.Topic
}

// ReadBelow reads from offset up to maxBytes, never at or past bound
// (read_committed reads below the last stable offset). The caller
// releases the slice.
func (p *Partition) ReadBelow(offset int64, maxBytes int, bound int64) (zerocopy.Slice, error) {
	return p.Log().Read(offset, maxBytes, bound)
}

// EpochAt returns the leader epoch of the batch holding offset, from the
// log's leader epoch history (which starts at the local log start); ok is
// false below the history.
func (p *Partition) EpochAt(offset int64) (int32, bool) {
	return engine.EpochForOffset(p.Log().LeaderEpochs(), offset)
}

// Size returns the bytes the partition's log holds.
func (p *Partition) Size() int64 { return p.Log().Size() }

// failer is a log that can report a sticky storage failure (segment.Log).
type failer interface{ Failure() error }

// Failure returns the storage error the log failed with (nil: none, or a
// backend that does not report one). A failed log stays failed.
func (p *Partition) Failure() error {
	if f, ok := p.Log().(failer); ok {
		return f.Failure()
	}
	return nil
}

// segmentCounter is the segment backend's list of closed segments.
type segmentCounter interface {
	InactiveSegments() []engine.SegmentInfo
}

// Segments returns the number of segments of the log (the active one
// included); false for a backend without segments.
func (p *Partition) Segments() (int, bool) {
	if sc, ok := p.Log().(segmentCounter); ok {
		return len(sc.InactiveSegments()) + 1, true
	}
	return 0, false
}

// OffsetTime is one entry of Kafka's offsetTimeArray: a segment's first
// offset (at least the log start offset) and its time.
type OffsetTime struct{ Offset, Ms int64 }

// SegmentTimes lists the partition's segments oldest first as Kafka's
// legacyFetchOffsetsBefore sees them: each segment's base offset (raised to
// the log start offset) with its time, then, when the active segment holds
// a batch, the log end offset with now. Kafka's time of a segment is its
// file's mtime; here an inactive segment's is its largest record
// timestamp (-1 when it has none), the time retention goes by, and the
// active segment's is now, since it is the one being written. A log that
// does not list its segments counts as one active segment.
func (p *Partition) SegmentTimes(now int64) []OffsetTime {
	log := p.Log()
	var inactive []engine.SegmentInfo
	if c, ok := log.(engine.Compactable); ok {
		inactive = c.InactiveSegments()
	}
	start, end := log.StartOffset(), log.EndOffset()
	out := make([]OffsetTime, 0, len(inactive)+2)
	for _, seg := range inactive {
		out = append(out, OffsetTime{max(seg.Base, start), seg.LargestTimestamp})
	}
	activeBase := start
	if n := len(inactive); n > 0 {
		activeBase = max(inactive[n-1].Next, start)
	}
	out = append(out, OffsetTime{activeBase, now})
	if end > activeBase {
		out = append(out, OffsetTime{end, now})
	}
	return out
}

// Topic is a published, immutable snapshot of one topic: a change
// (configs, partitions) publishes a new snapshot sharing the partitions.
// Read its fields, never modify them.
type Topic struct {
	Name   string
	ID     [16]byte
	Meta   metastore.Topic // as stored; Configs holds the overrides
	Config TopicConfig
	// Parts has one slot per partition; in cluster mode a partition with
	// no replica here is nil.
	Parts []*Partition
	// epochs caches the partitions' leader epochs on a single node (nil:
	// none, as in cluster mode). Snapshots copied from this one share it.
	epochs *epochCache
}

// LeaderEpochs returns the leader epochs of t's partitions (0 for a slot
// with no replica here). The slice is shared: read it, never modify it.
// On a single node it is read once per set of partitions (loading them
// from every partition costs a cache miss each, ~3 ms at 100,000
// partitions, half a Metadata request); in cluster mode, each time.
func (t *Topic) LeaderEpochs() []int32 { return t.epochs.get(t) }

// epochCache holds a single-node topic's leader epochs. Safe for
// concurrent use.
type epochCache struct {
	e atomic.Pointer[epochEntry]
}

// epochEntry is one read of the epochs, immutable once stored.
type epochEntry struct {
	// parts is the topic's partition slice it was built from: a topic
	// snapshot with other partitions (CreatePartitions) differs in length
	// or backing array. Snapshots copied from one another share an
	// epochCache, so this is checked, not assumed.
	parts  []*Partition
	epochs []int32
}

// get returns the leader epochs of t's partitions, reading them again
// when t's partitions changed since they were read. A nil cache reads
// them each time.
func (c *epochCache) get(t *Topic) []int32 {
	if c != nil {
		if e := c.e.Load(); e != nil && e.valid(t) {
			return e.epochs
		}
	}
	e := &epochEntry{parts: t.Parts, epochs: make([]int32, len(t.Parts))}
	for i, p := range t.Parts {
		if p != nil {
			e.epochs[i] = p.LeaderEpoch()
		}
	}
	if c != nil {
		c.e.Store(e)
	}
	return e.epochs
}

// valid reports whether e still describes t: the same partitions. Their
// leader epochs are not compared: on a single node a partition's epoch is
// fixed when it is opened (only LeaderAndIsr changes it, which a single
// node does not serve).
func (e *epochEntry) valid(t *Topic) bool {
	return len(e.parts) == len(t.Parts) && (len(t.Parts) == 0 || &e.parts[0] == &t.Parts[0])
}

// registry is the set of live topics. Lookups take mu for reading;
// changes are serialized by admin (held across the metastore write and the
// log changes) and publish with mu held for writing.
type registry struct {
	admin  sync.Mutex
	mu     sync.RWMutex
	byName map[string]*Topic
	byID   map[[16]byte]*Topic
	// sorted is every topic by name, built by all on first use after a
	// change; nil: to build. Never modified once built.
	sorted []*Topic
}

func (r *registry) init() {
	r.byName = map[string]*Topic{}
	r.byID = map[[16]byte]*Topic{}
}

func (r *registry) get(name string) *Topic {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

func (r *registry) getID(id [16]byte) *Topic {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byID[id]
}

// all returns the topics sorted by name. The slice is shared by every
// caller until the next change: read it, never modify it. Sorting 100,000
// names per Metadata request was most of its cost at that many topics.
func (r *registry) all() []*Topic {
	r.mu.RLock()
	ts := r.sorted
	r.mu.RUnlock()
	if ts != nil {
		return ts
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sorted == nil {
		ts := slices.Collect(maps.Values(r.byName))
		slices.SortFunc(ts, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
		r.sorted = ts
	}
	return r.sorted
}

// eachName calls fn with the name of every topic, in no order, until fn
// returns false, with r.mu held for reading: fn must not call back into r.
// Unlike all it neither copies nor sorts, so a check per created topic
// costs no garbage (all is rebuilt after every creation).
func (r *registry) eachName(fn func(name string) bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for name := range r.byName {
		if !fn(name) {
			return
		}
	}
}

// publish installs t (replacing a topic of the same name).
func (r *registry) publish(t *Topic) {
	r.mu.Lock()
	r.byName[t.Name] = t
	r.byID[t.ID] = t
	r.sorted = nil
	r.mu.Unlock()
}

func (r *registry) remove(t *Topic) {
	r.mu.Lock()
	delete(r.byName, t.Name)
	delete(r.byID, t.ID)
	r.sorted = nil
	r.mu.Unlock()
}

// TopicView returns a topic snapshot with len(epochs) partition slots and
// no partition opened behind them, whose LeaderEpochs answers epochs: what
// a Metadata encoder reads of a single node's topic, for tests and fuzz
// targets of such encoders (server's FuzzMetadataEncoding).
func TopicView(name string, id [16]byte, epochs []int32) *Topic {
	t := &Topic{Name: name, ID: id, Parts: make([]*Partition, len(epochs)), epochs: new(epochCache)}
	t.epochs.e.Store(&epochEntry{parts: t.Parts, epochs: epochs})
	return t
}
