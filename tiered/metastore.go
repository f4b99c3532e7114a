package tiered

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sluice/sluice/metastore"
)

// checkpoints is the part of the metastore the metadata lives in (named
// checkpoints, each rewritten whole and synced by a put).
type checkpoints interface {
	PutCheckpoint(name string, value []byte) error
	GetCheckpoint(name string) ([]byte, error)
}

// indexKey names the list of partitions that have remote metadata, so that
// a topic deleted while the broker was down is found and its remote
// segments deleted.
const indexKey = "tiered/partitions"

func partitionKey(tp TopicIDPartition) string {
	return fmt.Sprintf("tiered/%s/%d", tp.TopicID, tp.Partition)
}

// metadataStore is Kafka's RemoteLogMetadataManager on a single node: each
// partition's segments in one metastore value, rewritten whole on every
// change (a partition has one record per remote segment), cached in
// memory. Safe for concurrent use.
type metadataStore struct {
	kv    checkpoints
	mu    sync.Mutex
	parts map[TopicIDPartition]*partMeta
	index map[TopicIDPartition]bool // nil until loaded
}

type partMeta struct {
	// segs are by StartOffset, then the order they were added; replaced
	// whole on every change, never modified in place, so a reader may keep
	// the slice it got.
	segs []SegmentMetadata
	err  error // the stored value did not decode
	// finished summarizes segs' COPY_SEGMENT_FINISHED segments, computed
	// on first use after each change (nil: not yet).
	finished *remoteState
}

func newMetadataStore(kv checkpoints) *metadataStore {
	return &metadataStore{kv: kv, parts: map[TopicIDPartition]*partMeta{}}
}

// loadLocked returns tp's metadata, reading it on first use. A value that
// does not decode is remembered as its error: every later call fails the
// same way until the partition's metadata is replaced.
// REQUIRES: s.mu held.
func (s *metadataStore) loadLocked(tp TopicIDPartition) *partMeta {
	if pm := s.parts[tp]; pm != nil {
		return pm
	}
	pm := &partMeta{}
	v, err := s.kv.GetCheckpoint(partitionKey(tp))
	switch {
	case errors.Is(err, metastore.ErrNotFound), err == nil && len(v) == 0:
	case err != nil:
		pm.err = fmt.Errorf("tiered: read metadata of %s: %w", tp, err)
	default:
		got, segs, err := decodePartition(v)
		switch {
		case err != nil:
			pm.err = fmt.Errorf("tiered: metadata of %s: %w", tp, err)
		case got != tp:
			pm.err = fmt.Errorf("tiered: metadata of %s: %w: names %s", tp, ErrCorruptMetadata, got)
		default:
			pm.segs = segs
		}
	}
	s.parts[tp] = pm
	return pm
}

// Segments returns tp's segments in every state, by start offset; the
// slice is the caller's. A damaged record gives an error wrapping
// ErrCorruptMetadata.
func (s *metadataStore) Segments(tp TopicIDPartition) ([]SegmentMetadata, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pm := s.loadLocked(tp)
	if pm.err != nil {
		return nil, pm.err
	}
	return slices.Clone(pm.segs), nil
}

