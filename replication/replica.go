package replication

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sluice/sluice/engine"
)

// Leader and followers
//
// The controller tells each replica of a partition its role with a
// LeaderAndIsr state; the broker passes it to MakeLeader or MakeFollower.
//
// The leader appends produce requests (append.go) and learns how far each
// follower got from the follower's fetches: a follower fetching from offset
// o has everything below o (UpdateFollowerState). The high watermark is the
// smallest log end offset in the ISR, the leader's own included, and never
// moves back while the replica leads.
//
// The ISR changes like Kafka's (Partition.maybeShrinkIsr/maybeExpandIsr):
//   - a follower leaves it when it has not been caught up with the
//     leader's log end for ReplicaLagTimeMax (MaybeShrinkISR, which the
//     broker calls periodically). "Caught up at t" means a fetch at t asked
//     for the leader's log end, or for at least the log end the leader had
//     at the follower's previous fetch (then it was caught up at the time
//     of that previous fetch);
//   - a follower joins it when its log end reaches the high watermark and
//     the start of the current leader epoch.
//
// Either change is proposed to Options.AlterISR (the broker writes it to
// ZooKeeper guarded by the state's version) and applied only when that
// succeeds. While a change is in flight the high watermark is computed over
// the larger of the two ISRs (Kafka's "maximal ISR"), so a replica that is
// about to join never lacks committed records.

// LeaderAndIsr is a partition's replication state as the controller keeps
// it in /brokers/topics/<t>/partitions/<p>/state.
type LeaderAndIsr struct {
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
	Replicas    []int32
	// ZkVersion is the version of the partition state znode, the guard
	// of the leader's ISR writes.
	ZkVersion int32
	// IsNew is LeaderAndIsr's is_new: the partition was just created, so
	// a replica missing here may be created even while a log dir is
	// offline (replica.Manager; Kafka's LogManager.getOrCreateLog).
	IsNew bool
}

// StateConflictError is what Options.AlterISR returns when the partition
// state it was to change is no longer at the version the leader knows:
// Current is the state read back after the conflict, with its version.
type StateConflictError struct {
	Current LeaderAndIsr
	Err     error // the conflict as the writer reported it
}

func (e *StateConflictError) Error() string {
	return fmt.Sprintf("replication: partition state changed: now leader %d epoch %d isr %v version %d: %v",
		e.Current.Leader, e.Current.LeaderEpoch, e.Current.ISR, e.Current.ZkVersion, e.Err)
}

func (e *StateConflictError) Unwrap() error { return e.Err }

// replicaState is the part of a Partition that the replication role
// decides. Guarded by Partition.rmu.
type replicaState struct {
	leader bool
	// follower is set once MakeFollower has drained the leader's append
	// rounds; follower operations run only then.
	follower  bool
	leaderID  int32
	isr       []int32 // as committed by the controller or AlterISR
	replicas  []int32
	zkVersion int32
	minISR    int32 // min.insync.replicas, at least 1
	// epochStart is the log end offset when this replica became leader
	// of the current epoch (Kafka's leaderEpochStartOffset).
	epochStart int64
	// followers holds, while leading, every replica but this one (nil
	// when there is none: a single replica).
	followers map[int32]*followerState
	// inflight is the ISR change being written by AlterISR, or nil.
	inflight *isrChange
}

// followerState is what the leader knows of one follower (Kafka's Replica).
type followerState struct {
	leo                int64 // log end offset; -1 unknown
	lastCaughtUp       time.Time
	lastFetchLeaderLEO int64 // the leader's log end at the previous fetch; -1 none
	lastFetchTime      time.Time
	// logStart is the log start offset the follower sent in its last
	// fetch; -1 unknown (lowwatermark.go).
	logStart int64
}

// isrChange is one AlterISR call in flight.
type isrChange struct {
	isr []int32
	// join is the replica an expansion adds (-1 for a shrink), out those
	// a shrink removes: after a version conflict the change is made again
	// on the ISR read back.
	join int32
	out  []int32
}

