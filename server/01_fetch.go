package server

// Fetch (key 1), served v4-v16 (record format v2 only).
//
//	v4: isolation level; last stable offset and aborted transactions
//	v5: log start offset
//	v7: fetch sessions (KIP-227)
//	v9: current leader epoch per partition (KIP-320)
//	v11: rack id; preferred read replica
//	v12: flexible; diverging epoch and current leader tags
//	v13: topic ids instead of names (KIP-516)
//	v15: replica state replaces replica id
//	v16: node endpoints (KIP-951)
//
// Sessions (KIP-227, fetch_session.go): a full fetch with session epoch 0
// may create a session; an incremental one names only what changed, is
// read over the session's partitions but the quiet ones (nothing new since
// the last answer, checked without reading them) and answered with only
// the partitions that have something to say.
//
// Consumers and followers: a Fetch whose replica id is a broker id comes
// from a follower (cluster mode). Only the leader serves either. A
// consumer reads below the high watermark; a follower reads up to the log
// end, and its fetch offset is its progress, from which the leader moves
// the ISR and the high watermark (replication.Partition.HandleReplicaFetch).
// So a follower fetch is checked before it is served: on a single node
// every partition is CLUSTER_AUTHORIZATION_FAILED; in a cluster it must
// carry the broker epoch of the replica's current registration (v15+
// ReplicaState, as Sluice's followers send it; else STALE_BROKER_EPOCH),
// and the replica id must be one of the partition's
// replicas (UNKNOWN_LEADER_EPOCH, or NOT_LEADER_OR_FOLLOWER without a
// current leader epoch, as Kafka answers).
//
// Limits (KIP-74): at most max_bytes in all and partition_max_bytes per
// partition, except that the first batch of the first non-empty partition
// is returned whole even when larger, so a consumer always progresses.
//
// Empty batches: a compacted log keeps some batches with no record left
// (an active producer's last batch, a cleaning round's last; Kafka's
// RETAIN_EMPTY), and a read returns one segment's batches only, so a
// consumer fetch at such a batch at the end of its segment got that batch
// alone. librdkafka (2.0.2) does not step over a response holding only
// empty batches ("Message at offset N might be too large to fetch") and
// asks for the same offset again for good. A consumer fetch whose batches
// all hold no record returns what follows them instead (afterEmpty), when
// anything does; followers always get them (their producer state needs
// them).
//
// Long poll: when fewer than min_bytes are available and no partition has
// an error, the request parks in the purgatory (purgatory.go) for up to
// max_wait_ms: one wake-up registered with each partition it reads, which
// appends and high-watermark moves credit with the bytes they made
// readable, so it reads again once min_bytes can be met (or a partition was
// truncated, changed leader or closed). No polling loop and no per-wake
// allocation, however many partitions; server shutdown or the client going
// away end the wait early with whatever is available.
//
// read_committed (isolation_level 1) reads below the last stable offset
// (replication.Partition.LastStableOffset: no open or unreplicated
// transaction below it) and answers the aborted transactions overlapping
// [fetch offset, LSO) from the log's aborted-transaction index, which the
// client uses to drop aborted records (control batches are never data to
// it). Such a fetch parks on the LSO, not the high watermark: a marker that
// ends a transaction wakes it.
//
// The response is encoded by package fetchresp straight into the
// connection's zerocopy.Writer: record bytes from the segment backend go to
// the socket with sendfile and are never copied through user space.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/quota"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/zerocopy"
)

// fetchTarget is one partition of a fetch request, resolved.
type fetchTarget struct {
	p           *replica.Partition // nil when err is set
	offset      int64
	maxBytes    int32
	leaderEpoch int32
	err         error
	// replica: a follower's fetch, which waits for the log end to move
	// rather than the high watermark. committed: a read_committed
	// consumer's, which reads and waits for the last stable offset.
	replica, committed bool
	// throttled: a follower's fetch of a partition that the topic's
	// leader.replication.throttled.replicas names for this broker
	// (replquota.go).
	throttled bool
	watch     replication.Watch // the fetch's registration with p (purgatory.go)
	// logStart: the log start offset a follower sent (-1 for consumers),
	// for the partition's low watermark (21_delete_records.go).
	logStart int64
	// read: the last fill read p for a consumer, having loaded gen
	// (p.WakeGen()) and starts (engine.StartMoves()) first: what an
	// incremental session needs to leave p out next time (quiet,
	// fetch_session.go).
	read        bool
	gen, starts uint64
}

