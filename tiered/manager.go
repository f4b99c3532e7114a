package tiered

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/replica"
)

// Options configure a Manager.
type Options struct {
	Config config.Config // remote.log.*, log.local.retention.*, rsm.config.*
	Meta   checkpoints   // the metastore: where the metadata lives
	RM     *replica.Manager
	// RSM is the remote storage; nil: the local-directory backend at
	// rsm.config.dir.
	RSM RemoteStorageManager
	// Metadata is the cluster's topic-based remote log metadata
	// (topicmeta.go); nil: a single node's, in Meta. With it the Manager
	// runs in cluster mode: only a partition's leader copies and applies
	// remote retention, followers apply local retention to what is
	// remote, and deleted topics are found through StopReplica
	// (TopicDeleted), not by a sweep of the metadata.
	Metadata *TopicMetadata
	Logger   *slog.Logger     // nil: slog.Default()
	Now      func() time.Time // nil: time.Now
}

// Manager is Kafka's RemoteLogManager on a single node: the copy task,
// local and remote retention, remote deletion and the remote reads. Safe
// for concurrent use; the task runs on one goroutine (Start).
type Manager struct {
	cfg  config.Config
	meta metadataManager
	// topicMeta is Options.Metadata (cluster mode), nil on a single node.
	topicMeta *TopicMetadata
	rsm       RemoteStorageManager
	rm        *replica.Manager
	log       *slog.Logger
	now       func() time.Time

	// taskMu serializes task runs and topic deletions: a segment found
	// COPY_SEGMENT_STARTED at the start of a run is a leftover.
	taskMu   sync.Mutex
	copyRate *rate
	// copyPaid is what the copy rate granted to a copy that waited for
	// it with taskMu released (copyTurn): the next copy uses it.
	// Guarded by taskMu.
	copyPaid int64
	// stopped is closed by Start's stop: a copy waiting for the rate
	// gives up at once.
	stopped  chan struct{}
	stopOnce sync.Once
	reader   reader
	retry    *backoff // per-partition backoff of failing store calls (retry.go)
	// disabled holds the partitions of topics with remote storage off
	// and remote.log.delete.on.disable whose remote deletion finished,
	// each with the leader epoch it finished in: the task does not run
	// it again while this broker stays their leader (only a leader of a
	// tiered partition copies, so nothing remote can appear meanwhile)
	// and the topic is not tiered again. Without it every run deleted
	// every such partition again, each listing every partition of the
	// remote log metadata. REQUIRES: taskMu.
	disabled map[TopicIDPartition]int32
	metrics  *remoteMetrics // Kafka's RemoteLogManager metrics (metrics.go)
}

// New returns a Manager, or an error when the remote storage cannot be
// opened.
func New(opts Options) (*Manager, error) {
	m := &Manager{cfg: opts.Config, rm: opts.RM, rsm: opts.RSM, log: opts.Logger, now: opts.Now}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.rsm == nil {
		ld, err := NewLocalDir(opts.Config.RemoteStorageDir())
		if err != nil {
			return nil, err
		}
		m.rsm = ld
	}
	if opts.Metadata != nil {
		m.meta, m.topicMeta = opts.Metadata, opts.Metadata
	} else {
		m.meta = newMetadataStore(opts.Meta)
	}
	m.copyRate = newRate(opts.Config.RemoteLogCopyMaxBytesPerSec)
	m.stopped = make(chan struct{})
	m.retry = newBackoff(opts.Config.RemoteLogManagerTaskInterval)
	m.metrics = newRemoteMetrics()
	m.reader.init(m, &opts.Config)
	return m, nil
}

// Start runs the task every remote.log.manager.task.interval.ms until the
// returned stop is called.
func (m *Manager) Start() (stop func() error, err error) {
	if m.topicMeta != nil {
		m.topicMeta.Start()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(m.cfg.RemoteLogManagerTaskInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				m.RunOnce()
			}
		}
	}()
	return func() error {
		close(done)
		m.stopOnce.Do(func() { close(m.stopped) })
		var err error
		if m.topicMeta != nil {
			// First: a run waiting on a metadata write fails at once
			// instead of at its timeout.
			err = m.topicMeta.Close()
		}
		wg.Wait()
		return err
	}, nil
}

