package sharecoord

// Sluice's dead-letter bookkeeping of a share partition (KIP-1191 topics,
// written exactly once per archived record across failovers), kept beside
// Kafka's fields in a tagged field of ShareSnapshotValue (tag TagDLQ) and
// of the persister APIs' partitions (WriteShareGroupState's request,
// ReadShareGroupState's answer), which Kafka's readers skip. Part of the
// on-disk format: do not change. Integers are big-endian.
//
//	+-----------------+------------------+---------------+---------------+
//	| producerId i64  | producerEpoch i16| nextSeq i32   | chunks uvarint|
//	+-----------------+------------------+---------------+---------------+
//	chunk:  | baseSeq i32 | letters uvarint | letter... |
//	letter: | offset i64 | deliveries i16 | rejected i8 |
//
// The protocol (server/share_dlq.go): dead letters are first written into
// the state as a pending chunk, with the sequence it will carry, together
// with the archiving of their records; then each pending chunk is appended
// to the dead-letter topic as one idempotent batch of producer
// (producerId, producerEpoch) at its sequence. A chunk appended and not yet
// known to be is appended again after a failover with the same producer
// and sequences, which the partition answers as a duplicate: the dead
// letters land once.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/sluice/sluice/group/share"
)

// TagDLQ is the tag of the dead-letter bookkeeping. Part of the on-disk
// and wire format: do not change. Far above the tags Kafka uses.
const TagDLQ = 0x51ce

// letterSize is the least a letter takes.
const letterSize = 8 + 2 + 1

// DLQChunk is dead letters to append as one batch, the first at sequence
// BaseSeq.
type DLQChunk struct {
	BaseSeq int32
	Letters []share.DeadLetter
}

// DLQState is a share partition's dead-letter bookkeeping.
type DLQState struct {
	ProducerID    int64
	ProducerEpoch int16
	NextSeq       int32      // the sequence of the next chunk
	Pending       []DLQChunk // in order: Pending[0] is appended first
}

// Clone returns a deep copy (nil for nil).
func (d *DLQState) Clone() *DLQState {
	if d == nil {
		return nil
	}
	c := *d
	c.Pending = make([]DLQChunk, len(d.Pending))
	for i, ch := range d.Pending {
		c.Pending[i] = DLQChunk{BaseSeq: ch.BaseSeq, Letters: append([]share.DeadLetter(nil), ch.Letters...)}
	}
	return &c
}

// AppendDLQ appends d's encoding.
func AppendDLQ(dst []byte, d *DLQState) []byte {
	dst = kbin.AppendInt64(dst, d.ProducerID)
	dst = kbin.AppendInt16(dst, d.ProducerEpoch)
	dst = kbin.AppendInt32(dst, d.NextSeq)
	dst = kbin.AppendUvarint(dst, uint32(len(d.Pending)))
	for _, ch := range d.Pending {
		dst = kbin.AppendInt32(dst, ch.BaseSeq)
		dst = kbin.AppendUvarint(dst, uint32(len(ch.Letters)))
		for _, l := range ch.Letters {
			dst = kbin.AppendInt64(dst, l.Offset)
			dst = kbin.AppendInt16(dst, l.Deliveries)
			rej := int8(0)
			if l.Rejected {
				rej = 1
			}
			dst = kbin.AppendInt8(dst, rej)
		}
	}
	return dst
}

// DecodeDLQ decodes what AppendDLQ wrote; counts beyond what the input can
// hold allocate nothing and fail.
func DecodeDLQ(b []byte) (*DLQState, error) {
	r := kbin.Reader{Src: b}
	d := &DLQState{ProducerID: r.Int64(), ProducerEpoch: r.Int16(), NextSeq: r.Int32()}
	n := int(r.Uvarint())
	if n < 0 || n > len(r.Src)/5 {
		return nil, fmt.Errorf("%w: %d dead-letter chunks in %d bytes", ErrCorrupt, n, len(r.Src))
	}
	for range n {
		ch := DLQChunk{BaseSeq: r.Int32()}
		m := int(r.Uvarint())
		if m < 0 || m > len(r.Src)/letterSize {
			return nil, fmt.Errorf("%w: %d dead letters in %d bytes", ErrCorrupt, m, len(r.Src))
		}
		ch.Letters = make([]share.DeadLetter, 0, m)
		for range m {
			l := share.DeadLetter{Offset: r.Int64(), Deliveries: r.Int16()}
			switch r.Int8() {
			case 0:
			case 1:
				l.Rejected = true
			default:
				return nil, fmt.Errorf("%w: dead letter flag", ErrCorrupt)
			}
			ch.Letters = append(ch.Letters, l)
		}
		d.Pending = append(d.Pending, ch)
	}
	if err := r.Complete(); err != nil || len(r.Src) != 0 {
		return nil, fmt.Errorf("%w: dead-letter state of %d bytes: %v", ErrCorrupt, len(b), err)
	}
	return d, nil
}
