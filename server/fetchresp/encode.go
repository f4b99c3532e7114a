package fetchresp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/sluice/sluice/zerocopy"
)

// Errors returned by Write; classify with errors.Is.
var (
	// ErrVersion: the version is outside MinVersion..MaxVersion.
	ErrVersion = errors.New("fetchresp: unsupported version")
	// ErrTooLarge: a string, a records field or the whole response does
	// not fit its length field.
	ErrTooLarge = errors.New("fetchresp: field too large")
)

// Write encodes r as a complete Fetch response frame of the given version:
// the 4-byte size prefix, the response header (correlationID; from v12 the
// flexible header v1 with an empty tag buffer), then the body. Framing bytes
// are appended to w and each partition's Records slice is added to w after
// its length, so nothing is sent until w.Flush.
//
// Ownership: Write takes every Partition.Records of r, whatever it returns:
// on success they belong to w (which Releases them after sending), on error
// they are released and w holds nothing of this response. r itself is not
// retained.
//
// Errors: ErrVersion, ErrTooLarge. Write allocates nothing beyond growing
// w's buffers.
func Write(w *zerocopy.Writer, version int16, correlationID int32, r *Response) error {
	if err := check(version, r); err != nil {
		r.release()
		return err
	}
	flex := version >= firstFlexible
	mark := w.Mark()
	b := w.Frame()
	start := len(b)
	b = append(b, 0, 0, 0, 0) // size, patched below
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	if flex {
		b = append(b, 0) // header tags
	}
	b = binary.BigEndian.AppendUint32(b, uint32(r.ThrottleMillis))
	if version >= 7 {
		b = binary.BigEndian.AppendUint16(b, uint16(r.ErrorCode))
		b = binary.BigEndian.AppendUint32(b, uint32(r.SessionID))
	}
	var sliceBytes int64
	b = appendArrayLen(b, len(r.Topics), flex)
	for ti := range r.Topics {
		t := &r.Topics[ti]
		if version >= 13 {
			b = append(b, t.ID[:]...)
		} else {
			b = appendString(b, t.Name, flex)
		}
		b = appendArrayLen(b, len(t.Partitions), flex)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			b = appendPartitionHead(b, version, p)
			n := p.Records.Len()
			if flex {
				b = binary.AppendUvarint(b, uint64(n)+1)
			} else {
				b = binary.BigEndian.AppendUint32(b, uint32(n))
			}
			w.SetFrame(b)
			w.AddSlice(p.Records)
			b = w.Frame()
			sliceBytes += n
			if flex {
				b = appendPartitionTags(b, p)
			}
		}
		if flex {
			b = append(b, 0) // topic tags
		}
	}
	if flex {
		b = appendResponseTags(b, version, r)
	}
	size := int64(len(b)-start-4) + sliceBytes
	w.SetFrame(b)
	if size > math.MaxInt32 {
		w.Rollback(mark)
		return fmt.Errorf("%w: response of %d bytes", ErrTooLarge, size)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(size))
	return nil
}

// check validates what Write cannot undo half way: the version and every
// length field.
func check(version int16, r *Response) error {
	if version < MinVersion || version > MaxVersion {
		return fmt.Errorf("%w: %d (serving %d..%d)", ErrVersion, version, MinVersion, MaxVersion)
	}
	for ti := range r.Topics {
		t := &r.Topics[ti]
		if version < 13 && len(t.Name) > math.MaxInt16 {
			return fmt.Errorf("%w: topic name of %d bytes", ErrTooLarge, len(t.Name))
		}
		for pi := range t.Partitions {
			if n := t.Partitions[pi].Records.Len(); n >= math.MaxInt32 {
				return fmt.Errorf("%w: %d bytes of records for %q partition %d", ErrTooLarge, n, t.Name, t.Partitions[pi].Partition)
			}
		}
	}
	return nil
}

