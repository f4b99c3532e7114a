// Package share is the pure state of KIP-932 share partitions: which records
// of one topic partition a share group has in flight, who holds them, how
// often each was delivered and how each was acknowledged. It does no I/O and
// reads no clock: every call takes the time, so tests drive it with a fake
// clock. The server (ShareFetch, ShareAcknowledge) owns the locking and the
// log reads; the share coordinator persists Snapshot.
//
// The model is Kafka's SharePartition (core/src/main/java/kafka/server/share):
//
//	     start                                       next
//	       |                                           |
//	log: ...[ in flight: recs[i] is offset start+i ]...[ never acquired ... hwm )
//
// start is the share-partition start offset (SPSO): every offset below it is
// acknowledged or archived and forgotten. next is one past the
// share-partition end offset (SPEO): offsets from next on have never been
// acquired. Invariant: next == start+len(recs), and recs[0] is never
// Acknowledged or Archived (start advances past them).
//
// Every record in flight is Available, Acquired (by one member, until its
// lock expires), Acknowledged or Archived. A record is delivered each time it
// is acquired; on release or lock expiry it becomes Available again, or
// Archived once its delivery count reached the limit.
//
// Beyond Kafka, a redelivery backoff (Config.Backoff) keeps a released or
// lock-expired record unavailable for a while before its next delivery.
package share

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// RecordState is a record's delivery state. The values are Kafka's
// RecordState ids, written in ShareSnapshot/ShareUpdate state batches: part
// of the on-disk format, do not change.
type RecordState int8

const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "available"
	case Acquired:
		return "acquired"
	case Acknowledged:
		return "acknowledged"
	case Archived:
		return "archived"
	}
	return fmt.Sprintf("state(%d)", int8(s))
}

// AckType is an acknowledgement type as ShareFetch and ShareAcknowledge
// carry it (part of the wire format).
type AckType int8

const (
	AckGap     AckType = 0 // the offset holds no record for the client (control record, compacted away)
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4 // KIP-1222: extend the acquisition lock
)

// Errors. The server maps them to Kafka codes (internal/errcode).
var (
	// ErrInvalidRecordState: an acknowledgement names a record that is not
	// acquired by this member (INVALID_RECORD_STATE).
	ErrInvalidRecordState = errors.New("share: invalid record state")
	// ErrInvalidRequest: a malformed acknowledgement batch (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("share: invalid acknowledgement batch")
)

// Backoff is Sluice's redelivery backoff: after its n-th delivery is
// released or its lock expires, a record stays unavailable for
// min(Initial * Multiplier^(n-1), Max). Initial 0 disables it (Kafka's
// behaviour).
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration // 0: no cap
	Multiplier float64       // < 1 is taken as 1 (a fixed backoff)
}

// delay is the backoff after a record's deliveries-th delivery.
func (b Backoff) delay(deliveries int16) time.Duration {
	if b.Initial <= 0 {
		return 0
	}
	d := float64(b.Initial)
	if m := b.Multiplier; m > 1 && deliveries > 1 {
		d *= math.Pow(m, float64(deliveries-1))
	}
	if b.Max > 0 && d > float64(b.Max) {
		return b.Max
	}
	if d > float64(math.MaxInt64/2) {
		return math.MaxInt64 / 2
	}
	return time.Duration(d)
}

// Config is what a share partition needs of its group's configuration. It
// may change between calls (a group config change); each call uses the one
// in effect.
type Config struct {
	LockDuration       time.Duration // share.record.lock.duration.ms
	DeliveryCountLimit int16         // share.delivery.count.limit
	MaxRecordLocks     int           // share.partition.max.record.locks: the in-flight bound
	RenewEnabled       bool          // share.renew.acknowledge.enable (KIP-1222; Kafka's default true)
	Backoff            Backoff       // share.redelivery.backoff.*
}

// DeadLetter is a record archived because it was rejected or reached the
// delivery-count limit: what a dead-letter topic (KIP-1191) receives.
type DeadLetter struct {
	Offset     int64
	Deliveries int16
	Rejected   bool // else its delivery count reached the limit
}

// record is one in-flight offset.
type record struct {
	state      RecordState
	deliveries int16
	owner      string // member holding it while Acquired
	lockUntil  int64  // unix nanos; while Acquired
	readyAt    int64  // unix nanos; while Available: not acquirable before (backoff)
}

// Range is a run of acquired offsets, inclusive, with their delivery count:
// ShareFetch's AcquiredRecords.
type Range struct {
	First, Last   int64
	DeliveryCount int16
}

