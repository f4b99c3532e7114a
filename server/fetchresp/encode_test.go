package fetchresp_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/zerocopy"
)

// batches returns n record batches of recs records each, back to back.
func batches(n, recs int) []byte {
	var b []byte
	off := int64(0)
	for i := range n {
		rs := make([]record.BuildRecord, recs)
		for j := range rs {
			rs[j] = record.BuildRecord{Key: []byte(fmt.Sprint("k", i, j)), Value: bytes.Repeat([]byte{byte(j)}, 50+j), Timestamp: 1700000000000 + int64(j)}
		}
		b = record.AppendBatch(b, record.BatchOptions{BaseOffset: off, ProducerID: -1, BaseSequence: -1}, rs)
		off += int64(recs)
	}
	return b
}

// logFile writes data to a segment-like temp file, returning it with the test
// owning one reference.
func logFile(t testing.TB, data []byte) *zerocopy.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	zf := zerocopy.NewFile(f)
	t.Cleanup(func() { zf.Release() })
	return zf
}

// source makes the records Slice of one partition from a range of the log.
type source func(pos, n int) zerocopy.Slice

func fileSource(f *zerocopy.File) source {
	return func(pos, n int) zerocopy.Slice { return zerocopy.FileSlice(f, int64(pos), int64(n)) }
}

func bytesSource(log []byte) source {
	return func(pos, n int) zerocopy.Slice { return zerocopy.BytesSlice(log[pos : pos+n]) }
}

var rack = "rack-a"

