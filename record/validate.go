package record

import (
	"errors"
	"fmt"
)

// Errors returned by Validate. ErrCorrupt means the bytes are not what the
// producer sent (a Kafka broker answers CORRUPT_MESSAGE); ErrInvalid means the
// batch is well formed but breaks a rule (INVALID_RECORD); ErrUnsupported
// means a magic other than 2 (UNSUPPORTED_FOR_MESSAGE_FORMAT).
var (
	ErrCorrupt     = errors.New("record: corrupt batch")
	ErrInvalid     = errors.New("record: invalid batch")
	ErrUnsupported = errors.New("record: unsupported magic")
)

// MaxBatchSize bounds batchLength so that a damaged length field can never
// make a reader allocate or scan gigabytes. Kafka's message.max.bytes is far
// below this.
const MaxBatchSize = 1 << 30

// BatchError says which batch of a request or log failed validation and why.
// It wraps one of ErrCorrupt, ErrInvalid or ErrUnsupported.
type BatchError struct {
	Pos    int   // byte position of the batch in the buffer that was validated
	Kind   error // ErrCorrupt, ErrInvalid or ErrUnsupported
	Reason string
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", e.Kind, e.Pos, e.Reason)
}

func (e *BatchError) Unwrap() error { return e.Kind }

// Validate checks the batch at the start of b and returns its size. It checks,
// in order: the header fits, batchLength is consistent with the bytes, the
// magic is 2, the CRC-32C over [21, end) matches, recordCount equals
// lastOffsetDelta+1 and neither is negative, and for uncompressed batches
// that the records walk exactly the declared span with non-negative offset
// deltas. It does not allocate on success.
//
// Validate is what a broker runs on every batch a client sends; recovery runs
// it on every batch past the recovery point.
func Validate(b []byte) (int, error) {
	size, err := validateHeader(b)
	if err != nil {
		return 0, err
	}
	bt := Batch(b[:size])
	if got, want := bt.ComputeCRC(), bt.CRC(); got != want {
		return 0, &BatchError{Kind: ErrCorrupt, Reason: fmt.Sprintf("crc mismatch: stored %08x, computed %08x", want, got)}
	}
	if err := validateBody(bt); err != nil {
		return 0, err
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

func validateBody(bt Batch) error {
	lod := bt.LastOffsetDelta()
	count := bt.RecordCount()
	if lod < 0 {
		return &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("negative lastOffsetDelta %d", lod)}
	}
	if count != lod+1 {
		return &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("recordCount %d != lastOffsetDelta+1 (%d)", count, lod+1)}
	}
	if bt.Codec() > CodecZstd {
		return &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("unknown compression codec %d", bt.Codec())}
	}
	if bt.Codec() != CodecNone {
		// The records of a compressed batch are checked when something
		// needs them (the CRC already proves they are what was sent).
		return nil
	}
	return walkRecords(bt.Records(), count)
}

// walkRecords checks that raw (uncompressed) record bytes hold exactly count
// well-formed records with non-negative, increasing offset deltas, without
// allocating.
func walkRecords(raw []byte, count int32) error {
	prevDelta := int64(-1)
	for i := int32(0); i < count; i++ {
		var r Record
		n, err := parseRecord(raw, &r)
		if err != nil {
			return &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("record %d: %v", i, err)}
		}
		if r.OffsetDelta <= prevDelta {
			return &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("record %d: offset delta %d not above %d", i, r.OffsetDelta, prevDelta)}
		}
		if r.OffsetDelta > int64(count-1) {
			return &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("record %d: offset delta %d past lastOffsetDelta %d", i, r.OffsetDelta, count-1)}
		}
		prevDelta = r.OffsetDelta
		raw = raw[n:]
	}
	if len(raw) != 0 {
		return &BatchError{Kind: ErrInvalid, Reason: fmt.Sprintf("%d bytes after the last record", len(raw))}
	}
	return nil
}

// ValidateAll validates every batch in buf, which must hold whole batches back
// to back, and returns the number of batches and records. A BatchError's Pos
// is relative to buf.
func ValidateAll(buf []byte) (batches int, records int64, err error) {
	pos := 0
	for pos < len(buf) {
		n, err := Validate(buf[pos:])
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