// AckBatch is one acknowledgement batch: offsets First..Last inclusive and
// either one type for all of them or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []AckType
}

// Partition is one share partition's in-flight state. It is not safe for
// concurrent use: the caller serializes calls.
type Partition struct {
	start int64
	recs  []record // recs[i] is offset start+i; next = start+len(recs)
	// stateEpoch is the share-partition state epoch (ShareSnapshot
	// StateEpoch), bumped by the coordinator when the state is reset.
	stateEpoch int32
	// dirty counts changes since the last Snapshot, for the persister.
	dirty uint64
	stats Stats // stats.go
	// dead are the records archived as dead letters since the last
	// TakeDeadLetters, in the order they were archived.
	dead []DeadLetter
}

// TakeDeadLetters returns the records archived by Reject or at the
// delivery-count limit since its last call, and forgets them. The caller
// writes them to the group's dead-letter topic before persisting the state
// that archives them.
func (p *Partition) TakeDeadLetters() []DeadLetter {
	d := p.dead
	p.dead = nil
	return d
}

// RequeueDeadLetters puts back dead letters TakeDeadLetters returned whose
// write failed, ahead of any taken since.
func (p *Partition) RequeueDeadLetters(d []DeadLetter) {
	p.dead = append(append([]DeadLetter(nil), d...), p.dead...)
}

// New returns an empty share partition starting at offset start (chosen by
// share.auto.offset.reset when the group has no state for it).
func New(start int64) *Partition { return &Partition{start: start} }

// Start is the share-partition start offset.
func (p *Partition) Start() int64 { return p.start }

// Next is one past the share-partition end offset: the first offset never
// acquired.
func (p *Partition) Next() int64 { return p.start + int64(len(p.recs)) }

// InFlight is the number of offsets in flight (Next - Start).
func (p *Partition) InFlight() int { return len(p.recs) }

// Dirty reports how many changes happened since the last MarkClean.
func (p *Partition) Dirty() uint64 { return p.dirty }

// MarkClean records that the state up to now is persisted.
func (p *Partition) MarkClean() { p.dirty = 0 }

// Record returns the state and delivery count of offset off and whether it is
// in flight.
func (p *Partition) Record(off int64) (RecordState, int16, bool) {
	if off < p.start || off >= p.Next() {
		return 0, 0, false
	}
	r := &p.recs[off-p.start]
	return r.state, r.deliveries, true
}

// release makes an acquired record available again, or archives it once its
// delivery count reached the limit.
func (p *Partition) release(r *record, off, now int64, cfg *Config) {
	r.owner = ""
	r.lockUntil = 0
	if cfg.DeliveryCountLimit > 0 && r.deliveries >= cfg.DeliveryCountLimit {
		r.state = Archived
		p.dead = append(p.dead, DeadLetter{Offset: off, Deliveries: r.deliveries})
		p.stats.DeliveryLimitHits++
		p.stats.Archived++
		return
	}
	r.state = Available
	r.readyAt = now + int64(cfg.Backoff.delay(r.deliveries))
}

// advance moves start past leading acknowledged and archived records.
func (p *Partition) advance() {
	i := 0
	for i < len(p.recs) && (p.recs[i].state == Acknowledged || p.recs[i].state == Archived) {
		i++
	}
	if i == 0 {
		return
	}
	p.start += int64(i)
	p.recs = p.recs[i:]
	if len(p.recs) == 0 {
		p.recs = nil // let the backing array go
	}
}

// FirstAcquirable is the first offset Acquire would hand out at now: the
// first available in-flight record past its backoff, else Next.
func (p *Partition) FirstAcquirable(now time.Time) int64 {
	t := now.UnixNano()
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Available && r.readyAt <= t {
			return p.start + int64(i)
		}
		if r.state == Acquired && r.lockUntil <= t {
			return p.start + int64(i)
		}
	}
	return p.Next()
}

// ExpireLocks releases every record whose acquisition lock has passed and
// reports how many it released.
func (p *Partition) ExpireLocks(now time.Time, cfg Config) int {
	t := now.UnixNano()
	n := 0
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.lockUntil <= t {
			p.release(r, p.start+int64(i), t, &cfg)
			n++
		}
	}
	if n > 0 {
		p.stats.LockExpiries += uint64(n)
		p.dirty++
		p.advance()
	}
	return n
}