// on returns the change made again on isr: out removed, join added (if
// not there). The leader itself is never removed.
func (c *isrChange) on(isr []int32, self int32) []int32 {
	var next []int32
	for _, id := range isr {
		if id == self || !slices.Contains(c.out, id) {
			next = append(next, id)
		}
	}
	if c.join >= 0 && !slices.Contains(next, c.join) {
		next = append(next, c.join)
	}
	return next
}

// alterISRConflictRetries bounds how often one ISR change is made again
// on a re-read state after version conflicts.
const alterISRConflictRetries = 3

func (p *Partition) initReplicaState(minISR int) {
	self := p.opts.BrokerID
	p.rs = replicaState{
		leader:    true,
		leaderID:  self,
		isr:       []int32{self},
		replicas:  []int32{self},
		zkVersion: -1,
		minISR:    clampMinISR(minISR),
	}
	p.rs.epochStart = p.log.EndOffset()
	p.isLeader.Store(true)
	p.noteISRLocked()
}

// IsLeader reports whether the replica currently leads the partition.
func (p *Partition) IsLeader() bool { return p.isLeader.Load() }

// ISR returns a copy of the committed in-sync replica set.
func (p *Partition) ISR() []int32 {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	return slices.Clone(p.rs.isr)
}

// ReplicaCounts returns, without copying the sets, the sizes of the
// replica set and the committed ISR and the min.insync.replicas in force:
// what the broker's under-replicated and under-min-ISR gauges need.
func (p *Partition) ReplicaCounts() (replicas, isr, minISR int) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	return len(p.rs.replicas), len(p.rs.isr), int(p.rs.minISR)
}

// State returns the replication state as this replica knows it.
func (p *Partition) State() LeaderAndIsr {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	return LeaderAndIsr{
		Leader: p.rs.leaderID, LeaderEpoch: p.leaderEpoch.Load(),
		ISR: slices.Clone(p.rs.isr), Replicas: slices.Clone(p.rs.replicas), ZkVersion: p.rs.zkVersion,
	}
}

// clampMinISR is n as a min.insync.replicas: at least 1, at most MaxInt32.
func clampMinISR(n int) int32 { return int32(min(max(n, 1), math.MaxInt32)) }

// SetMinInsyncReplicas applies a changed min.insync.replicas (values below
// 1 mean 1). Waiting acks=-1 requests are re-checked.
func (p *Partition) SetMinInsyncReplicas(n int) {
	p.rmu.Lock()
	p.rs.minISR = clampMinISR(n)
	p.noteISRLocked()
	p.rmu.Unlock()
	p.notify()
}

