package record

import (
	"errors"
	"fmt"
)

// Errors returned by Validate and ValidateAppend, each the kind of a
// BatchError, mapped to a Kafka error code where the response is built:
//
//	ErrCorrupt           the bytes do not parse as what they claim to be: bad
//	                     CRC, framing, counts, varints, record lengths, trailing
//	                     bytes, a compressed block that does not decompress
//	                     (CORRUPT_MESSAGE)
//	ErrInvalid           well formed but against a rule Kafka enforces:
//	                     recordCount != lastOffsetDelta+1, offset deltas other
//	                     than 0..n-1, an unknown codec (INVALID_RECORD)
//	ErrInvalidTimestamp  a timestamp outside message.timestamp.before/after.max.ms,
//	                     or LogAppendTime set by a producer (INVALID_TIMESTAMP)
//	ErrTooLarge          a compressed block that decompresses past
//	                     Rules.MaxDecompressed (MESSAGE_TOO_LARGE, on which the
//	                     Java producer splits the batch and retries)
//	ErrUnsupported       a magic other than 2 (UNSUPPORTED_FOR_MESSAGE_FORMAT)
//	ErrNoKey             a record with a null key where Rules.RequireKeys
//	                     (a compacted topic) (INVALID_RECORD, as Kafka's
//	                     LogValidator answers)
var (
	ErrCorrupt          = errors.New("record: corrupt batch")
	ErrInvalid          = errors.New("record: invalid batch")
	ErrInvalidTimestamp = errors.New("record: invalid timestamp")
	ErrTooLarge         = errors.New("record: batch decompresses past the limit")
	ErrUnsupported      = errors.New("record: unsupported magic")
	ErrNoKey            = errors.New("record: compacted topic cannot accept message without key")
)

// MaxBatchSize bounds batchLength so that a damaged length field can never
// make a reader allocate or scan gigabytes. Kafka's message.max.bytes is far
// below this.
const MaxBatchSize = 1 << 30

// BatchError says which batch of a request or log failed validation and why.
// It wraps one of the Err kinds above.
type BatchError struct {
	Pos    int   // byte position of the batch in the buffer that was validated
	Kind   error // ErrCorrupt, ErrInvalid, ErrInvalidTimestamp, ErrTooLarge, ErrUnsupported or ErrNoKey
	Reason string
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", e.Kind, e.Pos, e.Reason)
}

func (e *BatchError) Unwrap() error { return e.Kind }

// Validate checks the batch at the start of b and returns its size. It checks,
// in order: the header fits, batchLength is consistent with the bytes, the
// magic is 2, the CRC-32C over [21, end) matches, lastOffsetDelta >= 0 and
// recordCount >= 1 (ErrCorrupt otherwise) and recordCount ==
// lastOffsetDelta+1 (ErrInvalid), the codec is known, and for uncompressed
// batches that the records walk exactly the declared span with offset
// deltas 0..n-1. It does not decompress and does not allocate on success.
//
// Validate is what recovery runs on every batch past the recovery point and
// what a follower's append runs; a batch a client sends gets ValidateAppend,
// which adds the compressed records and the topic's timestamp rules.
func Validate(b []byte) (int, error) {
	size, err := validateShallow(b, true)
	if err != nil {
		return 0, err
	}
	bt := Batch(b[:size])
	if bt.Codec() == CodecNone {
		if err := walkRecords(bt.Records(), bt.RecordCount(), bt.BaseTimestamp(), tsWindow{}, false); err != nil {
			return 0, err
		}
	}
	return size, nil
}

// validateShallow checks everything but the records (and the CRC unless
// crc) and returns the batch size.
func validateShallow(b []byte, crc bool) (int, error) {
	var size int
	var err error
	if crc {
		size, err = validateFramed(b)
	} else {
		size, err = validateHeader(b)
	}
	if err != nil {
		return 0, err
	}
	bt := Batch(b[:size])
	if err := validateCounts(bt); err != nil {
		return 0, err
	}
	if bt.Codec() > CodecZstd {
		return 0, &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("unknown compression codec %d", bt.Codec())}
	}
	return size, nil
}

