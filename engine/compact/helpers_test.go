package compact

import (
	"bytes"
	"testing"

	"github.com/sluice/sluice/record"
)

// kv is one record of a test log: Value nil is a tombstone, Key nil a
// key-less record.
type kv struct {
	Key, Value []byte
	Ts         int64
}

func r(key, value string, ts int64) kv { return kv{Key: []byte(key), Value: []byte(value), Ts: ts} }
func tomb(key string, ts int64) kv     { return kv{Key: []byte(key), Ts: ts} }
func nokey(value string, ts int64) kv  { return kv{Value: []byte(value), Ts: ts} }

// opts are the header fields of a test batch; the zero value is a plain
// non-idempotent uncompressed batch.
type opts struct {
	codec         int
	xerial        bool
	pid           int64
	epoch         int16
	seq           int32
	logAppendTime int64 // > 0: LogAppendTime with this maxTimestamp
	control       bool
	txn           bool // the transactional attribute
}

// appendBatch appends one batch of recs at base to log.
func appendBatch(log []byte, base int64, o opts, recs ...kv) []byte {
	br := make([]record.BuildRecord, len(recs))
	for i, x := range recs {
		br[i] = record.BuildRecord{Key: x.Key, Value: x.Value, Timestamp: x.Ts}
	}
	bo := record.BatchOptions{BaseOffset: base, LeaderEpoch: 3, ProducerID: -1, ProducerEpoch: -1,
		BaseSequence: -1, Codec: o.codec, XerialSnappy: o.xerial}
	if o.pid > 0 {
		bo.ProducerID, bo.ProducerEpoch, bo.BaseSequence = o.pid, o.epoch, o.seq
	}
	if o.control {
		bo.Attributes |= record.ControlBit
	}
	if o.txn {
		bo.Attributes |= record.TransactionalBit
	}
	start := len(log)
	log = record.AppendBatch(log, bo, br)
	if o.logAppendTime > 0 {
		record.Batch(log[start:]).SetLogAppendTime(o.logAppendTime)
	}
	return log
}

// got is one record read back from a log.
type got struct {
	Offset     int64
	Key, Value string
	Tombstone  bool
	Ts         int64
}

// readLog checks log with ValidateCleaned and each batch's CRC, and
// returns its records in order, read with record.Iter (the reader every
// consumer path uses).
func readLog(t testing.TB, log []byte) []got {
	t.Helper()
	if len(log) == 0 {
		return nil
	}
	if _, _, err := ValidateCleaned(log); err != nil {
		t.Fatalf("ValidateCleaned: %v", err)
	}
	var out []got
	var it record.Iter
	for pos := 0; pos < len(log); {
		b := record.Batch(log[pos:])
		b = b[:b.Size()]
		if b.ComputeCRC() != b.CRC() {
			t.Fatalf("batch at %d: bad crc", pos)
		}
		for it.Reset(b); it.Next(); {
			rec := it.Record()
			out = append(out, got{Offset: it.Offset(), Key: string(rec.Key), Value: string(rec.Value),
				Tombstone: rec.Value == nil, Ts: it.Timestamp()})
		}
		if err := it.Err(); err != nil {
			t.Fatalf("batch at %d: %v", pos, err)
		}
		pos += b.Size()
	}
	return out
}

// batchesOf splits log into its batches.
func batchesOf(log []byte) []record.Batch {
	var out []record.Batch
	for pos := 0; pos < len(log); {
		b := record.Batch(log[pos:])
		b = b[:b.Size()]
		out = append(out, b)
		pos += b.Size()
	}
	return out
}

// clean runs one round over log with a map of the given memory: Build
// from start, then Filter.
func clean(t testing.TB, log []byte, memory int, start int64, rules Rules) ([]byte, Stats) {
	t.Helper()
	m := NewOffsetMap(memory)
	if _, _, err := Build(m, log, start); err != nil {
		t.Fatalf("Build: %v", err)
	}
	out, st, err := Filter(nil, m, log, &rules)
	if err != nil {
		t.Fatalf("Filter: %v", err)
	}
	return out, st
}

// containsBatch reports whether b appears byte for byte in log.
func containsBatch(log []byte, b []byte) bool { return bytes.Contains(log, b) }
