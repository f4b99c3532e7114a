package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice/sluice/engine"
)

// The log start offset of a tiered log (KIP-405).
//
// Kafka's UnifiedLog has two starts: logStartOffset, the first offset a
// client may read, and localLogStartOffset, the first one on local disk.
// They differ on a tiered topic, whose oldest segments live only in the
// remote tier. log-start-offset-checkpoint holds the first: Kafka's
// LogManager writes logStartOffset for every log with remote storage, and
// its LogLoader takes the local start as the greater of it and the first
// segment's base offset.
//
// A Log keeps the same pair: start (StartOffset, the local start) and
// logStart (LogStartOffset), which is -1 unless the log's owner set it
// below start (DeleteLocalBefore, which moves only the local start and
// keeps the log start below it; RaiseLogStartOffset raises it;
// TruncateFullyAndStartAtWithLogStart restarts the log with one;
// CopyLogStartOffset copies it to a log moving to another dir). The
// checkpoint holds LogStartOffset, so a value below the first segment's
// base on load is the log start of a tiered log and is kept
// (loadLogStart). Everything that moves the log start itself
// (DeleteBefore, retention, a restart) sets logStart back to -1: a log
// whose owner never sets it, every log not tiered, checkpoints and loads
// exactly as before. Only a tiered log (engine.LogConfig.RemoteStorage,
// Kafka's remoteLogEnabled) keeps a checkpointed value below its first
// base on load, as Kafka's LogLoader does; any other log takes the
// greater of the two (a value below the first base there is left by a
// crash between a deletion and its checkpoint), and a log whose topic
// turns tiering off moves its log start to its local start (SetConfig).
// A log dir written by an older build, which checkpointed the local start
// of every log, is migrated once on open (migrateLogStarts).
//
// A tiered log loaded without an entry in the checkpoint (none, or a
// damaged file, which the store ignores) whose first segment is not at 0
// has an
// unknown log start (logStartUnknown): LogStartOffset answers the local
// start, as before, but the owner of a tiered log is told
// (LogStartUnknown) and settles it (ResolveLogStartOffset) from what the
// remote tier holds, so that a lost checkpoint never makes remote records
// look deleted (Kafka's LogManager reads a damaged checkpoint as empty and
// a tiered log's start as 0 then, raised by the remote log manager). A
// raise settles it too; so does anything that moves the log start.
//
// Invariant: logStart is -1, logStartUnknown, or below start
// (LogStartOffset reads the lesser, so a racing reader never sees it above
// start).

// logStartUnknown is Log.logStart of a log loaded with no checkpointed
// log start.
const logStartUnknown = -2

// LogStartOffset returns the log start offset (Kafka's logStartOffset):
// StartOffset, or below it on a tiered log whose first records are
// remote. Safe for concurrent use.
func (l *Log) LogStartOffset() int64 {
	s := l.start.Load()
	if ls := l.logStart.Load(); ls >= 0 && ls < s {
		return ls
	}
	return s
}