// metadataManager is Kafka's RemoteLogMetadataManager as the Manager uses
// it: the metastore's on a single node (metastore.go), the topic-based
// one in a cluster (topicmeta.go). Both are safe for concurrent use.
type metadataManager interface {
	// Segments returns a partition's segments in every state, by start
	// offset; the slice is the caller's.
	Segments(tp TopicIDPartition) ([]SegmentMetadata, error)
	// Finished summarizes its COPY_SEGMENT_FINISHED segments; shared
	// and read-only.
	Finished(tp TopicIDPartition) (*remoteState, error)
	// Add records a new COPY_SEGMENT_STARTED segment durably.
	Add(md SegmentMetadata) error
	// Update moves a segment to state durably; DELETE_SEGMENT_FINISHED
	// drops it.
	Update(tp TopicIDPartition, id UUID, state State, eventMs int64) error
	// Forget drops a partition's metadata once its segments are deleted.
	Forget(tp TopicIDPartition) error
	// Partitions lists the partitions with metadata.
	Partitions() ([]TopicIDPartition, error)
}

// Tiering is a topic's tiered-storage config, effective.
type Tiering struct {
	Enable, CopyDisable, DeleteOnDisable bool
	// Local is the topic's log config with retention.* replaced by
	// local.retention.* (-2 resolved to retention.*).
	Local engine.LogConfig
}

// TopicTiering returns the tiering of t on this broker (off when
// remote.log.storage.system.enable is).
func (m *Manager) TopicTiering(t *replica.Topic) Tiering {
	return TieringOf(&m.cfg, t.Meta.Configs, t.Config.Log)
}

// TieringOf resolves the tiered-storage keys of a topic with overrides on
// a broker configured by c; log is the topic's parsed log config.
func TieringOf(c *config.Config, overrides map[string]string, log engine.LogConfig) Tiering {
	var tg Tiering
	tg.Enable = c.RemoteLogStorageSystemEnable && overrides["remote.storage.enable"] == "true"
	tg.CopyDisable = overrides["remote.log.copy.disable"] == "true"
	tg.DeleteOnDisable = overrides["remote.log.delete.on.disable"] == "true"
	tg.Local = log
	if tg.CopyDisable {
		// Nothing more is copied: local retention is the topic's
		// retention.* (Kafka's UnifiedLog with remote copy disabled;
		// LogConfig refuses other local.retention.*).
		return tg
	}
	num := func(key string, def int64) int64 {
		if v, ok := overrides[key]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n
			}
		}
		return def
	}
	switch ms := num("local.retention.ms", c.LogLocalRetentionMs); {
	case ms == -2:
	case ms < 0:
		tg.Local.RetentionMs = -1
	case ms == 0:
		tg.Local.RetentionMs = time.Nanosecond
	default:
		tg.Local.RetentionMs = time.Duration(ms) * time.Millisecond
	}
	switch b := num("local.retention.bytes", c.LogLocalRetentionBytes); {
	case b == -2:
	case b < 0:
		tg.Local.RetentionBytes = -1
	default:
		tg.Local.RetentionBytes = b
	}
	// Local retention never keeps more than the whole log's.
	if tg.Local.RetentionMs < 0 || (log.RetentionMs >= 0 && tg.Local.RetentionMs > log.RetentionMs) {
		tg.Local.RetentionMs = log.RetentionMs
	}
	if tg.Local.RetentionBytes < 0 || (log.RetentionBytes >= 0 && tg.Local.RetentionBytes > log.RetentionBytes) {
		tg.Local.RetentionBytes = log.RetentionBytes
	}
	return tg
}

// OwnsRetention reports whether retention of t is the remote log
// manager's (the replica manager then leaves t alone).
func (m *Manager) OwnsRetention(t *replica.Topic) bool { return m.TopicTiering(t).Enable }

func (m *Manager) partitionOf(t *replica.Topic, i int32) TopicIDPartition {
	return TopicIDPartition{TopicID: t.ID, Topic: t.Name, Partition: i}
}

