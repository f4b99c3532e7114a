package segment

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
// TruncateFullyAndStartAtWithLogStart restarts the log with one). The
// checkpoint holds LogStartOffset, so a value below
// the first segment's base on load is the log start of a tiered log and
// is kept (loadLogStart). Everything that moves the log start itself
// (DeleteBefore, retention, a restart) sets logStart back to -1: a log
// whose owner never sets it, every log not tiered, checkpoints and loads
// exactly as before. A value below the first base left by a crash between
// a deletion and its checkpoint is taken as a log start too; the next
// move of the start drops it.
//
// Invariant: logStart is -1 or below start (LogStartOffset reads the
// lesser, so a racing reader never sees it above start).

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
	if ls < 0 || offset <= ls {
		// At the local start already, or not raised.
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

// moveLogStartLocked is called as the local start moves up: the log start
// moves with it, unless only the local start moves (local), which keeps
// it below. REQUIRES: appendMu.
func (l *Log) moveLogStartLocked(local bool) {
	if !local {
		l.logStart.Store(-1)
	} else if l.logStart.Load() < 0 {
		l.logStart.Store(l.start.Load())
	}
}

// loadLogStart takes the checkpointed log start offset ck of a log just
// loaded: below the local start it is a tiered log's log start (the local
// start is then the first segment's base). REQUIRES: l not yet shared.
func (l *Log) loadLogStart(ck int64) {
	if ck >= 0 && ck < l.start.Load() {
		l.logStart.Store(ck)
	}
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