// RaiseLogStartOffset raises the log start offset to offset when that is
// above it (never lowers it). Below StartOffset it stays below (records
// kept elsewhere: a tiered log's remote segments); at or above, the log
// start is StartOffset again (DeleteBefore moves that). It writes
// log-start-offset-checkpoint when the value changed, before returning.
// Callers: DeleteRecords and remote retention on a leader, a follower
// taking its leader's.
func (l *Log) RaiseLogStartOffset(offset int64) error {
	l.appendMu.Lock()
	if l.closed.Load() {
		l.appendMu.Unlock()
		return errClosedLog
	}
	if err := l.failure(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	start := l.start.Load()
	ls := l.logStart.Load()
	if ls == -1 || (ls >= 0 && offset <= ls) || offset < 0 {
		// At the local start already, or not raised. An unknown one
		// (logStartUnknown) is taken as 0: any raise settles it.
		l.appendMu.Unlock()
		return nil
	}
	if offset >= start {
		offset = -1
	}
	l.logStart.Store(offset)
	l.appendMu.Unlock()
	return l.store.checkpointStartOffsets()
}

// DeleteLocalBefore is DeleteBefore that moves only the local start
// (Kafka's maybeIncrementLocalLogStartOffset, a tiered log's local
// retention): the log start offset stays where it was, below the new
// StartOffset, and is checkpointed with it.
func (l *Log) DeleteLocalBefore(offset int64) error { return l.deleteBefore(offset, true) }

// checkpointedLogStart is what log-start-offset-checkpoint holds for the
// log: LogStartOffset, -1 (no entry) when it is unknown, so that a
// checkpoint written before the owner settles it does not turn it into
// the local start.
func (l *Log) checkpointedLogStart() int64 {
	if l.LogStartUnknown() {
		return -1
	}
	return l.LogStartOffset()
}

// LogStartUnknown reports whether the log was loaded without a
// checkpointed log start and nothing settled it since (see the top of
// this file): the owner of a tiered log settles it with
// ResolveLogStartOffset.
func (l *Log) LogStartUnknown() bool { return l.logStart.Load() == logStartUnknown }

// ResolveLogStartOffset settles an unknown log start at offset (below
// StartOffset: the first record the remote tier holds) and checkpoints
// it; a known log start is left as it is.
func (l *Log) ResolveLogStartOffset(offset int64) error {
	if !l.LogStartUnknown() {
		return nil
	}
	return l.RaiseLogStartOffset(offset)
}

// moveLogStartLocked is called as the local start moves up: the log start
// moves with it, unless only the local start moves (local), which keeps
// it below (an unknown one stays unknown). REQUIRES: appendMu.
func (l *Log) moveLogStartLocked(local bool) {
	if !local {
		l.logStart.Store(-1)
	} else if l.logStart.Load() == -1 {
		l.logStart.Store(l.start.Load())
	}
}

// loadLogStart takes the checkpointed log start offset ck (ok: there was
// one) of a log just loaded. Of a tiered log: below the local start it is
// the log start (the local start is then the first segment's base);
// without one, the log start is unknown unless the log starts at 0. Of
// any other log the log start is the local start, as the store computed
// it (the greater of ck and the first base).
// REQUIRES: l not yet shared.
func (l *Log) loadLogStart(ck int64, ok bool) {
	if !l.cfg.Get().RemoteStorage {
		return // not tiered: the local start, max(ck, first base)
	}
	switch start := l.start.Load(); {
	case !ok && start > 0:
		l.logStart.Store(logStartUnknown)
	case ok && ck >= 0 && ck < start:
		l.logStart.Store(ck)
	}
}

// untierLogStartLocked moves the log start to the local start when the
// log is not tiered (anymore): a log start below it, or an unknown one,
// is a tiered log's (a topic turning tiering off deletes its remote
// data). It reports whether it moved, for the caller to checkpoint.
// REQUIRES: appendMu.
func (l *Log) untierLogStartLocked() bool {
	if l.cfg.Get().RemoteStorage || l.logStart.Load() == -1 {
		return false
	}
	l.logStart.Store(-1)
	return true
}

// TruncateFullyAndStartAtWithLogStart is TruncateFullyAndStartAt with the
// log start offset set to logStart, below offset (a follower rebuilt from
// the remote tier takes its leader's: Kafka's
// truncateFullyAndStartAt(newOffset, Some(leaderLogStartOffset))), in the
// same log-start-offset-checkpoint write; logStart < 0 or at or above
// offset: the log start is offset.
func (l *Log) TruncateFullyAndStartAtWithLogStart(offset, logStart int64) error {
	l.appendMu.Lock()
	err := l.truncateFullyLocked(offset)
	if err == nil && logStart >= 0 && logStart < offset {
		l.logStart.Store(logStart)
	}
	l.appendMu.Unlock()
	if err != nil {
		return err
	}
	if err := l.store.checkpointStartOffsets(); err != nil {
		return err
	}
	// The recovery point moved (see Truncate).
	return l.store.checkpointRecoveryPoints()
}

// CopyLogStartOffset gives l the log start offset of src, the log it is a
// copy of (a replica moving to another log dir, Kafka's future log): kept
// below l's local start as src keeps it below its own, unknown if src's
// is; a log of another backend, or none below, leaves l's log start at
// its local start. It writes log-start-offset-checkpoint when the value
// changed. Unlike RaiseLogStartOffset it may lower it: the copy restarts
// and deletes as src's local log did, which drops it (DeleteBefore).
func (l *Log) CopyLogStartOffset(src engine.Log) error {
	want := int64(-1)
	if s, ok := src.(*Log); ok {
		want = s.logStart.Load()
	}
	l.appendMu.Lock()
	if l.closed.Load() {
		l.appendMu.Unlock()
		return errClosedLog
	}
	if err := l.failure(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	if want >= l.start.Load() {
		want = -1
	}
	changed := l.logStart.Swap(want) != want
	l.appendMu.Unlock()
	if !changed {
		return nil
	}
	return l.store.checkpointStartOffsets()
}

// migrateLogStarts reads a log-start-offset-checkpoint written by a build
// before logStartMarkerFile existed, which held every log's local start
// (StartOffset), tiered or not: an entry at or below the log's first
// segment base says nothing about the records a tiered log keeps in the
// remote tier, so it is dropped and the log loads with an unknown log
// start, which the remote log manager settles at the first remote offset
// (those builds never kept a log start below the local start, so that is
// what the entry meant). A log not tiered loads at its first base as
// before. An entry above the first base is a log start that DeleteRecords
// moved and is kept. The rewritten checkpoint is durable before the
// marker is written, so a crash in between repeats the migration, which
// drops nothing more; a dir with the marker (or a new one) is never
// migrated. REQUIRES: in Open, before any log loads.
func (s *Store) migrateLogStarts() error {
	marker := filepath.Join(s.dir, logStartMarkerFile)
	if _, err := os.Stat(marker); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("segment: %w", err)
	}
	dropped := 0
	for id, ck := range s.startOffsets {
		if base, ok := firstSegmentBase(s.logDir(id)); ok && ck <= base {
			delete(s.startOffsets, id)
			dropped++
		}
	}
	if dropped > 0 {
		s.log.Info("segment: log-start-offset-checkpoint of an older build: local starts dropped, tiered logs settle their log start from the remote tier",
			"dir", s.dir, "logs", dropped)
		if err := writeOffsetCheckpoint(filepath.Join(s.dir, logStartOffsetFile), s.startOffsets); err != nil {
			return err
		}
	}
	return writeFileAtomic(marker, nil)
}

// firstSegmentBase returns the least base offset of the .log files in
// dir; ok is false when there is none (or no dir).
func firstSegmentBase(dir string) (base int64, ok bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		stem, isLog := strings.CutSuffix(e.Name(), logSuffix)
		if !isLog || e.IsDir() {
			continue
		}
		if b, err := parseSegmentName(stem); err == nil && (!ok || b < base) {
			base, ok = b, true
		}
	}
	return base, ok
}