// RunOnce runs the task once over every partition: leftovers of crashed
// copies and deletions are cleaned, rolled segments below the high
// watermark copied, local retention and then remote retention applied,
// and the remote segments of deleted topics removed. Errors are logged;
// the next run retries.
func (m *Manager) RunOnce() {
	m.taskMu.Lock()
	defer m.taskMu.Unlock()
	for _, t := range m.rm.Topics() {
		tg := m.TopicTiering(t)
		for i, p := range t.Parts {
			if p == nil {
				continue
			}
			if m.isStopped() {
				return
			}
			tp := m.partitionOf(t, int32(i))
			follower := m.topicMeta != nil && !p.IsLeader()
			if tg.Enable && len(m.disabled) > 0 {
				delete(m.disabled, tp) // tiered again: a later disable deletes again
			}
			switch {
			case tg.Enable && follower:
				// Only the leader copies and expires remote segments;
				// a follower keeps locally what is not remote yet.
				if err := m.localRetention(tp, p, tg); err != nil && !errors.Is(err, engine.ErrClosed) && !errors.Is(err, ErrMetadataNotReady) {
					m.log.Error("tiered: follower's local retention failed", "partition", tp.String(), "err", err)
				}
			case follower:
			case tg.Enable:
				if err := m.runPartition(tp, p, tg); err != nil && !errors.Is(err, engine.ErrClosed) && !errors.Is(err, ErrMetadataNotReady) {
					m.log.Error("tiered: task failed", "partition", tp.String(), "err", err)
				}
			case tg.DeleteOnDisable:
				m.deleteOnDisable(tp, p)
			}
		}
	}
	if m.topicMeta == nil {
		// In a cluster, rm holds only this broker's replicas: a topic
		// it does not host is not a deleted one.
		m.sweepDeleted()
	}
}

// deleteOnDisable deletes the remote segments of partition tp of a topic
// with remote storage off and remote.log.delete.on.disable (Kafka's
// RemoteLogManager on disablement), once per leadership (disabled).
// REQUIRES: taskMu held.
func (m *Manager) deleteOnDisable(tp TopicIDPartition, p *replica.Partition) {
	epoch := p.LeaderEpoch()
	if e, ok := m.disabled[tp]; ok && e == epoch {
		return
	}
	if err := m.deletePartition(tp); err != nil {
		m.log.Error("tiered: delete on disable failed", "partition", tp.String(), "err", err)
		return
	}
	if err := p.RaiseLogStart(p.LogStartOffset()); err != nil {
		// Nothing is remote any more: the log start is the local one
		// again.
		m.log.Error("tiered: resetting the log start on disable failed", "partition", tp.String(), "err", err)
		return
	}
	if m.disabled == nil {
		m.disabled = map[TopicIDPartition]int32{}
	}
	m.disabled[tp] = epoch
}

func (m *Manager) runPartition(tp TopicIDPartition, p *replica.Partition, tg Tiering) error {
	if !m.retry.ready(tp) {
		// The store failed lately: only local retention of what is
		// remote already until the backoff is over (retry.go).
		return m.localRetention(tp, p, tg)
	}
	if err := m.cleanLeftovers(tp); err != nil {
		m.retry.done(tp, err)
		return err
	}
	var copyErr error
	if !tg.CopyDisable {
		if copyErr = m.copySegments(tp, p); errors.Is(copyErr, errStopping) {
			return nil
		} else if copyErr != nil {
			m.log.Warn("tiered: copy failed, retried with backoff", "partition", tp.String(), "err", copyErr, "retry_in", m.retry.done(tp, copyErr))
		}
	}
	if err := m.localRetention(tp, p, tg); err != nil {
		return err
	}
	err := m.remoteRetention(tp, p, tg)
	if copyErr == nil {
		m.retry.done(tp, err)
		if err == nil && m.retry.takeSweep(tp) {
			err = m.deleteOrphans(tp, false) // what copies that timed out left (retry.go)
		}
	}
	return err
}

// cleanLeftovers deletes segments left COPY_SEGMENT_STARTED or
// DELETE_SEGMENT_STARTED by a crash or a failed step: never trusted, their
// objects removed, their records dropped. REQUIRES: taskMu held.
func (m *Manager) cleanLeftovers(tp TopicIDPartition) error {
	segs, err := m.meta.Segments(tp)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if s.State == CopySegmentStarted || s.State == DeleteSegmentStarted {
			m.log.Info("tiered: cleaning up an unfinished remote segment", "partition", tp.String(), "segment", s.SegmentID.String(), "state", s.State.String(), "start_offset", s.StartOffset)
			if err := m.deleteSegment(s); err != nil {
				return err
			}
			if s.State == CopySegmentStarted {
				m.retry.markSweep(tp)
			}
		}
	}
	return nil
}

