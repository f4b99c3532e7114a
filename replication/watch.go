package replication

import "sync/atomic"

// Watchers: how a parked fetch learns that a partition it reads changed
// (the server's purgatory, Kafka's DelayedFetch). A fetch over many
// partitions waits on one Waiter; each partition it reads holds one of its
// Watches in an intrusive list. A change credits the Waiter with the bytes
// it made readable, so a fetch wakes once its min bytes can be met rather
// than at every append:
//
//   - a consumer's Watch counts bytes passing below the high watermark;
//   - a read_committed consumer's Watch (committed) counts them below the
//     last stable offset: credited like the first kind while the LSO
//     follows the high watermark, woken outright when a transaction's end
//     moves it (txn.go), since the bytes it made readable are not priced;
//   - a follower's Watch (logEnd) counts bytes appended to the log, since
//     followers read up to the log end;
//   - truncation, a leadership change, an ISR or min.insync.replicas
//     change, a failed append and Close wake every watcher outright (the
//     fetch must answer with an error or look again).
//
// As in Kafka, a follower is not woken by a high-watermark move alone: it
// learns the new high watermark with its next records or at max wait.

// A Waiter is a parked request's single wake-up, however many partitions
// it watches. Safe for concurrent use: partitions credit and wake it from
// appending goroutines while its owner resets and arms it.
type Waiter struct {
	c chan struct{} // capacity 1: a wake-up not yet received
	// need is the bytes still to become readable before the waiter wakes:
	// a credit that leaves it <= 0 wakes it. Between Reset and Arm it holds
	// unarmed minus the credit so far, so credits count but do not wake.
	need atomic.Int64
}

// unarmed is need's base between Reset and Arm: far above any credit a
// read can take.
const unarmed = 1 << 62

// NewWaiter returns a Waiter, reset.
func NewWaiter() *Waiter {
	w := &Waiter{c: make(chan struct{}, 1)}
	w.need.Store(unarmed)
	return w
}

// C returns the channel that receives when the waiter should read again.
func (w *Waiter) C() <-chan struct{} { return w.c }

// Reset drops a pending wake-up and the credit counted so far, and disarms
// the waiter. Call it before reading the watched partitions: what changes
// afterwards is credited, and Arm or C tells about it, so nothing slips
// between the read and the wait. A wake-up that is not about bytes (see
// the package note above) still arrives on C while disarmed.
func (w *Waiter) Reset() {
	w.need.Store(unarmed)
	select {
	case <-w.c:
	default:
	}
}

// Arm asks for a wake-up once n more bytes have become readable, counting
// those credited since Reset (which may include bytes the read already
// saw: waking early is safe, waking late is not). It reports whether to
// wait on C: false when the credit since Reset already covers n.
func (w *Waiter) Arm(n int64) bool { return w.need.Add(n-unarmed) > 0 }

func (w *Waiter) credit(n int64) {
	if w.need.Add(-n) <= 0 {
		w.wake()
	}
}

func (w *Waiter) wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// A Watch is one Waiter's registration on one Partition: a node of the
// partition's intrusive watcher list, owned by the waiting request, which
// allocates one per partition it reads along with the request. It stays
// linked across wake-ups, so a woken fetch parks again without allocating
// or relocking its partitions. The zero Watch is unlinked.
//
// Only its owner calls its methods, from one goroutine at a time; the
// partition touches only the list links, under its lock. Every Link must
// be followed by an Unlink before the owner returns, or the partition keeps
// crediting (and referencing) a dead request.
type Watch struct {
	w      *Waiter
	p      *Partition
	logEnd bool // a follower's fetch: credited by appends, not HW moves
	// committed: a read_committed fetch, credited by LSO moves.
	committed bool
	gen       uint64 // p.wakeGen at Prepare
	mark      int64  // the HW (or log end, for logEnd) at Prepare

	// Guarded by p.hwMu; written only by the owner.
	prev, next *Watch
	linked     bool
}

// Prepare readies n to watch p for w. Call it before the first read it
// guards: Link then wakes w at once if p changed in between. logEnd: the
// reader waits for the log end to move (a follower), not the high
// watermark (a consumer). REQUIRES: n is not linked.
func (n *Watch) Prepare(p *Partition, w *Waiter, logEnd bool) {
	n.p, n.w, n.logEnd, n.committed = p, w, logEnd, false
	n.gen = p.wakeGen.Load()
	n.mark = n.watchMark()
}

// PrepareCommitted is Prepare for a read_committed consumer, which waits
// for the last stable offset to move. REQUIRES: n is not linked.
func (n *Watch) PrepareCommitted(p *Partition, w *Waiter) {
	n.p, n.w, n.logEnd, n.committed = p, w, false, true
	n.gen = p.wakeGen.Load()
	n.mark = n.watchMark()
}

// Link registers n with its partition. If the partition moved on since
// Prepare (its high watermark or log end moved, or it was truncated,
// changed leadership or closed), the waiter is woken at once, since the
// read may have missed that change. A closed partition is not linked.
// Linking a linked or unprepared Watch does nothing.
func (n *Watch) Link() {
	p := n.p
	if p == nil {
		return
	}
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	if n.linked {
		return
	}
	if p.closed || p.wakeGen.Load() != n.gen || n.watchMark() != n.mark {
		n.w.wake()
	}
	if p.closed {
		return
	}
	l := n.list()
	n.prev, n.next = nil, l.head
	if l.head != nil {
		l.head.prev = n
	}
	l.head = n
	l.n++
	n.linked = true
}