// Add records a new segment, which must be COPY_SEGMENT_STARTED (Kafka's
// addRemoteLogSegmentMetadata), durably before it returns.
func (s *metadataStore) Add(md SegmentMetadata) error {
	if md.State != CopySegmentStarted {
		return fmt.Errorf("tiered: add segment %s in state %s", md.SegmentID, md.State)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.indexLocked(md.Partition, true); err != nil {
		return err
	}
	pm := s.loadLocked(md.Partition)
	if pm.err != nil {
		return pm.err
	}
	segs := append(slices.Clone(pm.segs), md)
	slices.SortStableFunc(segs, func(a, b SegmentMetadata) int { return cmpInt64(a.StartOffset, b.StartOffset) })
	return s.putLocked(md.Partition, pm, segs)
}

// Update moves segment id of tp to state at eventMs (Kafka's
// updateRemoteLogSegmentMetadata), durably before it returns. An invalid
// transition is an error and changes nothing. DELETE_SEGMENT_FINISHED
// drops the segment's record.
func (s *metadataStore) Update(tp TopicIDPartition, id UUID, state State, eventMs int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pm := s.loadLocked(tp)
	if pm.err != nil {
		return pm.err
	}
	i := slices.IndexFunc(pm.segs, func(m SegmentMetadata) bool { return m.SegmentID == id })
	if i < 0 {
		return fmt.Errorf("tiered: %s: no remote segment %s", tp, id)
	}
	if !pm.segs[i].State.validNext(state) {
		return fmt.Errorf("tiered: %s: segment %s cannot go from %s to %s", tp, id, pm.segs[i].State, state)
	}
	segs := slices.Clone(pm.segs)
	if state == DeleteSegmentFinished {
		segs = slices.Delete(segs, i, i+1)
	} else {
		segs[i].State, segs[i].EventTimestamp = state, eventMs
	}
	return s.putLocked(tp, pm, segs)
}

// Forget drops tp's metadata once all its remote segments are deleted.
func (s *metadataStore) Forget(tp TopicIDPartition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.kv.PutCheckpoint(partitionKey(tp), nil); err != nil {
		return fmt.Errorf("tiered: forget %s: %w", tp, err)
	}
	delete(s.parts, tp)
	return s.indexLocked(tp, false)
}

// Partitions lists every partition with remote metadata.
func (s *metadataStore) Partitions() ([]TopicIDPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadIndexLocked(); err != nil {
		return nil, err
	}
	out := make([]TopicIDPartition, 0, len(s.index))
	for tp := range s.index {
		out = append(out, tp)
	}
	return out, nil
}

// REQUIRES: s.mu held.
func (s *metadataStore) putLocked(tp TopicIDPartition, pm *partMeta, segs []SegmentMetadata) error {
	if err := s.kv.PutCheckpoint(partitionKey(tp), encodePartition(nil, tp, segs)); err != nil {
		return fmt.Errorf("tiered: write metadata of %s: %w", tp, err)
	}
	pm.segs, pm.finished = segs, nil
	return nil
}

// Finished returns the summary of tp's finished segments, shared and
// read-only, without copying (the fetch path calls it for every read of
// a tiered partition).
func (s *metadataStore) Finished(tp TopicIDPartition) (*remoteState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pm := s.loadLocked(tp)
	if pm.err != nil {
		return nil, pm.err
	}
	if pm.finished == nil {
		pm.finished = summarize(pm.segs)
	}
	return pm.finished, nil
}

// indexLocked adds tp to (or removes it from) the partition index.
// REQUIRES: s.mu held.
func (s *metadataStore) indexLocked(tp TopicIDPartition, add bool) error {
	if err := s.loadIndexLocked(); err != nil {
		return err
	}
	if s.index[tp] == add {
		return nil
	}
	next := make(map[TopicIDPartition]bool, len(s.index)+1)
	for k := range s.index {
		next[k] = true
	}
	if add {
		next[tp] = true
	} else {
		delete(next, tp)
	}
	var v []byte
	be := binary.BigEndian
	v = be.AppendUint32(v, uint32(len(next)))
	for k := range next {
		v = append(v, k.TopicID[:]...)
		v = be.AppendUint32(v, uint32(k.Partition))
		v = be.AppendUint16(v, uint16(len(k.Topic)))
		v = append(v, k.Topic...)
	}
	if err := s.kv.PutCheckpoint(indexKey, v); err != nil {
		return fmt.Errorf("tiered: write partition index: %w", err)
	}
	s.index = next
	return nil
}

// Index format (checkpoint "tiered/partitions"), big-endian: count int32,
// then per partition topic id [16], partition int32, name length int16,
// name. Part of the on-disk format: do not change.
//
// REQUIRES: s.mu held.
func (s *metadataStore) loadIndexLocked() error {
	if s.index != nil {
		return nil
	}
	v, err := s.kv.GetCheckpoint(indexKey)
	if err != nil && !errors.Is(err, metastore.ErrNotFound) {
		return fmt.Errorf("tiered: read partition index: %w", err)
	}
	idx, err := decodeIndex(v)
	if err != nil {
		return err
	}
	s.index = idx
	return nil
}

func decodeIndex(v []byte) (map[TopicIDPartition]bool, error) {
	be := binary.BigEndian
	idx := map[TopicIDPartition]bool{}
	if len(v) == 0 {
		return idx, nil
	}
	if len(v) < 4 {
		return nil, fmt.Errorf("%w: partition index of %d bytes", ErrCorruptMetadata, len(v))
	}
	n := int(be.Uint32(v))
	v = v[4:]
	for i := 0; i < n; i++ {
		if len(v) < 22 {
			return nil, fmt.Errorf("%w: partition index entry %d: %d bytes left", ErrCorruptMetadata, i, len(v))
		}
		var tp TopicIDPartition
		copy(tp.TopicID[:], v)
		tp.Partition = int32(be.Uint32(v[16:]))
		l := int(be.Uint16(v[20:]))
		if len(v) < 22+l {
			return nil, fmt.Errorf("%w: partition index entry %d: name of %d bytes", ErrCorruptMetadata, i, l)
		}
		tp.Topic = string(v[22 : 22+l])
		v = v[22+l:]
		idx[tp] = true
	}
	if len(v) != 0 {
		return nil, fmt.Errorf("%w: partition index: %d trailing bytes", ErrCorruptMetadata, len(v))
	}
	return idx, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