// deleteSegment deletes one remote segment: DELETE_SEGMENT_STARTED,
// objects removed, DELETE_SEGMENT_FINISHED (the record dropped).
func (m *Manager) deleteSegment(s SegmentMetadata) error {
	if s.State != DeleteSegmentStarted {
		if err := m.meta.Update(s.Partition, s.SegmentID, DeleteSegmentStarted, m.now().UnixMilli()); err != nil {
			return err
		}
	}
	if err := m.rsm.DeleteLogSegmentData(s); err != nil {
		return err
	}
	m.reader.forget(s.SegmentID)
	return m.meta.Update(s.Partition, s.SegmentID, DeleteSegmentFinished, m.now().UnixMilli())
}

// remoteState summarizes a partition's finished remote segments: start is
// the first one's start offset, end the last one's end offset + 1 (both
// -1 when there is none), bytes their total size.
type remoteState struct {
	start, end, bytes int64
	segs              []SegmentMetadata // COPY_SEGMENT_FINISHED only, by start offset; read-only
}

func (m *Manager) remote(tp TopicIDPartition) (remoteState, error) {
	rs, err := m.meta.Finished(tp)
	if err != nil {
		return remoteState{}, err
	}
	return *rs, nil
}

// summarize computes the remoteState of a partition's segments.
func summarize(all []SegmentMetadata) *remoteState {
	rs := &remoteState{start: -1, end: -1}
	for _, s := range all {
		if s.State != CopySegmentFinished {
			continue
		}
		if rs.start < 0 {
			rs.start = s.StartOffset
		}
		rs.end = max(rs.end, s.EndOffset+1)
		rs.bytes += s.SizeInBytes
		rs.segs = append(rs.segs, s)
	}
	return rs
}

// copySegments copies every rolled segment past what is remote whose
// offsets all lie below the high watermark and the last stable offset
// (Kafka's candidateLogSegments), oldest first, stopping at the first
// failure. REQUIRES: taskMu held.
func (m *Manager) copySegments(tp TopicIDPartition, p *replica.Partition) error {
	for {
		again, err := m.copySegmentsOnce(tp, p)
		if err != nil || !again {
			return err
		}
	}
}

// copySegmentsOnce is copySegments until a copy waits for the copy rate
// with taskMu released (again: the partition is looked at anew).
func (m *Manager) copySegmentsOnce(tp TopicIDPartition, p *replica.Partition) (again bool, err error) {
	log := p.Log()
	c, ok := log.(engine.Compactable)
	if !ok {
		return false, fmt.Errorf("tiered: %s: the log's backend does not list segments", tp)
	}
	rs, err := m.remote(tp)
	if err != nil {
		return false, err
	}
	bound := min(p.HighWatermark(), p.LastStableOffset())
	dir := filepath.Join(m.rm.LogDirOf(tp.Topic, tp.Partition), fmt.Sprintf("%s-%d", tp.Topic, tp.Partition))
	segs := c.InactiveSegments()
	defer func() { m.metrics.setLag(tp, copyLagOf(segs, bound, rs.end)) }()
	for _, seg := range segs {
		if seg.Next > bound {
			break
		}
		if seg.Next-1 < rs.end || seg.End == seg.Base {
			continue // remote already, or no batch
		}
		if rs.end >= 0 && seg.Base != rs.end {
			// A hole between what is remote and this segment (records
			// deleted locally before they were copied): copy from here on.
			m.log.Warn("tiered: gap before a segment to copy", "partition", tp.String(), "remote_end", rs.end, "segment", seg.Base)
		}
		if m.topicMeta != nil && !p.IsLeader() {
			return false, nil // leadership moved: the new leader continues
		}
		if err := m.copySegment(tp, p, dir, seg); err != nil {
			if errors.Is(err, errCopyRelocked) {
				// taskMu was released while the copy waited for the
				// rate: the topic may be gone, retention may have run.
				return m.rm == nil || m.rm.TopicByID(tp.TopicID) != nil, nil
			}
			return false, err
		}
		rs.end = seg.Next
	}
	return false, nil
}