// MakeLeader makes this replica the leader of st.LeaderEpoch, which must be
// at least the current epoch (ErrStaleLeaderEpoch otherwise) and st.Leader
// must be this broker. A new epoch begins at the current log end offset
// (the engine records it with the first batch written in it); the high
// watermark is kept; what the leader knew of its followers is reset: log
// end unknown, caught up now, so none leaves the ISR before it had
// ReplicaLagTimeMax to fetch. The same epoch again (the leader already
// leading it) only updates the ISR, replicas and version. It waits for a
// follower operation in progress.
func (p *Partition) MakeLeader(st LeaderAndIsr) error {
	if st.Leader != p.opts.BrokerID {
		return fmt.Errorf("replication: %s-%d: MakeLeader names leader %d, this broker is %d", p.opts.Topic, p.index, st.Leader, p.opts.BrokerID)
	}
	p.fmu.Lock()
	defer p.fmu.Unlock()
	if p.isClosed() {
		return ErrClosed
	}
	p.rmu.Lock()
	cur := p.leaderEpoch.Load()
	if st.LeaderEpoch < cur {
		p.rmu.Unlock()
		return fmt.Errorf("%w: %s-%d: leader epoch %d is older than %d", ErrStaleLeaderEpoch, p.opts.Topic, p.index, st.LeaderEpoch, cur)
	}
	same := p.rs.leader && st.LeaderEpoch == cur
	p.rs.isr = slices.Clone(st.ISR)
	p.noteISRLocked()
	p.rs.replicas = slices.Clone(st.Replicas)
	p.rs.zkVersion = st.ZkVersion
	p.rs.leaderID = st.Leader
	if !same {
		p.rs.leader, p.rs.follower = true, false
		p.rs.epochStart = p.log.EndOffset()
		p.rs.inflight = nil
		p.rs.followers = make(map[int32]*followerState, len(st.Replicas))
		p.leaderEpoch.Store(st.LeaderEpoch)
		p.isLeader.Store(true)
		p.opts.Logger.Info("replication: became leader", "topic", p.opts.Topic, "partition", p.index,
			"epoch", st.LeaderEpoch, "start", p.rs.epochStart, "hw", p.hw.Load(), "isr", st.ISR)
	}
	// Followers: every replica but self (new ones keep no state).
	for _, id := range st.Replicas {
		if id == p.opts.BrokerID {
			continue
		}
		if _, ok := p.rs.followers[id]; !ok {
			if p.rs.followers == nil { // a partition that never led others holds none
				p.rs.followers = make(map[int32]*followerState, len(st.Replicas))
			}
			p.rs.followers[id] = &followerState{leo: -1, lastCaughtUp: p.opts.Now(), lastFetchLeaderLEO: -1, logStart: -1}
		}
	}
	for id := range p.rs.followers {
		if !slices.Contains(st.Replicas, id) {
			delete(p.rs.followers, id)
		}
	}
	p.maybeAdvanceHWLocked()
	p.rmu.Unlock()
	p.notify()
	return nil
}

// MakeFollower makes this replica a follower of st.Leader at
// st.LeaderEpoch, which must be at least the current epoch. It stops
// leading: later Appends and those queued fail with ErrNotLeader, and so do
// acks=-1 requests still waiting for the ISR (their records may be
// truncated). It returns once no leader append is in progress; the broker
// then hands the partition to a fetcher (FetcherManager.Add). The high
// watermark is kept.
func (p *Partition) MakeFollower(st LeaderAndIsr) error {
	if p.isClosed() {
		return ErrClosed
	}
	p.rmu.Lock()
	cur := p.leaderEpoch.Load()
	if st.LeaderEpoch < cur {
		p.rmu.Unlock()
		return fmt.Errorf("%w: %s-%d: leader epoch %d is older than %d", ErrStaleLeaderEpoch, p.opts.Topic, p.index, st.LeaderEpoch, cur)
	}
	wasLeader := p.rs.leader
	p.rs.leader = false
	p.rs.leaderID = st.Leader
	p.rs.isr = slices.Clone(st.ISR)
	p.noteISRLocked()
	p.rs.replicas = slices.Clone(st.Replicas)
	p.rs.zkVersion = st.ZkVersion
	p.rs.followers = nil
	p.rs.inflight = nil
	p.leaderEpoch.Store(st.LeaderEpoch)
	// The generation moves before isLeader turns false: whoever sees a
	// follower (and so a follower's HW) sees the new generation
	// (ackOutcomeLocked).
	p.gen.Add(1)
	p.isLeader.Store(false)
	p.rmu.Unlock()
	p.notify() // acks=-1 waiters fail with ErrNotLeader now

	// Let the append round in progress (if any) finish; rounds check
	// leadership first, so the queue drains with ErrNotLeader.
	p.qmu.Lock()
	p.waitIdleLocked()
	p.qmu.Unlock()

	p.rmu.Lock()
	if !p.rs.leader && p.leaderEpoch.Load() == st.LeaderEpoch {
		p.rs.follower = true
	}
	p.rmu.Unlock()
	if wasLeader {
		p.opts.Logger.Info("replication: became follower", "topic", p.opts.Topic, "partition", p.index,
			"leader", st.Leader, "epoch", st.LeaderEpoch, "end", p.log.EndOffset(), "hw", p.hw.Load())
	}
	return nil
}

