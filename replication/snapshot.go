package replication

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// Producer-state snapshots
//
// Kafka's ProducerStateManager writes the producer table to a snapshot at
// each segment roll and at clean shutdown, so that a restart loads the
// latest snapshot and replays the log only from its offset. This file
// holds the format (Kafka's .snapshot, version 1, so the files are
// Kafka's); the storage is the log's (engine.SnapshotStore), and when to
// snapshot and how to load is in rebuild.go.
//
// Format (part of the on-disk format, Kafka's: do not change), all
// integers big-endian:
//
//	+-------------+-----------+-------------+-----------------------+
//	| version i16 | crc u32   | count i32   | count x entry (46 B)  |
//	| = 1         | CRC-32C of every byte after the crc field      |
//	+-------------+-----------+-------------+-----------------------+
//
//	entry +-----------+-------+----------+-----------+-------------+
//	      | producer  | epoch | last     | last      | offset      |
//	      | id i64    | i16   | seq i32  | offset i64| delta i32   |
//	      +-----------+-------+----------+-----------+-------------+
//	      | timestamp | coordinator | current txn first offset i64 |
//	      | i64       | epoch i32   | (-1: no open transaction)    |
//	      +-----------+-------------+------------------------------+
//
// An entry keeps only the producer's last batch: (lastSeq, lastOffset)
// and offsetDelta = lastOffset - firstOffset = lastSeq - firstSeq. A
// producer with no batch (known from markers only) has last offset and
// last sequence -1. timestamp is when the producer last appended (ms),
// which expiry uses. Kafka's reader (readSnapshot) checks the version and
// the CRC; a snapshot that fails either is corrupt and the next older one
// is used.
const (
	snapshotVersion   = 1
	snapshotHeader    = 2 + 4 + 4 // version, crc, count
	snapshotCRCEnd    = 6         // the CRC covers bytes from here on
	snapshotEntrySize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
)

// errBadSnapshot marks a snapshot that does not decode.
var errBadSnapshot = errors.New("replication: corrupt producer snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeSnapshot returns s's producers in the snapshot format, ordered
// by producer id. REQUIRES: no round in progress (s.undo empty).
func encodeSnapshot(s *producerState) []byte {
	pids := make([]int64, 0, len(s.producers))
	for pid := range s.producers {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	b := make([]byte, snapshotHeader, snapshotHeader+len(pids)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b, snapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(pids)))
	for _, pid := range pids {
		e := s.producers[pid]
		lastSeq, lastOff, delta := int32(-1), int64(-1), int32(0)
		if m, ok := e.last(); ok {
			lastSeq, lastOff, delta = m.lastSeq, m.lastOffset, int32(m.lastOffset-m.firstOffset)
		}
		txnFirst := int64(-1)
		if e.inTxn {
			txnFirst = e.txnFirst
		}
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(lastOff))
		b = binary.BigEndian.AppendUint32(b, uint32(delta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastMs))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(txnFirst))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[snapshotCRCEnd:], castagnoli))
	return b
}

// snapshotEntry is one decoded entry.
type snapshotEntry struct {
	pid        int64
	epoch      int16
	lastSeq    int32
	lastOffset int64
	delta      int32
	lastMs     int64
	coordEpoch int32
	txnFirst   int64
}

// decodeSnapshot parses a snapshot. Any damage (short, torn, wrong
// version, CRC mismatch, a count that does not match the length, a
// negative offset delta) gives an error wrapping errBadSnapshot.
func decodeSnapshot(b []byte) ([]snapshotEntry, error) {
	if len(b) < snapshotHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", errBadSnapshot, len(b), snapshotHeader)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != snapshotVersion {
		return nil, fmt.Errorf("%w: unknown version %d", errBadSnapshot, v)
	}
	if want, got := binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[snapshotCRCEnd:], castagnoli); want != got {
		return nil, fmt.Errorf("%w: stored crc %#x, computed %#x", errBadSnapshot, want, got)
	}
	n := int64(int32(binary.BigEndian.Uint32(b[6:])))
	if n < 0 || n*snapshotEntrySize != int64(len(b)-snapshotHeader) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errBadSnapshot, n, len(b)-snapshotHeader)
	}
	out := make([]snapshotEntry, n)
	for i := range out {
		p := b[snapshotHeader+i*snapshotEntrySize:]
		e := snapshotEntry{
			pid:        int64(binary.BigEndian.Uint64(p)),
			epoch:      int16(binary.BigEndian.Uint16(p[8:])),
			lastSeq:    int32(binary.BigEndian.Uint32(p[10:])),
			lastOffset: int64(binary.BigEndian.Uint64(p[14:])),
			delta:      int32(binary.BigEndian.Uint32(p[22:])),
			lastMs:     int64(binary.BigEndian.Uint64(p[26:])),
			coordEpoch: int32(binary.BigEndian.Uint32(p[34:])),
			txnFirst:   int64(binary.BigEndian.Uint64(p[38:])),
		}
		if e.delta < 0 || (e.lastOffset >= 0 && e.lastOffset < int64(e.delta)) {
			return nil, fmt.Errorf("%w: producer %d: offset delta %d of last offset %d", errBadSnapshot, e.pid, e.delta, e.lastOffset)
		}
		out[i] = e
	}
	return out, nil
}

// loadSnapshot replaces s's producers with the entries and reports each
// open transaction in s.events, as a rebuild from the log would.
func loadSnapshot(s *producerState, entries []snapshotEntry) {
	clear(s.producers)
	for _, se := range entries {
		e := newProducerEntry(se.epoch)
		e.lastMs, e.coordEpoch = se.lastMs, se.coordEpoch
		if se.lastOffset >= 0 {
			e.push(batchMeta{
				firstSeq: seqMinus(se.lastSeq, se.delta), lastSeq: se.lastSeq,
				firstOffset: se.lastOffset - int64(se.delta), lastOffset: se.lastOffset,
			})
		}
		if se.txnFirst >= 0 {
			e.inTxn, e.txnFirst = true, se.txnFirst
			s.events = append(s.events, txnEvent{pid: se.pid, first: se.txnFirst, marker: -1})
		}
		s.put(se.pid, e)
	}
	// Open transactions in log order, as the tracker expects.
	slices.SortFunc(s.events, func(a, b txnEvent) int { return cmp.Compare(a.first, b.first) })
}

// seqMinus is last - delta in sequence space, which wraps from MaxInt32
// to 0 (Kafka's DefaultRecordBatch.decrementSequence).
func seqMinus(last, delta int32) int32 {
	if last < delta {
		return int32(int64(math.MaxInt32) - int64(delta) + int64(last) + 1)
	}
	return last - delta
}