func newUUID() UUID {
	var u UUID
	rand.Read(u[:])
	return u
}

func offsetFile(dir string, off int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", off, suffix))
}

// existing returns path when it names a non-empty file, else "".
func existing(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return path
	}
	return ""
}

func (m *Manager) copySegment(tp TopicIDPartition, p *replica.Partition, dir string, seg engine.SegmentInfo) error {
	log := p.Log()
	leaderEpoch := p.LeaderEpoch()
	epochs := log.LeaderEpochs()
	if err := ensureProducerSnapshot(p, seg.Next); err != nil {
		return fmt.Errorf("tiered: producer snapshot at %d of %s: %w", seg.Next, tp, err)
	}
	md := SegmentMetadata{
		Partition:      tp,
		SegmentID:      newUUID(),
		StartOffset:    seg.Base,
		EndOffset:      seg.Next - 1,
		MaxTimestamp:   seg.LargestTimestamp,
		EventTimestamp: m.now().UnixMilli(),
		BrokerID:       m.cfg.BrokerID,
		LeaderEpochs:   segmentEpochs(epochs, seg.Base, seg.Next),
		SizeInBytes:    seg.Bytes,
		State:          CopySegmentStarted,
	}
	data := LogSegmentData{
		Log:              offsetFile(dir, seg.Base, ".log"),
		LogBytes:         seg.Bytes,
		OffsetIndex:      offsetFile(dir, seg.Base, ".index"),
		TimeIndex:        offsetFile(dir, seg.Base, ".timeindex"),
		TxnIndex:         existing(offsetFile(dir, seg.Base, ".txnindex")),
		ProducerSnapshot: existing(offsetFile(dir, seg.Next, ".snapshot")),
		LeaderEpochs:     epochCheckpoint(epochs, seg.Next),
	}
	md.TxnIndexEmpty = data.TxnIndex == ""
	for _, f := range []*string{&data.OffsetIndex, &data.TimeIndex} {
		if _, err := os.Stat(*f); errors.Is(err, fs.ErrNotExist) {
			*f = "" // written empty: the reader scans the log instead
		}
	}
	if err := m.copyTurn(seg.Bytes); err != nil {
		return err
	}
	// Add answers once the metadata holds the COPY_SEGMENT_STARTED
	// record: a record the topic-based view refused is an error here,
	// before anything is uploaded (topicmeta.go, write).
	if err := m.meta.Add(md); err != nil {
		return err
	}
	err := m.rsm.CopyLogSegmentData(md, data)
	m.metrics.copied(tp.Topic, seg.Bytes, err)
	if err != nil {
		if derr := m.deleteSegment(md); derr != nil {
			m.log.Warn("tiered: cleaning a failed copy failed, retried next run", "partition", tp.String(), "err", derr)
		}
		return fmt.Errorf("tiered: copy segment %d of %s: %w", seg.Base, tp, err)
	}
	if m.topicMeta != nil && (!p.IsLeader() || p.LeaderEpoch() != leaderEpoch) {
		// Deposed while copying (Kafka's copy task is fenced by the
		// leader epoch): the segment is not recorded; its objects go and
		// the new leader cleans the COPY_SEGMENT_STARTED record up as a
		// leftover and copies the segment itself.
		if derr := m.rsm.DeleteLogSegmentData(md); derr != nil {
			m.log.Warn("tiered: removing the objects of a deposed leader's copy failed", "partition", tp.String(), "segment", md.SegmentID.String(), "err", derr)
		}
		return fmt.Errorf("tiered: copy segment %d of %s: leader epoch %d is no longer this broker's (now %d, leader %v)", seg.Base, tp, leaderEpoch, p.LeaderEpoch(), p.IsLeader())
	}
	if err := m.meta.Update(tp, md.SegmentID, CopySegmentFinished, m.now().UnixMilli()); err != nil {
		// In a cluster a new leader may have cleaned this copy up as a
		// leftover meanwhile: its objects go, so none is orphaned.
		if derr := m.rsm.DeleteLogSegmentData(md); derr != nil {
			m.log.Warn("tiered: removing the objects of an unrecorded copy failed", "partition", tp.String(), "segment", md.SegmentID.String(), "err", derr)
		}
		return err
	}
	m.log.Debug("tiered: copied segment", "partition", tp.String(), "start_offset", md.StartOffset, "end_offset", md.EndOffset, "bytes", md.SizeInBytes)
	return nil
}

