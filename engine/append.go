package engine

import (
	"fmt"

	"github.com/sluice/sluice/record"
)

// PrepareAppend validates every batch in buf and rewrites the fields the
// broker owns, numbering the batches from next. A follower's batches
// (AssignOffsets false) keep their offsets, which must increase from next
// on, with gaps allowed: a leader's compacted log has them (Kafka's
// appendAsFollower refuses only offsets below the log end). It is the one place backends
// turn client bytes into log bytes; on error buf may be partly rewritten but
// nothing should be appended. It does not allocate.
//
// Validation runs over all batches before any is rewritten, so the CRC is
// always checked against the bytes the client sent.
func PrepareAppend(buf []byte, next int64, opts AppendOptions, maxBatchBytes int) (AppendInfo, error) {
	var info AppendInfo
	if opts.Prevalidated {
		if err := checkFraming(buf); err != nil {
			return info, err
		}
	} else if opts.AssignOffsets {
		if _, _, err := record.ValidateAll(buf); err != nil {
			return info, err
		}
	} else if _, _, err := record.ValidateAllReplicated(buf); err != nil {
		// A follower copies the leader's log, which may be cleaned; it
		// checks CRCs but does not walk data batches' records, as Kafka's
		// follower does not (record.ValidateReplicated).
		return info, err
	}
	info.FirstOffset = next
	info.MaxTimestamp = -1
	for pos := 0; pos < len(buf); {
		b := record.Batch(buf[pos:])
		size := b.Size()
		b = b[:size]
		if maxBatchBytes > 0 && size > maxBatchBytes {
			return info, fmt.Errorf("%w: batch at byte %d is %d bytes, max.message.bytes is %d", ErrBatchTooLarge, pos, size, maxBatchBytes)
		}
		if opts.AssignOffsets {
			b.SetBaseOffset(next)
			b.SetLeaderEpoch(opts.LeaderEpoch)
			if opts.LogAppendTime > 0 {
				b.SetLogAppendTime(opts.LogAppendTime)
			}
		} else if b.BaseOffset() < next {
			return info, fmt.Errorf("%w: batch at byte %d has base offset %d, below %d", ErrOffsetMismatch, pos, b.BaseOffset(), next)
		} else if pos == 0 {
			info.FirstOffset = b.BaseOffset()
		}
		if ts := b.MaxTimestamp(); ts >= info.MaxTimestamp {
			info.MaxTimestamp = ts
			info.MaxTimestampOffset = b.LastOffset()
		}
		info.Batches++
		info.Records += int64(b.RecordCount())
		next = b.NextOffset()
		pos += size
	}
	info.LastOffset = next - 1
	return info, nil
}

// checkFraming walks the batch lengths of buf: every batch must have a
// whole header, magic 2, and end inside buf, with buf ending on a batch.
func checkFraming(buf []byte) error {
	if len(buf) == 0 {
		return &record.BatchError{Kind: record.ErrCorrupt, Reason: "no record batch"}
	}
	for pos := 0; pos < len(buf); {
		size, ok := record.PeekSize(buf[pos:])
		if !ok || size < record.HeaderSize || size > len(buf)-pos || record.Batch(buf[pos:]).Magic() != record.Magic {
			return &record.BatchError{Pos: pos, Kind: record.ErrCorrupt, Reason: "batch framing does not match the bytes"}
		}
		pos += size
	}
	return nil
}

// ContinuesLog reports whether a batch at base may follow a log whose next
// offset is next: at next exactly, or past it when the log has gaps (it is
// compacted, or a follower copies a compacted leader). Recovery scans stop
// at the first batch that does not.
func ContinuesLog(base, next int64, gaps bool) bool {
	return base == next || (gaps && base > next)
}