// errNotReplica is UpdateFollowerState's answer to a fetch from a broker
// that is not one of the partition's followers (or to any fetch on a
// replica that does not lead); HandleReplicaFetch turns it into Kafka's.
var errNotReplica = errors.New("replication: not a follower of this leader")

// UpdateFollowerState records a fetch by follower replicaID from
// fetchOffset at now, on the leader; the Fetch handler calls it (through
// HandleReplicaFetch) for each partition of a replica fetch before
// reading. The follower's log end is fetchOffset. It may expand the ISR
// (calling Options.AlterISR, so it can block for that write) and advance
// the high watermark, which it returns. The checks and the update take
// p.rmu once. It changes nothing and returns an error when replicaID is
// not a follower of this partition or this replica does not lead
// (errNotReplica), and when fetchOffset is outside [log start, log end]
// (wrapping engine.ErrOffsetOutOfRange; checked after the replica, so a
// stranger learns nothing of the log).
func (p *Partition) UpdateFollowerState(replicaID int32, fetchOffset int64, now time.Time) (hw int64, err error) {
	p.rmu.Lock()
	f := p.rs.followers[replicaID]
	if !p.rs.leader || f == nil {
		p.rmu.Unlock()
		return p.hw.Load(), errNotReplica
	}
	if start, end := p.log.StartOffset(), p.log.EndOffset(); fetchOffset < start || fetchOffset > end {
		p.rmu.Unlock()
		return p.hw.Load(), fmt.Errorf("%w: %s-%d replica %d fetch offset %d outside [%d, %d]", engine.ErrOffsetOutOfRange, p.opts.Topic, p.index, replicaID, fetchOffset, start, end)
	}
	leo := p.log.EndOffset()
	switch {
	case fetchOffset >= leo:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, now)
	case f.lastFetchLeaderLEO >= 0 && fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, f.lastFetchTime)
	}
	f.lastFetchLeaderLEO, f.lastFetchTime = leo, now
	f.leo = fetchOffset
	p.maybeAdvanceHWLocked()

	var change *isrChange
	if p.rs.inflight == nil && !slices.Contains(p.rs.isr, replicaID) &&
		f.leo >= p.hw.Load() && f.leo >= p.rs.epochStart {
		isr := append(slices.Clone(p.rs.isr), replicaID)
		change = &isrChange{isr: isr, join: replicaID}
		p.rs.inflight = change
		// The HW now counts the joining replica (maximal ISR).
	}
	p.rmu.Unlock()
	if change != nil {
		p.alterISR(change, "expand")
	}
	return p.hw.Load(), nil
}

// MaybeShrinkISR removes from the ISR, on the leader, every follower that
// has not been caught up with the leader's log end since before
// now - ReplicaLagTimeMax. The broker calls it periodically (Kafka: every
// ReplicaLagTimeMax/2). The change goes through Options.AlterISR.
func (p *Partition) MaybeShrinkISR(now time.Time) {
	p.rmu.Lock()
	if !p.rs.leader || p.rs.inflight != nil {
		p.rmu.Unlock()
		return
	}
	var keep, out []int32
	for _, id := range p.rs.isr {
		f := p.rs.followers[id]
		if id != p.opts.BrokerID && (f == nil || now.Sub(f.lastCaughtUp) > p.opts.ReplicaLagTimeMax) {
			out = append(out, id)
			continue
		}
		keep = append(keep, id)
	}
	if len(out) == 0 {
		p.rmu.Unlock()
		return
	}
	change := &isrChange{isr: keep, join: -1, out: out}
	p.rs.inflight = change
	lagMax := p.opts.ReplicaLagTimeMax
	p.rmu.Unlock()
	p.opts.Logger.Info("replication: shrinking ISR", "topic", p.opts.Topic, "partition", p.index,
		"out", out, "isr", keep, "lag_max", lagMax)
	p.alterISR(change, "shrink")
}