// segmentEpochs are the epochs of entries in effect in [base, next), the
// first one starting at base.
func segmentEpochs(entries []engine.EpochEntry, base, next int64) []engine.EpochEntry {
	var out []engine.EpochEntry
	for i, e := range entries {
		if e.StartOffset >= next {
			break
		}
		if i+1 < len(entries) && entries[i+1].StartOffset <= base {
			continue
		}
		out = append(out, engine.EpochEntry{Epoch: e.Epoch, StartOffset: max(e.StartOffset, base)})
	}
	return out
}

// epochCheckpoint renders the epochs that start before next in Kafka's
// leader-epoch-checkpoint text format: version 0, the count, then "epoch
// offset" lines.
func epochCheckpoint(entries []engine.EpochEntry, next int64) []byte {
	var lines []string
	for _, e := range entries {
		if e.StartOffset < next {
			lines = append(lines, fmt.Sprintf("%d %d", e.Epoch, e.StartOffset))
		}
	}
	return []byte(fmt.Sprintf("0\n%d\n", len(lines)) + strings.Join(append(lines, ""), "\n"))
}

// localRetention deletes the oldest local segments that local.retention.*
// lets go, but only those wholly remote; with remote.log.copy.disable
// (nothing more is copied) those below the high watermark, as Kafka's
// UnifiedLog does when remote copy is disabled. REQUIRES: taskMu held.
func (m *Manager) localRetention(tp TopicIDPartition, p *replica.Partition, tg Tiering) error {
	log := p.Log()
	c, ok := log.(engine.Compactable)
	if !ok {
		return nil
	}
	end := p.HighWatermark()
	if !tg.CopyDisable {
		rs, err := m.remote(tp)
		if err != nil || rs.end < 0 {
			return err
		}
		end = rs.end
		// Settles a log start the log lost (read.go).
		if _, err := logStartOf(p, &rs); err != nil {
			return err
		}
	}
	segs := c.InactiveSegments()
	var inactive int64
	for _, s := range segs {
		inactive += s.Bytes
	}
	active := max(log.Size()-inactive, 0)
	k := engine.RetentionCut(tg.Local, m.now(), len(segs)+1, func(i int) (int64, int64) {
		if i == len(segs) {
			return m.now().UnixMilli(), active
		}
		ts := segs[i].LargestTimestamp
		if ts < 0 {
			ts = m.now().UnixMilli() // no timestamp: kept by time
		}
		return ts, segs[i].Bytes
	})
	for k > 0 && segs[k-1].Next > end {
		k-- // not remote yet (or above the high watermark)
	}
	if k == 0 {
		return nil
	}
	cut := segs[k-1].Next
	if cut <= log.StartOffset() {
		return nil
	}
	// Only the local start moves: the log start stays where it is,
	// below, on every replica (Kafka's maybeIncrementLocalLogStartOffset).
	// With copy disabled this is the whole log's retention and the log
	// start moves too (Kafka's incrementStartOffset then).
	del := p.DeleteLocalBefore
	if tg.CopyDisable {
		del = log.DeleteBefore
	}
	if err := del(cut); err != nil {
		return fmt.Errorf("tiered: local retention of %s: %w", tp, err)
	}
	m.log.Info("tiered: local retention deleted remote segments' local copies", "partition", tp.String(), "local_log_start_offset", cut)
	return nil
}