// resolvedTopic is a topic of a fetch request, resolved once (t nil or err
// set when it failed).
type resolvedTopic struct {
	t   *replica.Topic
	err error
	// quietStats is the topic's metrics handle, when an incremental
	// session left partitions of it out of the read (quiet).
	quietStats *metrics.Topic
}

// target resolves rp, a partition of the topic, into ft for a consumer
// (replicaID < 0, reading at isolation) or the follower replicaID, which
// followerErr refused if set.
func (rs *resolvedTopic) target(s *Server, ft *fetchTarget, rp *kmsg.FetchRequestTopicPartition, followerErr error, replicaID int32, isolation int8) {
	*ft = fetchTarget{offset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, leaderEpoch: rp.CurrentLeaderEpoch, logStart: rp.LogStartOffset}
	t := rs.t
	switch {
	case followerErr != nil:
		ft.err = followerErr
	case rs.err != nil:
		ft.err = rs.err
	case rp.Partition < 0 || int(rp.Partition) >= len(t.Parts):
		ft.err = errUnknownTopicOrPartition
	case t.Parts[rp.Partition] == nil && s.rm.Offline(t.Name, rp.Partition) != nil:
		ft.err = s.rm.Offline(t.Name, rp.Partition) // its log dir failed
	case t.Parts[rp.Partition] == nil || !t.Parts[rp.Partition].IsLeader():
		// Cluster mode: no replica here, or a follower.
		ft.err = replication.ErrNotLeader
	case replicaID >= 0:
		// A follower: HandleReplicaFetch checks that it is one of
		// the partition's replicas, and its leader epoch. It
		// waits for the log end, not the high watermark, to move.
		ft.p, ft.replica = t.Parts[rp.Partition], true
		ft.throttled = s.repl.leader.Throttled(t.Name, t.Meta.Configs[config.LeaderThrottledReplicas], rp.Partition)
	default:
		ft.p, ft.committed = t.Parts[rp.Partition], isolation == 1
		ft.err = checkLeaderEpoch(ft.p, rp.CurrentLeaderEpoch)
	}
}