// validateFramed checks the header and the CRC and returns the batch size.
func validateFramed(b []byte) (int, error) {
	size, err := validateHeader(b)
	if err != nil {
		return 0, err
	}
	bt := Batch(b[:size])
	if got, want := bt.ComputeCRC(), bt.CRC(); got != want {
		return 0, &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("crc mismatch: stored %08x, computed %08x", want, got)}
	}
	return size, nil
}

// validateHeader checks what can be checked without the CRC and returns the
// batch size.
func validateHeader(b []byte) (int, error) {
	if len(b) < HeaderSize {
		return 0, &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("%d bytes left, a batch header needs %d", len(b), HeaderSize)}
	}
	bt := Batch(b)
	length := bt.BatchLength()
	if length < HeaderSize-LogOverhead || length > MaxBatchSize {
		return 0, &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("batchLength %d out of range", length)}
	}
	size := LogOverhead + int(length)
	if size > len(b) {
		return 0, &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("batchLength %d runs past the %d bytes given", length, len(b)-LogOverhead)}
	}
	if m := bt.Magic(); m != Magic {
		return 0, &BatchError{Kind: ErrUnsupported, Reason: fmt.Sprintf("magic %d, only 2 is supported", m)}
	}
	return size, nil
}

// validateCounts checks recordCount against lastOffsetDelta, in int64 so
// that no pair of int32s can wrap into agreement (recordCount MinInt32 with
// lastOffsetDelta MaxInt32 would, in int32). A count or delta no batch can
// have is corrupt; two plausible values that disagree break Kafka's
// LogValidator rule "count of records == lastOffset - baseOffset + 1".
func validateCounts(bt Batch) error {
	lod, count := int64(bt.LastOffsetDelta()), int64(bt.RecordCount())
	switch {
	case lod < 0:
		return &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("negative lastOffsetDelta %d", lod)}
	case count < 1:
		return &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("recordCount %d below 1", count)}
	case count != lod+1:
		return &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("recordCount %d != lastOffsetDelta+1 (%d)", count, lod+1)}
	}
	return nil
}

// tsWindow is the range CreateTime record timestamps must fall in, when on.
// Records with timestamp -1 (Kafka's NO_TIMESTAMP) are not checked, as in
// Kafka's LogValidator.validateTimestamp.
type tsWindow struct {
	on     bool
	lo, hi int64
}

func (w tsWindow) check(i int32, ts int64) error {
	if w.on && ts != NoTimestamp && (ts < w.lo || ts > w.hi) {
		return &BatchError{Kind: ErrInvalidTimestamp, Reason: fmt.Sprintf("record %d: timestamp %d outside [%d, %d]", i, ts, w.lo, w.hi)}
	}
	return nil
}

// walkRecords checks that raw (uncompressed) record bytes hold exactly count
// well-formed records with offset deltas 0..count-1, timestamps inside w
// and, when requireKey, a non-null key, without allocating.
func walkRecords(raw []byte, count int32, baseTs int64, w tsWindow, requireKey bool) error {
	for i := int32(0); i < count; i++ {
		n, tsDelta, offsetDelta, nullKey, ok := scanRecord(raw)
		if !ok {
			return corruptRecord(i, raw)
		}
		if err := checkRecord(i, offsetDelta, baseTs+tsDelta, w, requireKey && nullKey); err != nil {
			return err
		}
		raw = raw[n:]
	}
	if len(raw) != 0 {
		return &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("%d bytes after the last record", len(raw))}
	}
	return nil
}

// corruptRecord is the error for record i at the start of raw, which
// scanRecord refused; parseRecord says why.
func corruptRecord(i int32, raw []byte) error {
	var r Record
	_, err := parseRecord(raw, &r)
	if err == nil { // scanRecord and parseRecord disagree: a bug
		err = errors.New("malformed")
	}
	return &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("record %d: %v", i, err)}
}

// checkRecord applies the rules on one record's offset delta, timestamp
// and key (missingKey: the key is null and the topic requires keys).
// Kafka's LogValidator rewrites a batch whose deltas are not 0..n-1
// (recompressing it); Sluice keeps batches as sent, so it refuses them
// instead.
func checkRecord(i int32, delta, ts int64, w tsWindow, missingKey bool) error {
	if delta != int64(i) {
		return &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("record %d: offset delta %d, want %d", i, delta, i)}
	}
	if missingKey {
		return &BatchError{Kind: ErrNoKey, Reason: fmt.Sprintf("record %d has a null key", i)}
	}
	return w.check(i, ts)
}

