package server_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

// listV0 sends one ListOffsets v0 request for topic/partition and returns
// its only partition's answer.
func listV0(t *testing.T, rc *rawConn, replicaID int32, topic string, partition int32, ts int64, maxNum int32) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(0)
	req.ReplicaID = replicaID
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.MaxNumOffsets = partition, ts, maxNum
	rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	resp := rc.Do(req).(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("v0 answer for one partition: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestListOffsetsV0 drives ListOffsets v0 (what Burrow's cluster module
// sends, whatever kafka-version it is given) through kmsg against a real
// broker on every backend, with Kafka's legacyFetchOffsetsBefore answers:
// latest and earliest with max_num_offsets 1 are the high watermark and the
// log start offset; with more, the segment base offsets follow, in
// descending order, never more than asked for; a timestamp picks the
// segments whose records are no newer. On the segment backend, where one
// record per batch and segment.bytes=100 put each batch in a segment of
// its own, the exact lists are checked.
func TestListOffsetsV0(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be string) {
		b := brokertest.Start(t, be)
		cl := newClient(t, b.Addr())
		adm := kadm.NewClient(cl)
		segBytes := "100"
		createTopic(t, adm, "v0", 1, map[string]*string{"segment.bytes": &segBytes})
		ctx := testCtx(t, 30*time.Second)
		const n = 5
		for i := range n {
			rec := &kgo.Record{Topic: "v0", Value: []byte("value"), Timestamp: time.UnixMilli(int64(1000 * (i + 1)))}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		rc := dialRaw(t, b.Addr())
		check := func(name string, ts int64, maxNum int32, want []int64) {
			t.Helper()
			p := listV0(t, rc, -1, "v0", 0, ts, maxNum)
			if p.ErrorCode != 0 || !slices.Equal(p.OldStyleOffsets, want) {
				t.Errorf("%s (ts %d, max %d): %v %v, want %v", name, ts, maxNum, kerr.ErrorForCode(p.ErrorCode), p.OldStyleOffsets, want)
			}
		}
		check("latest", -1, 1, []int64{n})
		check("earliest", -2, 1, []int64{0})
		check("earliest, more asked", -2, 10, []int64{0})
		check("none asked", -1, 0, []int64{})
		check("before every record", 500, 10, []int64{})

		all := listV0(t, rc, -1, "v0", 0, -1, math.MaxInt32)
		if all.ErrorCode != 0 || len(all.OldStyleOffsets) < 2 || all.OldStyleOffsets[0] != n ||
			all.OldStyleOffsets[len(all.OldStyleOffsets)-1] != 0 ||
			!slices.IsSortedFunc(all.OldStyleOffsets, func(a, b int64) int { return int(b - a) }) {
			t.Fatalf("latest, all: %v %v", kerr.ErrorForCode(all.ErrorCode), all.OldStyleOffsets)
		}
		if be == "segment" {
			// Segments [0] [1] [2] [3] [4 (active)], then the log end.
			check("latest, all", -1, math.MaxInt32, []int64{5, 4, 3, 2, 1, 0})
			check("latest, three", -1, 3, []int64{5, 4, 3})
			check("at the third record's time", 3000, 10, []int64{2, 1, 0})
			check("between the second and third", 2500, 2, []int64{1, 0})
			check("after every record", math.MaxInt64, 1, []int64{5})
			// A broker (replica id >= 0) sees the same: the high
			// watermark is the log end on a single node.
			if p := listV0(t, rc, 0, "v0", 0, -1, 2); !slices.Equal(p.OldStyleOffsets, []int64{5, 4}) {
				t.Errorf("replica 0, latest: %v", p.OldStyleOffsets)
			}
		}

		// DeleteRecords moves the log start: earliest follows it, and no
		// offset below it is listed.
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "v0", Partition: 0, At: 3})
		if dr, err := adm.DeleteRecords(ctx, os); err != nil {
			t.Fatal(err)
		} else if r, _ := dr.Lookup("v0", 0); r.Err != nil {
			t.Fatal(r.Err)
		}
		check("earliest after delete", -2, 1, []int64{3})
		if p := listV0(t, rc, -1, "v0", 0, -1, math.MaxInt32); p.ErrorCode != 0 || slices.Min(p.OldStyleOffsets) < 3 {
			t.Errorf("latest, all, after delete: %v %v", kerr.ErrorForCode(p.ErrorCode), p.OldStyleOffsets)
		}
	})
}