func handleFetch(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.FetchRequest)
	out := &fetchresp.Response{}
	version := r.Version
	replicaID, replicaEpoch := fetchReplica(r)
	if s.metrics != nil && rc != nil {
		// Kafka records a Fetch also as FetchConsumer or FetchFollower.
		rc.also = s.metrics.FetchRequest(replicaID >= 0)
	}
	var followerErr error
	if replicaID >= 0 {
		if !s.az.allowedCluster(rc, acl.OpClusterAction) {
			// Kafka's handleFetchRequest answers every partition of a
			// follower fetch without ClusterAction so.
			followerErr = errTopicAuthorization
		} else {
			followerErr = errClusterOnly // a single node has no followers
			if s.ib != nil {
				followerErr = s.ib.checkFollower(replicaID, replicaEpoch)
			}
			if followerErr != nil {
				s.log.Warn("server: refused follower fetch", "replica", replicaID, "replica_epoch", replicaEpoch, "client_id", rc.clientID, "err", followerErr)
			}
		}
	}
	// Only a checked follower's session is privileged in the cache.
	session := s.fetchSessions.begin(r, replicaID >= 0 && followerErr == nil, s.now())
	if session.errCode != 0 {
		out.ErrorCode = session.errCode
		s.metrics.Request(apiKeyFetch).Error(out.ErrorCode)
		return fetchResponse(version, out), nil
	}

	// Resolve every partition once; the topics' layout does not change
	// while we wait (a deleted topic's partitions close, which ends the
	// wait and makes its reads fail).
	targets := make([][]fetchTarget, len(r.Topics))
	out.Topics = make([]fetchresp.Topic, len(r.Topics))
	topics := make([]resolvedTopic, len(r.Topics))
	resolve := func(i, from int) {
		rt, rs := &r.Topics[i], &topics[i]
		ot := &out.Topics[i]
		ot.Partitions = slices.Grow(ot.Partitions, len(rt.Partitions)-from)[:len(rt.Partitions)]
		targets[i] = slices.Grow(targets[i], len(rt.Partitions)-from)[:len(rt.Partitions)]
		for j := from; j < len(rt.Partitions); j++ {
			rs.target(s, &targets[i][j], &rt.Partitions[j], followerErr, replicaID, r.IsolationLevel)
			ot.Partitions[j].Partition = rt.Partitions[j].Partition
		}
	}
	for i := range r.Topics {
		rt := &r.Topics[i]
		var tid [16]byte
		if version >= 13 {
			tid = rt.TopicID
		}
		t, terr := s.lookup.resolveTopic(rt.Topic, tid)
		ot := &out.Topics[i]
		ot.Name, ot.ID = rt.Topic, rt.TopicID
		if t != nil {
			ot.Name, ot.ID = t.Name, t.ID
			if followerErr == nil && replicaID < 0 && !s.az.allowedTopic(rc, acl.OpRead, t.Name) {
				terr = errTopicAuthorization
			}
		}
		topics[i].t, topics[i].err = t, terr
		// Quiet partitions of an incremental session (fetch_session.go)
		// are left out while the topic still serves them as when they
		// went quiet; a failed topic answers them all.
		if session.quietLeft > 0 {
			session.wake(i, func(sp *sessionPartition) bool {
				keep := followerErr == nil && terr == nil && int(sp.key.partition) < len(t.Parts) && t.Parts[sp.key.partition] == sp.part
				if keep {
					topics[i].quietStats = t.Parts[sp.key.partition].Stats
				}
				return keep
			})
		}
		resolve(i, 0)
	}
	// wakeQuiet brings every quiet partition into the fetch, before it
	// waits: they are what the wait is for.
	var wakeQuiet func() bool
	if session.quietLeft > 0 {
		wakeQuiet = func() bool {
			added := false
			for i := range r.Topics {
				from := len(r.Topics[i].Partitions)
				if session.wake(i, nil) > 0 {
					resolve(i, from)
					added = true
				}
			}
			return added
		}
	}

	maxBytes := int64(r.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = math.MaxInt32
	}
	quotaOn := s.quotas.Enabled() && rc != nil
	if quotaOn && replicaID >= 0 {
		rc.quotaExempt, quotaOn = true, false // followers are not client traffic
	}
	if rc != nil {
		rc.fetchOut = out
	}
	if quotaOn {
		// Kafka's getMaxValueInQuotaWindow: never more than a quota
		// window's worth, which would throttle for sure.
		if qmax := s.quotas.MaxFetchBytes(rc.quotaIDs()); qmax > 0 {
			maxBytes = min(maxBytes, max(qmax, 1))
		}
	}
	s.longPoll(rc, targets, r.MaxWaitMillis, r.MinBytes, out, func() (int64, bool) {
		return s.fillFetch(out, targets, maxBytes, r.IsolationLevel, replicaID)
	}, wakeQuiet)
	if replicaID >= 0 {
		recordLeaderThrottled(s.repl.leader, targets, out)
	}
	if s.metrics != nil {
		countFetch(s.metrics.Request(apiKeyFetch), targets, out, replicaID >= 0)
		for i, q := range session.quiet {
			if len(q) > 0 {
				// Kafka reads every partition of a session: count the
				// quiet ones as read, with nothing.
				topics[i].quietStats.FetchedNothing(int64(len(q)))
			}
		}
	}
	s.fetchSessions.finish(&session, out, targets, s.now())
	if quotaOn {
		throttleFetch(s, rc, out)
	}
	return fetchResponse(version, out), nil
}

// fetchReplica returns the replica id of a Fetch (a broker id for a
// follower, negative for a consumer) and the broker epoch it carries (-1:
// none): v0-v14 ReplicaID, v15+ ReplicaState (KIP-903).
func fetchReplica(r *kmsg.FetchRequest) (int32, int64) {
	if r.Version >= 15 {
		return r.ReplicaState.ID, r.ReplicaState.Epoch
	}
	return r.ReplicaID, -1
}