// appendPartitionHead appends a partition's fields before its records.
func appendPartitionHead(b []byte, version int16, p *Partition) []byte {
	flex := version >= firstFlexible
	b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
	b = binary.BigEndian.AppendUint16(b, uint16(p.ErrorCode))
	b = binary.BigEndian.AppendUint64(b, uint64(p.HighWatermark))
	b = binary.BigEndian.AppendUint64(b, uint64(p.LastStableOffset))
	if version >= 5 {
		b = binary.BigEndian.AppendUint64(b, uint64(p.LogStartOffset))
	}
	switch {
	case p.AbortedTransactions == nil && flex:
		b = append(b, 0)
	case p.AbortedTransactions == nil:
		b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1: null
	default:
		b = appendArrayLen(b, len(p.AbortedTransactions), flex)
		for _, a := range p.AbortedTransactions {
			b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
			b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
			if flex {
				b = append(b, 0)
			}
		}
	}
	if version >= 11 {
		b = binary.BigEndian.AppendUint32(b, uint32(p.PreferredReadReplica))
	}
	return b
}

// appendPartitionTags appends a partition's tag buffer. Each tag body has a
// fixed size below 128, so its size is one uvarint byte.
func appendPartitionTags(b []byte, p *Partition) []byte {
	var n byte
	if p.DivergingEpoch != nil {
		n++
	}
	if p.CurrentLeader != nil {
		n++
	}
	if p.SnapshotID != nil {
		n++
	}
	b = append(b, n)
	if e := p.DivergingEpoch; e != nil {
		b = append(b, 0, 4+8+1)
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.EndOffset))
		b = append(b, 0)
	}
	if l := p.CurrentLeader; l != nil {
		b = append(b, 1, 4+4+1)
		b = binary.BigEndian.AppendUint32(b, uint32(l.LeaderID))
		b = binary.BigEndian.AppendUint32(b, uint32(l.LeaderEpoch))
		b = append(b, 0)
	}
	if s := p.SnapshotID; s != nil {
		b = append(b, 2, 8+4+1)
		b = binary.BigEndian.AppendUint64(b, uint64(s.EndOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(s.Epoch))
		b = append(b, 0)
	}
	return b
}

// appendResponseTags appends the top-level tag buffer: v16+ node endpoints.
func appendResponseTags(b []byte, version int16, r *Response) []byte {
	if version < 16 || len(r.NodeEndpoints) == 0 {
		return append(b, 0)
	}
	b = append(b, 1, 0) // one tag: tag 0
	size := uvarintLen(uint64(len(r.NodeEndpoints)) + 1)
	for i := range r.NodeEndpoints {
		e := &r.NodeEndpoints[i]
		size += 4 + compactStringLen(len(e.Host)) + 4 + 1
		if e.Rack == nil {
			size++
		} else {
			size += compactStringLen(len(*e.Rack))
		}
	}
	b = binary.AppendUvarint(b, uint64(size))
	b = binary.AppendUvarint(b, uint64(len(r.NodeEndpoints))+1)
	for i := range r.NodeEndpoints {
		e := &r.NodeEndpoints[i]
		b = binary.BigEndian.AppendUint32(b, uint32(e.NodeID))
		b = appendString(b, e.Host, true)
		b = binary.BigEndian.AppendUint32(b, uint32(e.Port))
		if e.Rack == nil {
			b = append(b, 0)
		} else {
			b = appendString(b, *e.Rack, true)
		}
		b = append(b, 0)
	}
	return b
}

// appendArrayLen appends an array length: int32, or uvarint n+1 when flexible.
func appendArrayLen(b []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// appendString appends a STRING (int16 length) or, when flexible, a
// COMPACT_STRING (uvarint length+1).
func appendString(b []byte, s string, flex bool) []byte {
	if flex {
		b = binary.AppendUvarint(b, uint64(len(s))+1)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	}
	return append(b, s...)
}

func compactStringLen(n int) int { return uvarintLen(uint64(n)+1) + n }

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