// alterISRTimeout bounds one Options.AlterISR call.
const alterISRTimeout = 30 * time.Second

// alterISR writes change through Options.AlterISR and applies it if it
// succeeded and this replica still leads the same epoch.
//
// A version conflict (a *StateConflictError from AlterISR) means someone
// else, the controller, wrote the partition state since this leader last
// knew it. Kafka's ZooKeeper-mode Partition only logs that and keeps
// leading on its cached version until a LeaderAndIsr arrives; Sluice acts
// on the state read back:
//   - it names another leader or a newer leader epoch: the controller
//     moved leadership and its LeaderAndIsr has not arrived yet. The
//     replica stops leading at once (it is fenced): appends and waiting
//     acks=-1 requests fail with ErrNotLeader and follower fetches are
//     refused, so clients go to the new leader instead of waiting here
//     for acknowledgements that cannot come. The LeaderAndIsr, when it
//     comes, makes it a follower (or the leader of the newer epoch) as
//     usual.
//   - it names this replica at the same epoch with another version: the
//     controller changed the ISR alone. The leader adopts that ISR and
//     version and makes its change again on them (at most
//     alterISRConflictRetries times; after that the next follower fetch
//     or MaybeShrinkISR tries again).
//
// REQUIRES: p.rs.inflight == change, set by the caller; p.rmu not held.
func (p *Partition) alterISR(change *isrChange, kind string) {
	for attempt := 0; p.alterISROnce(change, kind, attempt < alterISRConflictRetries); attempt++ {
	}
}

// alterISROnce is one attempt of alterISR. It returns true when the
// change was made again on a re-read state and should be written again
// (p.rs.inflight is still change).
func (p *Partition) alterISROnce(change *isrChange, kind string, mayRetry bool) (retry bool) {
	p.rmu.Lock()
	st := LeaderAndIsr{
		Leader: p.opts.BrokerID, LeaderEpoch: p.leaderEpoch.Load(),
		ISR: slices.Clone(change.isr), Replicas: slices.Clone(p.rs.replicas), ZkVersion: p.rs.zkVersion,
	}
	p.rmu.Unlock()
	version, err := st.ZkVersion, error(nil)
	if p.opts.AlterISR != nil {
		ctx, cancel := context.WithTimeout(context.Background(), alterISRTimeout)
		version, err = p.opts.AlterISR(ctx, p.opts.Topic, p.index, st)
		cancel()
	}
	p.rmu.Lock()
	if p.rs.inflight != change {
		// Leadership changed meanwhile; the new state came from the
		// controller and wins.
		p.rmu.Unlock()
		return false
	}
	var conflict *StateConflictError
	if errors.As(err, &conflict) {
		return p.onStateConflictLocked(change, kind, st, conflict.Current, mayRetry)
	}
	p.rs.inflight = nil
	if err != nil {
		p.rmu.Unlock()
		p.opts.Logger.Warn("replication: ISR change failed; will retry", "topic", p.opts.Topic, "partition", p.index,
			"change", kind, "isr", st.ISR, "zk_version", st.ZkVersion, "err", err)
		return false
	}
	p.rs.isr = change.isr
	p.noteISRLocked()
	p.rs.zkVersion = version
	p.maybeAdvanceHWLocked()
	p.rmu.Unlock()
	p.opts.Logger.Info("replication: ISR changed", "topic", p.opts.Topic, "partition", p.index,
		"change", kind, "isr", st.ISR, "zk_version", version)
	if f := p.opts.OnISRChange; f != nil {
		f(kind == "shrink")
	}
	p.notify() // acks=-1 waiters re-check min.insync.replicas
	return false
}

