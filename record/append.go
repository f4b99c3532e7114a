package record

import (
	"errors"
	"fmt"
	"math"
)

// DecompressFactor is how many times a topic's max.message.bytes one
// compressed batch may expand to (DecompressBound). Kafka sets no such
// bound; it is a guard against decompression bombs that honest producers do
// not reach: producers cap a batch's uncompressed size near 1 MiB
// (franz-go's ProducerBatchMaxBytes, librdkafka's batch.size) or its
// estimated compressed size at batch.size (16 KiB, Java), so at the default
// max.message.bytes the bound, 64 MiB, sits far above real batches while
// capping the CPU one batch can cost at tens of milliseconds.
const DecompressFactor = 64

// DefaultMaxMessageBytes is Kafka's message.max.bytes default.
const DefaultMaxMessageBytes = 1048588

// NoTimestampLimit is Kafka's default for message.timestamp.before.max.ms
// and after.max.ms (Long.MAX_VALUE): no bound on that side.
const NoTimestampLimit = math.MaxInt64

// DecompressBound is the decompressed size allowed to one batch of a topic
// whose max.message.bytes is maxMessageBytes (<= 0, unlimited to the
// engine: Kafka's default).
func DecompressBound(maxMessageBytes int) int64 {
	if maxMessageBytes <= 0 {
		maxMessageBytes = DefaultMaxMessageBytes
	}
	return int64(max(maxMessageBytes, HeaderSize)) * DecompressFactor
}

// Rules are the topic settings a client's batches are checked against on
// append (ValidateAppend). The zero value bounds timestamps to exactly Now,
// as Kafka's 0 does; start from DefaultRules.
type Rules struct {
	// MaxDecompressed bounds the records block of one compressed batch,
	// decompressed: DecompressBound(max.message.bytes). <= 0: the bound of
	// Kafka's default max.message.bytes.
	MaxDecompressed int64
	// LogAppendTime: the topic's message.timestamp.type is LogAppendTime;
	// its record timestamps are not checked (the broker overwrites them).
	LogAppendTime bool
	// TimestampBeforeMax and TimestampAfterMax are the topic's effective
	// message.timestamp.before.max.ms and after.max.ms (each falling back
	// to message.timestamp.difference.max.ms, as Kafka's LogConfig does):
	// how far a CreateTime timestamp may lie before or after Now.
	// NoTimestampLimit leaves a side open. Must not be negative.
	TimestampBeforeMax, TimestampAfterMax int64
	// Now is the broker clock (ms) that timestamps are checked against.
	Now int64
	// RequireKeys: the topic's cleanup.policy includes compact, so every
	// record must have a key (a null key is ErrNoKey; an empty key
	// passes), as Kafka's LogValidator.validateKey has it.
	RequireKeys bool
	// Pre is what the caller has already checked of these very bytes;
	// set per call, never in a topic's stored rules.
	Pre Prechecked
}

// Prechecked is what a caller checked of a records field as it read it:
// the server does while a Produce request arrives, when its bytes are in
// the CPU's cache, which they no longer are when the partition validates
// them (server/crcscan.go). ValidateAppend then checks the rest.
type Prechecked struct {
	// CRC: every batch's CRC-32C matched.
	CRC bool
	// Records: every batch is uncompressed and its records were walked
	// whole (ScanRecord): well formed, offset deltas 0..recordCount-1,
	// ending at the batch's end. MinTs and MaxTs then bound the records'
	// timestamps other than NoTimestamp (MinTs > MaxTs: there were none)
	// and NullKey says whether one of them had a null key: all that a
	// topic's rules ask of the records.
	Records      bool
	MinTs, MaxTs int64
	NullKey      bool
}

// StartRecords starts p's record facts: Records set, no timestamps, no
// null key.
func (p *Prechecked) StartRecords() {
	p.Records, p.MinTs, p.MaxTs, p.NullKey = true, math.MaxInt64, math.MinInt64, false
}

// Note adds one walked record, its timestamp and whether its key is null.
func (p *Prechecked) Note(ts int64, nullKey bool) {
	if ts != NoTimestamp {
		p.MinTs, p.MaxTs = min(p.MinTs, ts), max(p.MaxTs, ts)
	}
	p.NullKey = p.NullKey || nullKey
}

// fits reports whether the walked records pass the window and the key
// rule: when they do not, the records are walked again for the error.
func (p *Prechecked) fits(w tsWindow, requireKeys bool) bool {
	if !p.Records || requireKeys && p.NullKey {
		return false
	}
	return !w.on || p.MinTs > p.MaxTs || p.MinTs >= w.lo && p.MaxTs <= w.hi
}

// ScanRecord reads the record at the start of b as ValidateAppend's walk
// does: its size, timestamp and offset deltas, whether its key is null,
// and ok false where the record is malformed. It does not allocate.
func ScanRecord(b []byte) (size int, tsDelta, offsetDelta int64, nullKey, ok bool) {
	return scanRecord(b)
}

// DefaultRules are Kafka's defaults: CreateTime, no timestamp bounds, the
// decompression bound of the default max.message.bytes.
func DefaultRules() Rules {
	return Rules{
		MaxDecompressed:    DecompressBound(DefaultMaxMessageBytes),
		TimestampBeforeMax: NoTimestampLimit,
		TimestampAfterMax:  NoTimestampLimit,
	}
}