// TestListOffsetsV0Hostile sends ListOffsets v0 requests Kafka answers
// with an error code: timestamps v0 does not know, a negative
// max_num_offsets, unknown topics and partitions. Each gets its code, the
// connection stays open, and a malformed v0 frame closes only its own
// connection.
func TestListOffsetsV0Hostile(t *testing.T) {
	b := brokertest.Start(t, "memory")
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "h", 1, nil)
	rc := dialRaw(t, b.Addr())
	for _, tc := range []struct {
		name      string
		topic     string
		partition int32
		ts        int64
		maxNum    int32
		want      int16
	}{
		{"max timestamp is v7's", "h", 0, -3, 1, kerr.UnsupportedVersion.Code},
		{"earliest local is v8's", "h", 0, -4, 1, kerr.UnsupportedVersion.Code},
		{"most negative timestamp", "h", 0, math.MinInt64, 1, kerr.UnsupportedVersion.Code},
		{"negative max_num_offsets", "h", 0, -1, -1, kerr.UnknownServerError.Code},
		{"most negative max_num_offsets", "h", 0, 0, math.MinInt32, kerr.UnknownServerError.Code},
		{"unknown topic", "nope", 0, -1, 1, kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", "h", 7, -1, 1, kerr.UnknownTopicOrPartition.Code},
		{"negative partition", "h", -1, -1, 1, kerr.UnknownTopicOrPartition.Code},
	} {
		p := listV0(t, rc, -1, tc.topic, tc.partition, tc.ts, tc.maxNum)
		if p.ErrorCode != tc.want || len(p.OldStyleOffsets) != 0 {
			t.Errorf("%s: %v %v, want %v", tc.name, kerr.ErrorForCode(p.ErrorCode), p.OldStyleOffsets, kerr.ErrorForCode(tc.want))
		}
	}

	// A v0 request whose partition array claims more entries than the
	// frame holds, and one cut inside a partition: the connection closes,
	// the broker serves the next one.
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(0)
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "h"
	rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{kmsg.NewListOffsetsRequestTopicPartition()}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile")).AppendRequest(nil, req, 7)
	body := frame[4:]
	for name, bad := range map[string][]byte{
		"huge partition count": hostileCount(body, 1, math.MaxInt32),
		"cut in a partition":   body[:len(body)-6],
	} {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, b.Addr())
			c.WriteRaw(sizePrefixed(bad))
			c.ExpectClosed()
			if p := listV0(t, dialRaw(t, b.Addr()), -1, "h", 0, -1, 1); p.ErrorCode != 0 || !slices.Equal(p.OldStyleOffsets, []int64{0}) {
				t.Fatalf("after %s: %v %v", name, kerr.ErrorForCode(p.ErrorCode), p.OldStyleOffsets)
			}
		})
	}
}

// hostileCount returns a copy of body with the last int32 equal to old
// before its final partition entry (the partitions array's count) set to n.
// The v0 partition entry is 16 bytes (int32 partition, int64 timestamp,
// int32 max_num_offsets), so the count sits 20 bytes from the end.
func hostileCount(body []byte, old, n int32) []byte {
	out := slices.Clone(body)
	i := len(out) - 20
	if be32(out[i:]) != old {
		panic("hostileCount: layout changed")
	}
	out[i], out[i+1], out[i+2], out[i+3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return out
}

func be32(b []byte) int32 { return int32(b[0])<<24 | int32(b[1])<<16 | int32(b[2])<<8 | int32(b[3]) }

// sizePrefixed frames body with its int32 size.
func sizePrefixed(body []byte) []byte {
	n := len(body)
	return append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, body...)
}