// longPoll answers a fetch (consumer or follower): it calls fill, and while
// fewer than minBytes came back and no partition failed, it parks in the
// purgatory (purgatory.go) until enough bytes became readable on the
// targets' partitions (below the high watermark, or the log end for a
// replica fetch), one of them was truncated, changed leader or closed,
// maxWaitMs passed, the server shut down or the client went away; then it
// fills again. After a timeout or shutdown it fills one last time. The
// partitions' state is noted before the first read, so a change between the
// read and the wait still wakes it. Every registration is gone when it
// returns.
//
// widen, when not nil, adds to the targets partitions that fill left out
// as having nothing new (an incremental session's quiet ones) and reports
// whether it did: longPoll calls it before it would wait, then reads and
// waits on them all.
func (s *Server) longPoll(rc *reqCtx, targets [][]fetchTarget, maxWaitMs, minBytes int32, out *fetchresp.Response, fill func() (total int64, hasErr bool), widen func() bool) {
	deadline := time.Now().Add(time.Duration(maxWaitMs) * time.Millisecond)
	if widen != nil {
		total, hasErr := fill()
		if total >= int64(minBytes) || hasErr || maxWaitMs <= 0 || !widen() {
			return
		}
	}
	if maxWaitMs <= 0 {
		fill()
		return
	}
	pf := parkedFetches.Get().(*parkedFetch)
	defer pf.release(targets)
	if pf.prepare(targets) == 0 {
		fill() // nothing to wait for
		return
	}
	srvClosing, connDone := rc.closing(s)
	for {
		pf.w.Reset()
		total, hasErr := fill()
		if total >= int64(minBytes) || hasErr {
			return
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return
		}
		if !pf.park(targets, int64(minBytes)-total) {
			continue
		}
		releaseFetch(out)
		pf.timer.Reset(wait)
		s.parked.Add(1)
		var parkedAt time.Time
		if s.metrics != nil || s.quotas.Enabled() { // remote time is not request_percentage time
			parkedAt = time.Now()
		}
		select {
		case <-pf.w.C():
			s.parked.Add(-1)
			pf.timer.Stop()
			rc.addRemoteSince(parkedAt)
			continue
		case <-pf.timer.C:
		case <-srvClosing:
		case <-connDone:
		}
		s.parked.Add(-1)
		rc.addRemoteSince(parkedAt)
		// Timer fired, server closing or client gone: one last read.
		fill()
		return
	}
}

// fillFetch reads every target into out (releasing what out held before)
// for a consumer (replicaID < 0) or the follower replicaID, and returns the
// record bytes gathered and whether to answer now: a partition failed, or
// a remote read did not complete within remote.fetch.max.wait.ms (the
// purgatory is not woken when it completes: the client's next fetch gets
// it).
func (s *Server) fillFetch(out *fetchresp.Response, targets [][]fetchTarget, maxBytes int64, isolation int8, replicaID int32) (total int64, hasErr bool) {
	releaseFetch(out)
	remaining := maxBytes
	now := s.now()
	// Kafka's shouldLeaderThrottle, checked once per read of the
	// request: the rate is only recorded when the response is sent.
	leaderExceeded := replicaID >= 0 && s.repl.leader.Exceeded()
	var remote remoteFill         // one remote-tier read per fill, as Kafka; one in progress answers now (tiered.go)
	starts := engine.StartMoves() // before any log start offset is read
	for i := range targets {
		for j := range targets[i] {
			ft := &targets[i][j]
			op := &out.Topics[i].Partitions[j]
			part := op.Partition
			*op = fetchresp.Partition{Partition: part, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1, PreferredReadReplica: -1}
			if isolation == 1 {
				op.AbortedTransactions = []fetchresp.AbortedTransaction{}
			}
			err := ft.err
			if err == nil && replicaID >= 0 {
				var held bool
				held, err = readReplica(ft, op, &remaining, total == 0, replicaID, now, leaderExceeded && ft.throttled)
				err = s.movedToTiered(ft, err) // tierfollow.go
				if held {
					s.repl.leader.NoteSkipped(1)
				}
			} else if err == nil {
				ft.read, ft.gen, ft.starts = true, ft.p.WakeGen(), starts
				err = readPartition(ft, op, &remaining, total == 0)
				if s.tiered != nil && (err == nil || errors.Is(err, engine.ErrOffsetOutOfRange)) {
					err = s.fetchTiered(ft, op, &remaining, total == 0, err, &remote)
				}
			}
			if err != nil {
				hasErr = true
				op.ErrorCode = errorCode(err)
				if (op.ErrorCode == kerr.UnknownServerError.Code || op.ErrorCode == kerr.KafkaStorageError.Code) && !errors.Is(err, replica.ErrLogDirOffline) {
					s.log.Error("server: fetch failed", "topic", out.Topics[i].Name, "partition", part, "replica", replicaID, "err", err)
					s.rm.ReportStorageError(ft.p, err) // an I/O error takes the log dir offline
				}
				continue
			}
			total += op.Records.Len()
		}
	}
	return total, hasErr || remote.pending
}