// window is the CreateTime range of r, saturating instead of wrapping.
func (r *Rules) window() tsWindow {
	before, after := max(r.TimestampBeforeMax, 0), max(r.TimestampAfterMax, 0)
	if before == NoTimestampLimit && after == NoTimestampLimit {
		return tsWindow{}
	}
	w := tsWindow{on: true, lo: math.MinInt64, hi: math.MaxInt64}
	if r.Now >= math.MinInt64+before {
		w.lo = r.Now - before
	}
	if r.Now <= math.MaxInt64-after {
		w.hi = r.Now + after
	}
	return w
}

// ValidateAppend validates the batches of one produce request partition,
// back to back in buf, completely: what ValidateAll checks, and then for
// every batch, compressed or not, that its records parse and fill the
// records block exactly (a compressed block through a pooled streaming
// decoder, never holding more than a fixed buffer and never decompressing
// more than r.MaxDecompressed bytes), that their offset deltas are
// 0..recordCount-1, and that their timestamps obey r as Kafka's
// LogValidator.validateTimestamp has them:
//
//   - on a LogAppendTime topic, a batch with the LogAppendTime bit set by
//     the producer is ErrInvalidTimestamp, and nothing else is checked;
//   - on a CreateTime topic, a LogAppendTime batch's maxTimestamp stands
//     for every record (-1 is ErrInvalidTimestamp), otherwise each record's
//     baseTimestamp+timestampDelta is checked; a timestamp outside
//     [Now-TimestampBeforeMax, Now+TimestampAfterMax] is ErrInvalidTimestamp,
//     and -1 (no timestamp) passes;
//   - when r.RequireKeys, a record with a null key is ErrNoKey, checked
//     whatever the timestamp type.
//
// r nil means DefaultRules. Errors are *BatchError with Pos relative to buf.
// An uncompressed batch does not allocate; a compressed one allocates only
// when a pool is empty. Safe for concurrent use.
func ValidateAppend(buf []byte, r *Rules) (batches int, records int64, err error) {
	if r == nil {
		d := DefaultRules()
		r = &d
	}
	w := r.window()
	return validateAll(buf, func(b []byte) (int, error) { return validateAppend(b, r, w) })
}

func validateAppend(b []byte, r *Rules, w tsWindow) (int, error) {
	size, err := validateShallow(b, !r.Pre.CRC)
	if err != nil {
		return 0, err
	}
	bt := Batch(b[:size])
	if w, err = batchTimestamps(bt, r, w); err != nil {
		return 0, err
	}
	if bt.Codec() == CodecNone {
		if !r.Pre.fits(w, r.RequireKeys) {
			err = walkRecords(bt.Records(), bt.RecordCount(), bt.BaseTimestamp(), w, r.RequireKeys)
		}
	} else {
		err = walkCompressed(bt, r.MaxDecompressed, w, r.RequireKeys)
	}
	if err != nil {
		return 0, err
	}
	return size, nil
}

// batchTimestamps applies the batch-level timestamp rules of
// ValidateAppend and returns the window each record must then be checked
// against (off when the records need no check).
func batchTimestamps(bt Batch, r *Rules, w tsWindow) (tsWindow, error) {
	switch {
	case r.LogAppendTime && bt.LogAppendTime():
		return tsWindow{}, &BatchError{Kind: ErrInvalidTimestamp, Reason: "producer set timestamp type LogAppendTime"}
	case r.LogAppendTime:
		return tsWindow{}, nil
	case bt.LogAppendTime():
		if bt.MaxTimestamp() == NoTimestamp {
			return tsWindow{}, &BatchError{Kind: ErrInvalidTimestamp, Reason: "producer set timestamp type LogAppendTime"}
		}
		return tsWindow{}, w.check(0, bt.MaxTimestamp())
	}
	return w, nil
}

// walkCompressed streams the records block of bt through a decoder and
// checks the records as walkRecords does; the block must end right after
// the last record.
func walkCompressed(bt Batch, limit int64, w tsWindow, requireKey bool) error {
	if limit <= 0 {
		limit = DecompressBound(DefaultMaxMessageBytes)
	}
	d, err := openDecoder(bt.Codec(), bt.Records(), limit)
	if err != nil {
		return streamError(-1, err, limit)
	}
	defer d.close()
	s := streamPool.Get().(*recordStream)
	defer func() { s.reset(nil); streamPool.Put(s) }()
	s.reset(d)
	count, baseTs := bt.RecordCount(), bt.BaseTimestamp()
	var rec streamRecord
	for i := int32(0); i < count; i++ {
		if err := s.next(&rec); err != nil {
			return streamError(i, err, limit)
		}
		if err := checkRecord(i, rec.OffsetDelta, baseTs+rec.TimestampDelta, w, requireKey && rec.NullKey); err != nil {
			// A stream damaged past its checksum decodes to garbage
			// before the checksum is met: a rule broken by garbage is
			// corruption. Drain the (bounded) stream to tell.
			if derr := s.drain(); derr != nil {
				return streamError(i, derr, limit)
			}
			return err
		}
	}
	if !s.atEnd() {
		if s.pos < s.end {
			return &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("bytes after record %d in the decompressed records", count-1)}
		}
		return streamError(-1, s.err, limit)
	}
	return nil
}

// streamError classifies an error met while decompressing record i (-1:
// outside a record) with the given bound.
func streamError(i int32, err error, limit int64) error {
	kind := ErrCorrupt
	if errors.Is(err, errTooBig) {
		kind = ErrTooLarge
		err = fmt.Errorf("records decompress past %d bytes", limit)
	}
	if i < 0 {
		return &BatchError{Kind: kind, Reason: err.Error()}
	}
	return &BatchError{Kind: kind, Reason: fmt.Sprintf("record %d: %v", i, err)}
}