// Unlink removes n from its partition's list; an unlinked Watch is left
// alone. Afterwards the partition no longer refers to n or its Waiter.
func (n *Watch) Unlink() {
	p := n.p
	if p == nil || !n.linked { // n.linked is written only by this goroutine
		return
	}
	p.hwMu.Lock()
	l := n.list()
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	}
	n.prev, n.next, n.linked = nil, nil, false
	l.n--
	p.hwMu.Unlock()
}

// Watchers returns how many Watches are linked to p (Kafka's purgatory
// size, per partition): for tests that check none is left behind, and for
// metrics.
func (p *Partition) Watchers() int {
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	return p.hwWatchers.n + p.endWatchers.n + p.lsoWatchers.n
}

// watchList is a partition's list of linked Watches of one kind.
type watchList struct {
	head *Watch
	n    int // Watches linked
}

func (l *watchList) credit(n int64) {
	for w := l.head; w != nil; w = w.next {
		w.w.credit(n)
	}
}

func (l *watchList) wake() {
	for w := l.head; w != nil; w = w.next {
		w.w.wake()
	}
}

// list is the partition's list n belongs on.
func (n *Watch) list() *watchList {
	switch {
	case n.logEnd:
		return &n.p.endWatchers
	case n.committed:
		return &n.p.lsoWatchers
	}
	return &n.p.hwWatchers
}

// watchMark is the offset whose move n waits for.
func (n *Watch) watchMark() int64 {
	switch {
	case n.logEnd:
		return n.p.log.EndOffset()
	case n.committed:
		return n.p.lso.Load()
	}
	return n.p.hw.Load()
}

// byteMarks prices high-watermark moves in bytes for consumers' Watches.
// Kafka's DelayedFetch subtracts file positions, which engine.Log does not
// expose; instead the partition remembers the bytes appended up to the end
// of each of its last maxByteMarks appends (the HW moves in whole appends in
// single-node mode and usually in a cluster; a move into the middle of
// one is priced as the whole append: an early wake-up, never a late one).
//
// Invariant: the marks in the ring, oldest first from head, have growing
// ends and bytes, all counted from the last reset; when hwKnown, hwBytes
// is at most the bytes below the high watermark.
type byteMarks struct {
	total int64 // bytes appended since the last reset
	// ring grows by append up to maxByteMarks marks, then wraps: a
	// partition that is never written holds one mark (16 bytes), not the
	// full ring (512). Invariant: head > 0 only when
	// len(ring) == maxByteMarks (head moves only when the ring is full).
	ring    []byteMark
	hwBytes int64
	head, n uint8 // ring[(head+i)%len(ring)] for i < n; both < maxByteMarks <= 255
	hwKnown bool
}

type byteMark struct{ end, bytes int64 }

// maxByteMarks is how many appends the marks remember.
const maxByteMarks = 32

// reset forgets every mark: the log was opened, truncated or failed an
// append, so bytes below leo are unknown from here on.
func (m *byteMarks) reset(leo, hw int64) {
	m.total, m.head, m.n = 0, 0, 0
	m.push(leo, 0)
	m.hwBytes, m.hwKnown = 0, hw == leo
}

// push records an append of n bytes that ended at offset end.
func (m *byteMarks) push(end, n int64) {
	m.total += n
	mk := byteMark{end: end, bytes: m.total}
	if int(m.n) == len(m.ring) && len(m.ring) < maxByteMarks {
		m.ring = append(m.ring, mk) // head is 0: the marks stay in order
		m.n++
		return
	}
	i := (int(m.head) + int(m.n)) % len(m.ring)
	if int(m.n) == len(m.ring) {
		m.head = uint8((int(m.head) + 1) % len(m.ring))
	} else {
		m.n++
	}
	m.ring[i] = mk
}

// hwMoved returns how many bytes the high watermark's move up to hw made
// readable (at least that many), or ok false when the marks cannot tell.
func (m *byteMarks) hwMoved(hw int64) (n int64, ok bool) {
	lower, upper := int64(-1), int64(-1)
	for i := 0; i < int(m.n); i++ {
		mk := m.ring[(int(m.head)+i)%len(m.ring)]
		if mk.end <= hw {
			lower = mk.bytes
		}
		if mk.end >= hw && upper < 0 {
			upper = mk.bytes
		}
	}
	if !m.hwKnown || upper < 0 {
		if lower >= 0 {
			m.hwBytes, m.hwKnown = lower, true
		}
		return 0, false
	}
	n = upper - m.hwBytes
	m.hwBytes = max(m.hwBytes, lower)
	return max(n, 1), true
}

// WakeGen returns how many times p woke every watcher outright so far:
// truncation, a leadership, ISR or min.insync.replicas change, a failed
// append, Close. A reader that loads it before it reads p and finds it
// unchanged later knows none of those happened since (with the high
// watermark and last stable offset compared, that p answers a fetch as it
// did: server/fetch_session.go).
func (p *Partition) WakeGen() uint64 { return p.wakeGen.Load() }