// NextDeadline is the earliest time at which a lock expires or a backoff
// ends, and false if there is none: when to call ExpireLocks or retry an
// acquisition next.
func (p *Partition) NextDeadline() (time.Time, bool) {
	var min int64
	found := false
	for i := range p.recs {
		r := &p.recs[i]
		var t int64
		switch r.state {
		case Acquired:
			t = r.lockUntil
		case Available:
			if r.readyAt == 0 {
				continue
			}
			t = r.readyAt
		default:
			continue
		}
		if !found || t < min {
			min, found = t, true
		}
	}
	if !found {
		return time.Time{}, false
	}
	return time.Unix(0, min), true
}

// Acquire hands member up to maxRecords records below limit (the high
// watermark, or the last stable offset under read_committed, or the end of
// what the caller read of the log): first the available in-flight ones
// (redeliveries, in offset order), then fresh ones from Next, never letting
// more than cfg.MaxRecordLocks offsets be in flight. Expired locks are released first. It returns the
// acquired runs in offset order; nil when nothing is acquirable.
func (p *Partition) Acquire(member string, now time.Time, maxRecords int, limit int64, cfg Config) []Range {
	p.ExpireLocks(now, cfg)
	if maxRecords <= 0 {
		return nil
	}
	t := now.UnixNano()
	lock := t + int64(cfg.LockDuration)
	var out []Range
	add := func(off int64, deliveries int16) {
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == deliveries {
			out[n-1].Last = off
			return
		}
		out = append(out, Range{First: off, Last: off, DeliveryCount: deliveries})
	}
	got := 0
	for i := range p.recs {
		if got == maxRecords || p.start+int64(i) >= limit {
			break
		}
		r := &p.recs[i]
		if r.state != Available || r.readyAt > t {
			continue
		}
		r.state, r.owner, r.lockUntil, r.readyAt = Acquired, member, lock, 0
		if r.deliveries < math.MaxInt16 {
			r.deliveries++
		}
		add(p.start+int64(i), r.deliveries)
		got++
	}
	// Fresh records, within the in-flight bound.
	bound := p.start + int64(cfg.MaxRecordLocks)
	if cfg.MaxRecordLocks <= 0 {
		bound = math.MaxInt64
	}
	end := min(limit, bound)
	for off := p.Next(); off < end && got < maxRecords; off++ {
		p.recs = append(p.recs, record{state: Acquired, deliveries: 1, owner: member, lockUntil: lock})
		add(off, 1)
		got++
	}
	if got > 0 {
		p.stats.Acquired += uint64(got)
		p.dirty++
	}
	return out
}

// CheckAckBatches is the check of one partition's acknowledgement batches
// that needs no state, as Kafka's KafkaApis.validateAcknowledgementBatches
// makes it before the share partition is looked up: ErrInvalidRequest for
// First > Last, a batch starting before the previous batch's last offset
// (the first batch: before -1), no types, types neither one for the whole
// batch nor one per offset, an unknown type, or Renew without allowRenew
// (the request's IsRenewAck). A batch may start at the previous one's last
// offset: that offset is named twice, which Acknowledge refuses as Kafka's
// SharePartition does (ErrInvalidRecordState).
func CheckAckBatches(batches []AckBatch, allowRenew bool) error {
	prevEnd := int64(-1)
	for _, b := range batches {
		if b.First > b.Last || b.First < prevEnd || len(b.Types) == 0 {
			return ErrInvalidRequest
		}
		// Last >= First, so the difference is exact as a uint64.
		if n := uint64(b.Last-b.First) + 1; len(b.Types) != 1 && uint64(len(b.Types)) != n {
			return ErrInvalidRequest
		}
		for _, ty := range b.Types {
			switch ty {
			case AckGap, AckAccept, AckRelease, AckReject:
			case AckRenew:
				if !allowRenew {
					return ErrInvalidRequest
				}
			default:
				return ErrInvalidRequest
			}
		}
		prevEnd = b.Last
	}
	return nil
}