// onStateConflictLocked acts on the state read back after a version
// conflict (see alterISR): it fences the leader, or adopts cur and makes
// change again on it (returning true: write it again), or gives the
// change up until the next attempt.
// REQUIRES: p.rmu held, p.rs.inflight == change; it unlocks p.rmu.
func (p *Partition) onStateConflictLocked(change *isrChange, kind string, tried, cur LeaderAndIsr, mayRetry bool) bool {
	self := p.opts.BrokerID
	epoch := p.leaderEpoch.Load()
	switch {
	case cur.Leader != self || cur.LeaderEpoch > epoch:
		p.rs.inflight = nil
		p.rs.leader, p.rs.follower = false, false
		p.rs.followers = nil
		// As in MakeFollower, the generation moves before isLeader
		// turns false (ackOutcomeLocked).
		p.gen.Add(1)
		p.isLeader.Store(false)
		p.rmu.Unlock()
		p.notify() // acks=-1 waiters fail with ErrNotLeader now
		p.opts.Logger.Warn("replication: ISR change refused and the partition state names another leader or a newer epoch; no longer answering as leader until the controller's LeaderAndIsr",
			"topic", p.opts.Topic, "partition", p.index, "change", kind, "epoch", epoch, "zk_version", tried.ZkVersion,
			"state_leader", cur.Leader, "state_epoch", cur.LeaderEpoch, "state_isr", cur.ISR, "state_version", cur.ZkVersion)
		return false
	case cur.LeaderEpoch == epoch && cur.ZkVersion != tried.ZkVersion:
		p.rs.isr = slices.Clone(cur.ISR)
		p.rs.zkVersion = cur.ZkVersion
		p.noteISRLocked()
		next := change.on(cur.ISR, self)
		again := mayRetry && !slices.Equal(slices.Sorted(slices.Values(next)), slices.Sorted(slices.Values(cur.ISR)))
		if again {
			change.isr = next
		} else {
			p.rs.inflight = nil
		}
		p.maybeAdvanceHWLocked()
		p.rmu.Unlock()
		p.opts.Logger.Info("replication: ISR change met a newer partition state of this leader and epoch; adopted it",
			"topic", p.opts.Topic, "partition", p.index, "change", kind, "epoch", epoch,
			"isr", cur.ISR, "zk_version", cur.ZkVersion, "retry_isr", next, "retry", again)
		p.notify() // the adopted ISR may move the high watermark or min.insync.replicas checks
		return again
	default:
		// The same version read back (a read behind a write that has
		// since moved on) or an older epoch: nothing to adopt.
		p.rs.inflight = nil
		p.rmu.Unlock()
		p.opts.Logger.Warn("replication: ISR change refused on a version conflict; will retry",
			"topic", p.opts.Topic, "partition", p.index, "change", kind, "zk_version", tried.ZkVersion,
			"state_leader", cur.Leader, "state_epoch", cur.LeaderEpoch, "state_version", cur.ZkVersion)
		return false
	}
}

// maybeAdvanceHWLocked raises the high watermark to the smallest log end
// offset in the maximal ISR (the committed one, plus a replica joining it).
// A follower whose log end is unknown holds it where it is.
// REQUIRES: p.rmu held, p.rs.leader.
func (p *Partition) maybeAdvanceHWLocked() {
	if !p.rs.leader {
		return
	}
	hw := p.log.EndOffset()
	consider := func(id int32) {
		if id == p.opts.BrokerID {
			return
		}
		f := p.rs.followers[id]
		if f == nil {
			hw = -1
			return
		}
		hw = min(hw, f.leo)
	}
	for _, id := range p.rs.isr {
		consider(id)
	}
	if c := p.rs.inflight; c != nil {
		for _, id := range c.isr {
			if !slices.Contains(p.rs.isr, id) {
				consider(id)
			}
		}
	}
	p.advanceHW(hw)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