// remoteRetention deletes the oldest remote segments wholly below the log
// start offset (DeleteRecords) or past the topic's retention.ms (their
// largest timestamp) or retention.bytes (remote and local-only bytes
// together), as Kafka's RLMExpirationTask, raising the log start past each
// first (Kafka's handleLogStartOffsetUpdate), so that no fetch reads a
// segment being deleted and the followers learn the new start.
// REQUIRES: taskMu held.
func (m *Manager) remoteRetention(tp TopicIDPartition, p *replica.Partition, tg Tiering) error {
	rs, err := m.remote(tp)
	if err != nil || len(rs.segs) == 0 {
		return err
	}
	cfg := p.Log()
	total := rs.bytes + localOnlyBytes(cfg, rs.end)
	retMs := m.rmTopicRetention(tp)
	logStart, err := logStartOf(p, &rs) // read.go
	if err != nil {
		return err
	}
	for _, s := range rs.segs {
		byTime := retMs.RetentionMs >= 0 && s.MaxTimestamp >= 0 && s.MaxTimestamp < m.now().UnixMilli()-retMs.RetentionMs.Milliseconds()
		bySize := retMs.RetentionBytes >= 0 && total-s.SizeInBytes >= retMs.RetentionBytes
		// Wholly below the log start (Kafka's
		// isSegmentBreachByLogStartOffset).
		byStart := s.EndOffset+1 <= logStart
		if !byStart && (!retMs.DeletePolicy() || (!byTime && !bySize)) {
			break
		}
		if err := p.RaiseLogStart(s.EndOffset + 1); err != nil {
			return err
		}
		if err := m.deleteSegment(s); err != nil {
			return err
		}
		total -= s.SizeInBytes
		// The local copy goes too, when there still is one.
		if s.EndOffset+1 > cfg.StartOffset() {
			if err := cfg.DeleteBefore(s.EndOffset + 1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Manager) rmTopicRetention(tp TopicIDPartition) engine.LogConfig {
	if t := m.rm.Topic(tp.Topic); t != nil {
		return t.Config.Log
	}
	return engine.LogConfig{RetentionMs: -1, RetentionBytes: -1, Delete: true}
}

// localOnlyBytes is the size of the local segments from remoteEnd on.
func localOnlyBytes(log engine.Log, remoteEnd int64) int64 {
	c, ok := log.(engine.Compactable)
	if !ok {
		return log.Size()
	}
	total := log.Size()
	for _, s := range c.InactiveSegments() {
		if s.Next <= remoteEnd {
			total -= s.Bytes
		}
	}
	return max(total, 0)
}

// deletePartition deletes every remote segment of tp and its metadata.
func (m *Manager) deletePartition(tp TopicIDPartition) error {
	segs, err := m.meta.Segments(tp)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if err := m.deleteSegment(s); err != nil {
			return err
		}
	}
	if len(segs) == 0 {
		parts, err := m.meta.Partitions()
		if err != nil {
			return err
		}
		found := false
		for _, p := range parts {
			found = found || p == tp
		}
		if !found {
			return nil
		}
	}
	if err := m.deleteOrphans(tp, true); err != nil {
		return err
	}
	return m.meta.Forget(tp)
}

// TopicDeleted deletes the remote segments of a deleted topic (its
// partitions named by id). A failure is logged; the task's sweep finishes
// it, also after a restart.
func (m *Manager) TopicDeleted(id [16]byte, name string, partitions int) {
	m.taskMu.Lock()
	defer m.taskMu.Unlock()
	m.metrics.topicDeleted(id, name)
	for i := 0; i < partitions; i++ {
		tp := TopicIDPartition{TopicID: id, Topic: name, Partition: int32(i)}
		m.retry.forget(tp)
		delete(m.disabled, tp)
		if err := m.deletePartition(tp); err != nil {
			m.log.Error("tiered: deleting a deleted topic's remote segments failed, retried by the next run", "partition", tp.String(), "err", err)
		}
	}
}

// PartitionDeleted deletes the remote segments of one partition of a
// deleted topic (in a cluster, on StopReplica with delete). A failure is
// logged.
//
// While the metadata loads or the storage fails it tries again, a few
// times over about a minute: in a cluster no sweep finds the partition
// later (this broker no longer hosts it).
func (m *Manager) PartitionDeleted(id [16]byte, name string, partition int32) {
	tp := TopicIDPartition{TopicID: id, Topic: name, Partition: partition}
	// The topic is being deleted: its series and this partition's
	// backoff go, as in TopicDeleted.
	m.metrics.topicDeleted(id, name)
	m.retry.forget(tp)
	var err error
	for try, wait := 0, time.Second; try < 6; try, wait = try+1, 2*wait {
		m.taskMu.Lock()
		delete(m.disabled, tp)
		err = m.deletePartition(tp)
		m.taskMu.Unlock()
		if err == nil || (!errors.Is(err, ErrMetadataNotReady) && !errors.Is(err, ErrRemoteStorage)) {
			break
		}
		if !m.sleepUnlessStopped(wait) {
			break // shutting down: StopReplica's deletion ends with the broker
		}
	}
	if err != nil {
		m.log.Error("tiered: deleting a deleted topic's remote segments failed", "partition", tp.String(), "err", err)
	}
}

// sweepDeleted deletes the remote segments of partitions whose topic no
// longer exists (deleted while a deletion failed or the broker was down).
// REQUIRES: taskMu held.
func (m *Manager) sweepDeleted() {
	parts, err := m.meta.Partitions()
	if err != nil {
		m.log.Error("tiered: reading the partition index failed", "err", err)
		return
	}
	for _, tp := range parts {
		if t := m.rm.TopicByID(tp.TopicID); t != nil {
			continue
		}
		if err := m.deletePartition(tp); err != nil {
			m.log.Error("tiered: deleting a deleted topic's remote segments failed", "partition", tp.String(), "err", err)
		}
	}
}

// errCopyRelocked: a copy waited for the copy rate with taskMu released
// (copyTurn); the caller looks at the partition again before copying.
var errCopyRelocked = errors.New("tiered: copy waited for the rate")

// errStopping: the manager is stopping (Start's stop).
var errStopping = errors.New("tiered: remote log manager stopping")

func (m *Manager) isStopped() bool {
	select {
	case <-m.stopped:
		return true
	default:
		return false
	}
}

// copyTurn takes n bytes of remote.log.manager.copy.max.bytes.per.second.
// When they do not fit yet it waits with taskMu released, so that topic
// deletions, retention and shutdown never wait for the quota (Kafka's
// quota blocks only its copier threads), and returns errCopyRelocked (the
// bytes stay paid for the next copy), or errStopping at once when the
// manager stops. REQUIRES: taskMu held; held again on return.
func (m *Manager) copyTurn(n int64) error {
	if m.copyPaid >= n {
		m.copyPaid -= n
		return nil
	}
	d := m.copyRate.reserve(n - m.copyPaid)
	m.copyPaid = 0
	if d <= 0 {
		return nil
	}
	m.copyPaid = n
	m.taskMu.Unlock()
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-m.stopped:
	}
	t.Stop()
	m.taskMu.Lock()
	if m.isStopped() {
		return errStopping
	}
	return errCopyRelocked
}

// rate paces copies and remote reads to a number of bytes per second (<= 0 or MaxInt64:
// no bound).
type rate struct {
	perSec int64
	mu     sync.Mutex
	next   time.Time
}

func newRate(perSec int64) *rate { return &rate{perSec: perSec} }

func (r *rate) unbounded() bool { return r.perSec <= 0 || r.perSec >= 1<<62 }

// throttled reports whether bytes taken so far exceed the rate now (a
// new use has to wait).
func (r *rate) throttled() bool {
	if r.unbounded() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next.After(time.Now())
}

// reserve takes n bytes and returns how long to wait before using them.
func (r *rate) reserve(n int64) time.Duration {
	if r.unbounded() {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.next.Before(now) {
		r.next = now
	}
	d := r.next.Sub(now)
	r.next = r.next.Add(time.Duration(float64(n) / float64(r.perSec) * float64(time.Second)))
	return d
}

// ensureProducerSnapshot writes the producer snapshot at next (the end of
// a segment to copy) when the log has none there: replication snapshots
// at the log end after a roll, not at the roll itself as Kafka does, and
// the remote segment needs the state at its end (a follower that rebuilds
// from it restores that).
func ensureProducerSnapshot(p *replica.Partition, next int64) error {
	ss, ok := p.Log().(engine.SnapshotStore)
	if !ok {
		return nil
	}
	if off, _, ok, err := ss.LatestSnapshot(next); err != nil || (ok && off == next) {
		return err
	}
	data, err := p.ProducerSnapshotAt(next)
	if err != nil {
		return err
	}
	return ss.SaveSnapshot(next, data)
}