// fixture builds the same Fetch response for our encoder and for kmsg:
// several topics, partitions with records, without records, with errors,
// null/empty/non-empty aborted transactions and every tagged field.
func fixture(version int16, log []byte, src source) (*fetchresp.Response, *kmsg.FetchResponse) {
	type part struct {
		p      fetchresp.Partition
		pos, n int
	}
	half := len(log) / 2
	topics := []struct {
		name  string
		id    [16]byte
		parts []part
	}{
		{"orders", [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, []part{
			{p: fetchresp.Partition{Partition: 0, HighWatermark: 1000, LastStableOffset: 990, LogStartOffset: 0, PreferredReadReplica: -1}, pos: 0, n: len(log)},
			{p: fetchresp.Partition{Partition: 1, HighWatermark: 5, LastStableOffset: 5, LogStartOffset: 2, PreferredReadReplica: 3,
				AbortedTransactions: []fetchresp.AbortedTransaction{{ProducerID: 7, FirstOffset: 3}, {ProducerID: 9, FirstOffset: 4}}}, pos: half, n: len(log) - half},
			{p: fetchresp.Partition{Partition: 2, ErrorCode: 6, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1, PreferredReadReplica: -1,
				CurrentLeader: &fetchresp.LeaderIDAndEpoch{LeaderID: 2, LeaderEpoch: 11}}},
		}},
		{"", [16]byte{}, nil},
		{"events", [16]byte{0xff, 0xee}, []part{
			{p: fetchresp.Partition{Partition: 7, HighWatermark: 42, LastStableOffset: 40, LogStartOffset: 1, PreferredReadReplica: -1,
				AbortedTransactions: []fetchresp.AbortedTransaction{},
				DivergingEpoch:      &fetchresp.EpochEndOffset{Epoch: 4, EndOffset: 30},
				SnapshotID:          &fetchresp.SnapshotID{EndOffset: 20, Epoch: 3}}, pos: 0, n: half},
			{p: fetchresp.Partition{Partition: 8, ErrorCode: 1, HighWatermark: 9, LastStableOffset: 9, LogStartOffset: 0, PreferredReadReplica: -1}},
		}},
	}
	r := &fetchresp.Response{ThrottleMillis: 25, ErrorCode: 0, SessionID: 1234}
	k := kmsg.NewPtrFetchResponse()
	k.Version = version
	k.ThrottleMillis, k.SessionID = 25, 1234
	if version >= 16 {
		r.NodeEndpoints = []fetchresp.NodeEndpoint{{NodeID: 2, Host: "broker-2.example", Port: 9092, Rack: &rack}, {NodeID: 3, Host: "127.0.0.1", Port: 19092}}
		for _, e := range r.NodeEndpoints {
			k.Brokers = append(k.Brokers, kmsg.FetchResponseBroker{NodeID: e.NodeID, Host: e.Host, Port: e.Port, Rack: e.Rack})
		}
	}
	for _, tt := range topics {
		t := fetchresp.Topic{Name: tt.name, ID: tt.id}
		kt := kmsg.NewFetchResponseTopic()
		kt.Topic, kt.TopicID = tt.name, tt.id
		for _, pp := range tt.parts {
			p := pp.p
			p.Records = src(pp.pos, pp.n)
			t.Partitions = append(t.Partitions, p)
			kp := kmsg.NewFetchResponseTopicPartition()
			kp.Partition, kp.ErrorCode, kp.HighWatermark = p.Partition, p.ErrorCode, p.HighWatermark
			kp.LastStableOffset, kp.LogStartOffset, kp.PreferredReadReplica = p.LastStableOffset, p.LogStartOffset, p.PreferredReadReplica
			if p.AbortedTransactions != nil {
				kp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				for _, a := range p.AbortedTransactions {
					kp.AbortedTransactions = append(kp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
				}
			}
			if version >= 12 { // kmsg writes the tags whenever flexible
				if e := p.DivergingEpoch; e != nil {
					kp.DivergingEpoch.Epoch, kp.DivergingEpoch.EndOffset = e.Epoch, e.EndOffset
				}
				if l := p.CurrentLeader; l != nil {
					kp.CurrentLeader.LeaderID, kp.CurrentLeader.LeaderEpoch = l.LeaderID, l.LeaderEpoch
				}
				if s := p.SnapshotID; s != nil {
					kp.SnapshotID.EndOffset, kp.SnapshotID.Epoch = s.EndOffset, s.Epoch
				}
			}
			kp.RecordBatches = append([]byte{}, log[pp.pos:pp.pos+pp.n]...)
			kt.Partitions = append(kt.Partitions, kp)
		}
		r.Topics = append(r.Topics, t)
		k.Topics = append(k.Topics, kt)
	}
	return r, k
}

// kmsgFrame is the frame a broker using kmsg would send: size, header, body.
func kmsgFrame(k *kmsg.FetchResponse, correlationID int32) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	if k.IsFlexible() {
		b = append(b, 0)
	}
	b = k.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// encode runs Write into a copy-path Writer and returns the bytes.
func encode(t *testing.T, version int16, corr int32, r *fetchresp.Response) ([]byte, zerocopy.Stats) {
	t.Helper()
	var buf bytes.Buffer
	w := zerocopy.NewWriter(&buf)
	if err := fetchresp.Write(w, version, corr, r); err != nil {
		t.Fatalf("Write v%d: %v", version, err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.Stats()
}

func TestWriteMatchesKmsg(t *testing.T) {
	log := batches(4, 10)
	f := logFile(t, log)
	for v := fetchresp.MinVersion; v <= fetchresp.MaxVersion; v++ {
		for _, src := range []struct {
			name string
			s    source
		}{{"file", fileSource(f)}, {"bytes", bytesSource(log)}} {
			t.Run(fmt.Sprintf("v=%d/records=%s", v, src.name), func(t *testing.T) {
				const corr = 0x01020304
				r, k := fixture(v, log, src.s)
				got, st := encode(t, v, corr, r)
				want := kmsgFrame(k, corr)
				if !bytes.Equal(got, want) {
					t.Fatalf("bytes differ from kmsg: got %d, want %d, first difference at %d\n got %x\nwant %x",
						len(got), len(want), commonPrefix(got, want), got[:min(len(got), 200)], want[:min(len(want), 200)])
				}
				if src.name == "file" && st.CopyBytes == 0 {
					t.Fatalf("stats %+v: file records not sent", st)
				}
				compareDecoded(t, v, corr, got, r, log)
			})
		}
	}
}

// compareDecoded decodes frame with kmsg and checks it field by field
// against r, the response it was encoded from.
func compareDecoded(t *testing.T, version int16, corr int32, frame []byte, r *fetchresp.Response, log []byte) {
	t.Helper()
	if size := int(binary.BigEndian.Uint32(frame)); size != len(frame)-4 {
		t.Fatalf("size prefix %d, frame has %d bytes after it", size, len(frame)-4)
	}
	if c := int32(binary.BigEndian.Uint32(frame[4:])); c != corr {
		t.Fatalf("correlation id %#x, want %#x", c, corr)
	}
	body := frame[8:]
	if version >= 12 {
		if body[0] != 0 {
			t.Fatalf("header tag buffer %d, want 0", body[0])
		}
		body = body[1:]
	}
	d := kmsg.NewPtrFetchResponse()
	d.Version = version
	if err := d.ReadFrom(body); err != nil {
		t.Fatalf("kmsg ReadFrom: %v", err)
	}
	if d.ThrottleMillis != r.ThrottleMillis {
		t.Errorf("ThrottleMillis %d, want %d", d.ThrottleMillis, r.ThrottleMillis)
	}
	if version >= 7 && (d.ErrorCode != r.ErrorCode || d.SessionID != r.SessionID) {
		t.Errorf("ErrorCode/SessionID %d/%d, want %d/%d", d.ErrorCode, d.SessionID, r.ErrorCode, r.SessionID)
	}
	if len(d.Topics) != len(r.Topics) {
		t.Fatalf("%d topics, want %d", len(d.Topics), len(r.Topics))
	}
	for i, dt := range d.Topics {
		rt := r.Topics[i]
		if version >= 13 && dt.TopicID != rt.ID || version < 13 && dt.Topic != rt.Name {
			t.Errorf("topic %d: %q/%x, want %q/%x", i, dt.Topic, dt.TopicID, rt.Name, rt.ID)
		}
		if len(dt.Partitions) != len(rt.Partitions) {
			t.Fatalf("topic %d: %d partitions, want %d", i, len(dt.Partitions), len(rt.Partitions))
		}
		for j, dp := range dt.Partitions {
			rp := rt.Partitions[j]
			where := fmt.Sprintf("topic %d partition %d", i, rp.Partition)
			if dp.Partition != rp.Partition || dp.ErrorCode != rp.ErrorCode || dp.HighWatermark != rp.HighWatermark || dp.LastStableOffset != rp.LastStableOffset {
				t.Errorf("%s: got %d/%d/%d/%d", where, dp.Partition, dp.ErrorCode, dp.HighWatermark, dp.LastStableOffset)
			}
			if version >= 5 && dp.LogStartOffset != rp.LogStartOffset {
				t.Errorf("%s: LogStartOffset %d, want %d", where, dp.LogStartOffset, rp.LogStartOffset)
			}
			if version >= 11 && dp.PreferredReadReplica != rp.PreferredReadReplica {
				t.Errorf("%s: PreferredReadReplica %d, want %d", where, dp.PreferredReadReplica, rp.PreferredReadReplica)
			}
			if (dp.AbortedTransactions == nil) != (rp.AbortedTransactions == nil) || len(dp.AbortedTransactions) != len(rp.AbortedTransactions) {
				t.Errorf("%s: aborted txns %v, want %v", where, dp.AbortedTransactions, rp.AbortedTransactions)
			}
			for x, a := range dp.AbortedTransactions {
				if a.ProducerID != rp.AbortedTransactions[x].ProducerID || a.FirstOffset != rp.AbortedTransactions[x].FirstOffset {
					t.Errorf("%s: aborted txn %d = %+v", where, x, a)
				}
			}
			// The Slice was released after sending, so compare with the log
			// by length and content: every fixture range starts at 0 or half.
			if n := len(dp.RecordBatches); n > 0 && !bytes.Contains(log, dp.RecordBatches) {
				t.Errorf("%s: %d record bytes not from the log", where, n)
			}
			if version >= 12 {
				checkTags(t, where, dp, rp)
			}
		}
	}
	if version >= 16 && len(d.Brokers) != len(r.NodeEndpoints) {
		t.Errorf("%d node endpoints, want %d", len(d.Brokers), len(r.NodeEndpoints))
	}
	for i, b := range d.Brokers {
		e := r.NodeEndpoints[i]
		if b.NodeID != e.NodeID || b.Host != e.Host || b.Port != e.Port || (b.Rack == nil) != (e.Rack == nil) || b.Rack != nil && *b.Rack != *e.Rack {
			t.Errorf("node endpoint %d: %+v, want %+v", i, b, e)
		}
	}
}

func checkTags(t *testing.T, where string, dp kmsg.FetchResponseTopicPartition, rp fetchresp.Partition) {
	t.Helper()
	de, cl, sn := fetchresp.EpochEndOffset{Epoch: -1, EndOffset: -1}, fetchresp.LeaderIDAndEpoch{LeaderID: -1, LeaderEpoch: -1}, fetchresp.SnapshotID{EndOffset: -1, Epoch: -1}
	if rp.DivergingEpoch != nil {
		de = *rp.DivergingEpoch
	}
	if rp.CurrentLeader != nil {
		cl = *rp.CurrentLeader
	}
	if rp.SnapshotID != nil {
		sn = *rp.SnapshotID
	}
	if dp.DivergingEpoch.Epoch != de.Epoch || dp.DivergingEpoch.EndOffset != de.EndOffset {
		t.Errorf("%s: diverging epoch %+v, want %+v", where, dp.DivergingEpoch, de)
	}
	if dp.CurrentLeader.LeaderID != cl.LeaderID || dp.CurrentLeader.LeaderEpoch != cl.LeaderEpoch {
		t.Errorf("%s: current leader %+v, want %+v", where, dp.CurrentLeader, cl)
	}
	if dp.SnapshotID.EndOffset != sn.EndOffset || dp.SnapshotID.Epoch != sn.Epoch {
		t.Errorf("%s: snapshot id %+v, want %+v", where, dp.SnapshotID, sn)
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestWriteErrors checks that a refused response leaves nothing in the
// Writer and releases its slices (the file closes once its owner lets go).
func TestWriteErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int16
		r       func(*zerocopy.File) *fetchresp.Response
		want    error
	}{
		{"version=3", 3, nil, fetchresp.ErrVersion},
		{"version=17", 17, nil, fetchresp.ErrVersion},
		{"version=-1", -1, nil, fetchresp.ErrVersion},
		{"topic=too-long", 4, func(f *zerocopy.File) *fetchresp.Response {
			return &fetchresp.Response{Topics: []fetchresp.Topic{{Name: string(make([]byte, 1<<15)), Partitions: []fetchresp.Partition{{Records: zerocopy.FileSlice(f, 0, 10)}}}}}
		}, fetchresp.ErrTooLarge},
		{"records=too-long", 12, func(f *zerocopy.File) *fetchresp.Response {
			return &fetchresp.Response{Topics: []fetchresp.Topic{{Name: "t", Partitions: []fetchresp.Partition{{Records: zerocopy.FileSlice(f, 0, 1<<31)}}}}}
		}, fetchresp.ErrTooLarge},
		{"response=too-long", 12, func(f *zerocopy.File) *fetchresp.Response {
			ps := []fetchresp.Partition{{Records: zerocopy.FileSlice(f, 0, 1<<30)}, {Records: zerocopy.FileSlice(f, 0, 1<<30)}}
			return &fetchresp.Response{Topics: []fetchresp.Topic{{Name: "t", Partitions: ps}}}
		}, fetchresp.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.log")
			if err := os.WriteFile(path, make([]byte, 100), 0o644); err != nil {
				t.Fatal(err)
			}
			osf, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			f := zerocopy.NewFile(osf)
			mk := tc.r
			if mk == nil {
				mk = func(f *zerocopy.File) *fetchresp.Response {
					return &fetchresp.Response{Topics: []fetchresp.Topic{{Name: "t", Partitions: []fetchresp.Partition{{Records: zerocopy.FileSlice(f, 0, 100)}}}}}
				}
			}
			var buf bytes.Buffer
			w := zerocopy.NewWriter(&buf)
			w.Write([]byte("earlier"))
			if err := fetchresp.Write(w, tc.version, 1, mk(f)); !errors.Is(err, tc.want) {
				t.Fatalf("Write = %v, want %v", err, tc.want)
			}
			if n := w.Buffered(); n != int64(len("earlier")) {
				t.Fatalf("Writer holds %d bytes after a failed Write, want only the earlier 7", n)
			}
			f.Release() // the owner's reference: the last one if Write released its slices
			if _, err := osf.Stat(); !errors.Is(err, os.ErrClosed) {
				t.Fatalf("file still open after Write failed (%v): a slice was not released", err)
			}
		})
	}
}