// Acknowledge applies member's acknowledgement batches atomically: either all
// of them apply or none does. Errors, as Kafka decides them:
// CheckAckBatches' ErrInvalidRequest first; then, batch by batch,
// ErrInvalidRecordState for a batch wholly below the start offset and
// ErrInvalidRequest for one reaching past the records acquired so far
// (Last >= Next, Kafka's "past acquired records"); then
// ErrInvalidRecordState for an offset not acquired by member or named
// twice. Offsets below the start offset in a batch that reaches above it
// are skipped (the log start moved past them and archived them, Kafka's
// checkForStartOffsetWithinBatch). AckRenew is allowed only with allowRenew
// (the request's IsRenewAck), else ErrInvalidRequest, and only when the
// group allows it (cfg.RenewEnabled, share.renew.acknowledge.enable), else
// ErrInvalidRecordState as Kafka's SharePartition (KAFKA-20161). The cost is
// bounded by the in-flight records and the number of batches, never by the
// batches' ranges.
func (p *Partition) Acknowledge(member string, now time.Time, batches []AckBatch, allowRenew bool, cfg Config) error {
	if err := CheckAckBatches(batches, allowRenew); err != nil {
		return err
	}
	if !cfg.RenewEnabled {
		for _, b := range batches {
			if slices.Contains(b.Types, AckRenew) {
				return ErrInvalidRecordState
			}
		}
	}
	next := p.Next()
	total := 0
	for _, b := range batches {
		if b.Last < p.start {
			return ErrInvalidRecordState
		}
		if b.Last >= next {
			return ErrInvalidRequest
		}
		// Within the in-flight window, more offsets than it holds means
		// some offset is named twice.
		total += int(b.Last - max(b.First, p.start) + 1)
		if total > len(p.recs) {
			return ErrInvalidRecordState
		}
	}
	// Every offset acquired by member and named once (batches that touch
	// would apply one offset twice). The bitmap is bounded by the in-flight
	// window.
	seen := make([]uint64, (len(p.recs)+63)/64)
	for _, b := range batches {
		for off := max(b.First, p.start); off <= b.Last; off++ {
			i := off - p.start
			if seen[i/64]&(1<<(i%64)) != 0 {
				return ErrInvalidRecordState
			}
			seen[i/64] |= 1 << (i % 64)
			r := &p.recs[i]
			if r.state != Acquired || r.owner != member {
				return ErrInvalidRecordState
			}
		}
	}
	t := now.UnixNano()
	for _, b := range batches {
		for off := max(b.First, p.start); off <= b.Last; off++ {
			ty := b.Types[0]
			if len(b.Types) > 1 {
				ty = b.Types[off-b.First]
			}
			r := &p.recs[off-p.start]
			switch ty {
			case AckAccept:
				r.state, r.owner, r.lockUntil = Acknowledged, "", 0
				p.stats.Accepted++
			case AckReject:
				r.state, r.owner, r.lockUntil = Archived, "", 0
				p.dead = append(p.dead, DeadLetter{Offset: off, Deliveries: r.deliveries, Rejected: true})
				p.stats.Archived++
				p.stats.Rejected++
			case AckGap:
				r.state, r.owner, r.lockUntil = Archived, "", 0
				p.stats.Archived++
			case AckRelease:
				p.stats.Released++
				p.release(r, off, t, &cfg)
			case AckRenew:
				r.lockUntil = t + int64(cfg.LockDuration)
			}
		}
	}
	p.dirty++
	p.advance()
	return nil
}

// ReleaseMember releases every record member holds (its share session or
// connection closed) and reports how many.
func (p *Partition) ReleaseMember(member string, now time.Time, cfg Config) int {
	t := now.UnixNano()
	n := 0
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.owner == member {
			p.release(r, p.start+int64(i), t, &cfg)
			n++
		}
	}
	if n > 0 {
		p.stats.Released += uint64(n)
		p.dirty++
		p.advance()
	}
	return n
}

// ArchiveAcquired archives offsets first..last that member just acquired
// without handing them out: records of aborted transactions under
// read_committed. Offsets not acquired by member are left alone.
func (p *Partition) ArchiveAcquired(member string, first, last int64) {
	first = max(first, p.start)
	last = min(last, p.Next()-1)
	for off := first; off <= last; off++ {
		r := &p.recs[off-p.start]
		if r.state == Acquired && r.owner == member {
			r.state, r.owner, r.lockUntil = Archived, "", 0
			p.stats.Archived++
		}
	}
	p.dirty++
	p.advance()
}

// AdvanceStart moves the start offset to at least logStart (retention or
// DeleteRecords removed what lay below it), forgetting the records before it.
func (p *Partition) AdvanceStart(logStart int64) {
	if logStart <= p.start {
		return
	}
	if logStart >= p.Next() {
		p.start, p.recs = logStart, nil
	} else {
		p.recs = p.recs[logStart-p.start:]
		p.start = logStart
	}
	p.dirty++
	p.advance()
}