// readPartition reads one partition for a consumer, below the high
// watermark (read_uncommitted) or the last stable offset (read_committed,
// with the aborted transactions). first: nothing gathered yet, so the first
// batch may exceed the limits (KIP-74).
//
// Leadership and the leader epoch were checked when the request was
// resolved, but a parked fetch fills again after a leadership change (the
// purgatory wakes it), so they are checked again on every fill: a
// partition no longer led here, or led in a newer epoch than the client's,
// answers its error at once rather than reading as a follower and parking
// until max_wait (Kafka's DelayedFetch completes on the same conditions).
func readPartition(ft *fetchTarget, op *fetchresp.Partition, remaining *int64, first bool) error {
	p := ft.p
	if !p.IsLeader() {
		return replication.ErrNotLeader
	}
	if err := checkLeaderEpoch(p, ft.leaderEpoch); err != nil {
		return err
	}
	// The LSO first: it never passes the HW, so the pair stays ordered.
	op.LastStableOffset = p.LastStableOffset()
	op.HighWatermark = p.HighWatermark()
	op.LogStartOffset = p.LogStartOffset()
	if ft.offset < op.LogStartOffset || ft.offset > p.LogEndOffset() {
		return fmt.Errorf("%w: offset %d not in [%d, %d]", engine.ErrOffsetOutOfRange, ft.offset, op.LogStartOffset, p.LogEndOffset())
	}
	limit := min(int64(ft.maxBytes), *remaining)
	if limit <= 0 && !first {
		return nil
	}
	if !ft.committed {
		read := func(from int64) (zerocopy.Slice, error) { return p.Read(from, int(max(limit, 1))) }
		sl, err := read(ft.offset)
		if err != nil {
			return err
		}
		keepRecords(op, afterEmpty(sl, read), limit, remaining, first)
		return nil
	}
	// read_committed: below the LSO read above, so that the aborted
	// transactions answered cover every record returned.
	read := func(from int64) (zerocopy.Slice, error) {
		return p.ReadBelow(from, int(max(limit, 1)), op.LastStableOffset)
	}
	sl, err := read(ft.offset)
	if err != nil {
		return err
	}
	sl = afterEmpty(sl, read)
	if sl.Len() == 0 {
		sl.Release()
		return nil
	}
	aborted, err := p.AbortedTransactions(ft.offset, op.LastStableOffset)
	if err != nil {
		sl.Release()
		return err
	}
	if !keepRecords(op, sl, limit, remaining, first) {
		return nil
	}
	for _, a := range aborted {
		op.AbortedTransactions = append(op.AbortedTransactions, fetchresp.AbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
	}
	return nil
}

// emptyRunMax bounds the run of empty batches afterEmpty looks into (64
// of them), and emptyHops the runs it steps over, so that a fetch costs a
// few header reads at most.
const (
	emptyRunMax = 64 * record.HeaderSize
	emptyHops   = 16
)

// afterEmpty returns what a consumer fetch answers for sl, read from the
// fetch offset (see "Empty batches" at the top of this file): sl itself,
// unless every batch of it holds no record and read (the same read from
// another offset, with the same limits) finds batches after them; then
// those, sl released. Telling costs nothing on the common path: a run of
// empty batches is a multiple of record.HeaderSize long (a batch with a
// record is longer), so only such slices, up to emptyRunMax, have their
// headers read. The consumer misses nothing: the batches stepped over
// hold no record, and a consumer's next offset comes from the batches it
// gets. A read that fails leaves sl as it was.
func afterEmpty(sl zerocopy.Slice, read func(from int64) (zerocopy.Slice, error)) zerocopy.Slice {
	for hop := 0; hop < emptyHops; hop++ {
		next, ok := emptyRun(sl)
		if !ok {
			return sl
		}
		more, err := read(next)
		if err != nil || more.Len() == 0 {
			more.Release()
			return sl // the empty batches, as read
		}
		sl.Release()
		sl = more
	}
	return sl
}

// emptyRun reports whether sl holds only batches with no record (and at
// least one), and the offset after them.
func emptyRun(sl zerocopy.Slice) (next int64, ok bool) {
	n := sl.Len()
	if n == 0 || n > emptyRunMax || n%record.HeaderSize != 0 {
		return 0, false
	}
	var hdr [record.HeaderSize]byte
	for pos := int64(0); pos < n; pos += record.HeaderSize {
		if _, err := sl.ReadAt(hdr[:], pos); err != nil {
			return 0, false
		}
		b := record.Batch(hdr[:])
		if b.Size() != record.HeaderSize || b.RecordCount() != 0 {
			return 0, false
		}
		next = b.NextOffset()
	}
	return next, true
}

// readReplica reads one partition for follower replicaID, up to the log
// end: replication.Partition.HandleReplicaFetch records the follower's
// progress (the ISR and the high watermark move with it). Past the
// response limit the follower's position is still recorded; what was read
// is dropped.
//
// throttle: the partition is throttled and the leader's replication quota
// exceeded (fillFetch). Unless the follower is in the ISR, its progress is
// still recorded but the records are dropped, as Kafka's readFromLog
// answers such a partition with an empty record set; held reports that.
func readReplica(ft *fetchTarget, op *fetchresp.Partition, remaining *int64, first bool, replicaID int32, now time.Time, throttle bool) (held bool, err error) {
	limit := max(min(int64(ft.maxBytes), *remaining), 1)
	res, err := ft.p.HandleReplicaFetch(replicaID, ft.leaderEpoch, ft.offset, int(limit), now)
	op.HighWatermark, op.LastStableOffset, op.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
	if err != nil {
		return false, err
	}
	ft.p.UpdateFollowerLogStart(replicaID, ft.logStart)
	if throttle && res.Records.Len() > 0 && !ft.p.InISR(replicaID) {
		res.Records.Release()
		return true, nil
	}
	keepRecords(op, res.Records, *remaining, remaining, first)
	return false, nil
}

// recordLeaderThrottled records, under the leader's replication quota,
// the record bytes a follower's fetch response carries for throttled
// partitions, in sync or not (Kafka's sizeOfThrottledPartitions).
func recordLeaderThrottled(q *quota.Replication, targets [][]fetchTarget, out *fetchresp.Response) {
	var n int64
	for i := range targets {
		for j := range targets[i] {
			if targets[i][j].throttled {
				n += out.Topics[i].Partitions[j].Records.Len()
			}
		}
	}
	q.Record(n)
}

// keepRecords puts sl in op and counts it against remaining, unless it is
// longer than limit and something was gathered already (only the first
// partition's first batch may exceed the limits, KIP-74): then sl is
// released. It reports whether sl was kept.
func keepRecords(op *fetchresp.Partition, sl zerocopy.Slice, limit int64, remaining *int64, first bool) bool {
	if sl.Len() > limit && !first {
		sl.Release()
		return false
	}
	op.Records = sl
	*remaining -= sl.Len()
	return true
}

// checkLeaderEpoch compares a client's current leader epoch (-1: unknown)
// with the partition's.
func checkLeaderEpoch(p *replica.Partition, epoch int32) error {
	switch cur := p.LeaderEpoch(); {
	case epoch < 0 || epoch == cur:
		return nil
	case epoch < cur:
		return fmt.Errorf("%w: %d < %d", errFencedLeaderEpoch, epoch, cur)
	default:
		return fmt.Errorf("%w: %d > %d", errUnknownLeaderEpoch, epoch, cur)
	}
}

// releaseFetch releases and clears every Records slice of out.
func releaseFetch(out *fetchresp.Response) {
	for i := range out.Topics {
		for j := range out.Topics[i].Partitions {
			op := &out.Topics[i].Partitions[j]
			op.Records.Release()
			op.Records = zerocopy.Slice{}
		}
	}
}

// fetchResponse wraps out for the writer, which encodes it with fetchresp
// (taking its slices) or releases it if the connection dies first.
func fetchResponse(version int16, out *fetchresp.Response) *response {
	return &response{
		encode: func(w *zerocopy.Writer, corr int32) error {
			return fetchresp.Write(w, version, corr, out)
		},
		release: func() { releaseFetch(out) },
	}
}