// ValidateAll validates every batch in buf, which must hold whole batches back
// to back, and returns the number of batches and records. A BatchError's Pos
// is relative to buf.
func ValidateAll(buf []byte) (batches int, records int64, err error) {
	return validateAll(buf, Validate)
}

func validateAll(buf []byte, validate func([]byte) (int, error)) (batches int, records int64, err error) {
	pos := 0
	for pos < len(buf) {
		n, err := validate(buf[pos:])
		if err != nil {
			var be *BatchError
			if errors.As(err, &be) {
				be.Pos = pos
			}
			return 0, 0, err
		}
		batches++
		records += int64(Batch(buf[pos:]).RecordCount())
		pos += n
	}
	if batches == 0 {
		return 0, 0, &BatchError{Kind: ErrCorrupt, Reason: "no record batch"}
	}
	return batches, records, nil
}

// ValidateStored checks a batch as a log holds it, which may have been
// cleaned (cleanup.policy=compact): everything Validate checks except that
// recordCount may be anything in [0, lastOffsetDelta+1] and the offset
// deltas of uncompressed records must increase strictly within
// [0, lastOffsetDelta], gaps allowed. Kafka's DefaultRecordBatch.ensureValid
// allows the same: a cleaned batch keeps its offset span and loses records,
// and a batch kept only for its producer's state has none. Recovery and
// dump-log use it; a follower's append uses ValidateReplicated and a
// producer's batch gets ValidateAppend.
func ValidateStored(b []byte) (int, error) { return validateStored(b, true) }

// validateStored is ValidateStored, walking an uncompressed batch's
// records only when walk is set.
func validateStored(b []byte, walk bool) (int, error) {
	size, err := validateFramed(b)
	if err != nil {
		return 0, err
	}
	bt := Batch(b[:size])
	lod, count := int64(bt.LastOffsetDelta()), int64(bt.RecordCount())
	if lod < 0 || count < 0 || count > lod+1 {
		return 0, &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("recordCount %d outside [0, lastOffsetDelta+1 = %d]", count, lod+1)}
	}
	if bt.Codec() > CodecZstd {
		return 0, &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("unknown compression codec %d", bt.Codec())}
	}
	if !walk || bt.Codec() != CodecNone {
		return size, nil
	}
	raw, prev := bt.Records(), int64(-1)
	for i := int32(0); i < int32(count); i++ {
		n, _, offsetDelta, _, ok := scanRecord(raw)
		if !ok {
			return 0, corruptRecord(i, raw)
		}
		if offsetDelta <= prev || offsetDelta > lod {
			return 0, &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("record %d: offset delta %d after %d, lastOffsetDelta %d", i, offsetDelta, prev, lod)}
		}
		prev = offsetDelta
		raw = raw[n:]
	}
	if len(raw) != 0 {
		return 0, &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("%d bytes after the last record", len(raw))}
	}
	return size, nil
}

// ValidateAllStored is ValidateAll with ValidateStored's allowance for
// cleaned batches.
func ValidateAllStored(buf []byte) (batches int, records int64, err error) {
	return validateAll(buf, ValidateStored)
}

// ValidateReplicated checks a batch a follower copies from its leader, as
// Kafka's follower append does (UnifiedLog.analyzeAndValidateRecords with
// AppendOrigin.REPLICATION: DefaultRecordBatch.isValid, size and CRC): the
// header and CRC as ValidateStored checks them, with its allowance for
// cleaned batches, but the records of a data batch are not walked; the
// leader walked them when a producer sent them (ValidateAppend), and the
// CRC vouches that these are its bytes. A control batch's records are
// walked as ValidateStored does: the follower reads its marker.
func ValidateReplicated(b []byte) (int, error) {
	return validateStored(b, len(b) >= HeaderSize && Batch(b).Control())
}

// ValidateAllReplicated is ValidateAll with ValidateReplicated's checks:
// what a follower's append runs on a fetched response.
func ValidateAllReplicated(buf []byte) (batches int, records int64, err error) {
	return validateAll(buf, ValidateReplicated)
}
