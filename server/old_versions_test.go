package server_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
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

// TestOffsetCommitV1 runs the classic group protocol at its oldest
// versions through kmsg against a real broker (FindCoordinator v0,
// JoinGroup v0, SyncGroup v0, OffsetFetch v1, LeaveGroup v0) around the
// newly served OffsetCommit v1: a member commits with its generation, a
// stale generation is ILLEGAL_GENERATION, and each partition's commit
// timestamp (-1: the broker's clock) is the commit time written to
// __consumer_offsets, as Kafka's createOffsetAndMetadata keeps it. Hostile
// timestamps (the int64 extremes) are stored as given and never break the
// broker.
func TestOffsetCommitV1(t *testing.T) {
	t.Parallel()
	b := brokertest.Start(t, "memory")
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "old", 3, nil)
	rc := dialRaw(t, b.Addr())
	const group = "old-group"

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(0)
	fc.CoordinatorKey = group
	if r := rc.Do(fc).(*kmsg.FindCoordinatorResponse); r.ErrorCode != 0 {
		t.Fatalf("find coordinator v0: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.SetVersion(0)
	jg.Group, jg.SessionTimeoutMillis, jg.ProtocolType = group, 30000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 1, 0, 3, 'o', 'l', 'd', 0, 0, 0, 0}}}
	join := rc.Do(jg).(*kmsg.JoinGroupResponse)
	if join.ErrorCode != 0 || join.MemberID == "" {
		t.Fatalf("join group v0: %v %+v", kerr.ErrorForCode(join.ErrorCode), join)
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.SetVersion(0)
	sg.Group, sg.Generation, sg.MemberID = group, join.Generation, join.MemberID
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: join.MemberID, MemberAssignment: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}
	if r := rc.Do(sg).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("sync group v0: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	commitV1 := func(g string, generation int32, member string, parts map[int32][2]int64) map[int32]int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(1)
		req.Group, req.Generation, req.MemberID = g, generation, member
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "old"
		for p, ot := range parts {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.Timestamp = p, ot[0], ot[1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		resp := rc.Do(req).(*kmsg.OffsetCommitResponse)
		out := map[int32]int16{}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				out[p.Partition] = p.ErrorCode
			}
		}
		return out
	}
	fetchV1 := func(g string) map[int32]int64 {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(1)
		req.Group = g
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "old", Partitions: []int32{0, 1, 2}}}
		resp := rc.Do(req).(*kmsg.OffsetFetchResponse)
		out := map[int32]int64{}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				if p.ErrorCode != 0 {
					t.Errorf("offset fetch v1 %s/%d: %v", g, p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
				out[p.Partition] = p.Offset
			}
		}
		return out
	}

	before := time.Now().UnixMilli()
	got := commitV1(group, join.Generation, join.MemberID, map[int32][2]int64{0: {7, -1}, 1: {9, 1234567}})
	after := time.Now().UnixMilli()
	if got[0] != 0 || got[1] != 0 {
		t.Fatalf("commit v1: %v", got)
	}
	if got := commitV1(group, join.Generation+1, join.MemberID, map[int32][2]int64{2: {1, -1}}); got[2] != kerr.IllegalGeneration.Code {
		t.Fatalf("commit v1 with a stale generation: %v", kerr.ErrorForCode(got[2]))
	}
	if got := fetchV1(group); got[0] != 7 || got[1] != 9 || got[2] != -1 {
		t.Fatalf("offset fetch v1: %v", got)
	}
	// Hostile commit timestamps, as a commit outside group management.
	hostile := map[int32][2]int64{0: {1, math.MinInt64}, 1: {2, math.MaxInt64}, 2: {3, -2}}
	if got := commitV1("old-simple", -1, "", hostile); got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("commit v1 with extreme timestamps: %v", got)
	}
	if got := fetchV1("old-simple"); got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("offset fetch v1 after extreme timestamps: %v", got)
	}
	// A v1 frame cut inside its last partition closes only its own
	// connection.
	cut := kmsg.NewPtrOffsetCommitRequest()
	cut.SetVersion(1)
	cut.Group, cut.Generation = "old-simple", -1
	cut.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "old", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, Timestamp: -1}}}}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile")).AppendRequest(nil, cut, 3)
	bad := dialRaw(t, b.Addr())
	bad.WriteRaw(sizePrefixed(frame[4 : len(frame)-5]))
	bad.ExpectClosed()
	if got := fetchV1("old-simple"); got[0] != 1 {
		t.Fatalf("offset fetch v1 after a cut commit: %v", got)
	}

	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.SetVersion(0)
	lg.Group, lg.MemberID = group, join.MemberID
	if r := rc.Do(lg).(*kmsg.LeaveGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("leave group v0: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// The commit times in __consumer_offsets (key v1, value v3: offset,
	// leader epoch, metadata, commit timestamp).
	want := map[string]func(int64) bool{
		group + "/0":   func(ts int64) bool { return ts >= before && ts <= after },
		group + "/1":   func(ts int64) bool { return ts == 1234567 },
		"old-simple/0": func(ts int64) bool { return ts == math.MinInt64 },
		"old-simple/1": func(ts int64) bool { return ts == math.MaxInt64 },
		"old-simple/2": func(ts int64) bool { return ts == -2 },
	}
	seen := map[string]int64{}
	cons := newClient(t, b.Addr(), kgo.ConsumeTopics("__consumer_offsets"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testCtx(t, 30*time.Second)
	for len(seen) < len(want) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("found commit records %v of %d", seen, len(want))
		}
		fs.EachRecord(func(r *kgo.Record) {
			g, p, ts, ok := offsetCommitRecord(r.Key, r.Value)
			if ok {
				seen[fmt.Sprintf("%s/%d", g, p)] = ts
			}
		})
	}
	for k, ok := range want {
		if ts, found := seen[k]; !found || !ok(ts) {
			t.Errorf("%s: commit timestamp %d (found %v)", k, ts, found)
		}
	}
}

// offsetCommitRecord decodes a __consumer_offsets offset commit record (key
// version 0 or 1, value version 3) of topic "old".
func offsetCommitRecord(key, value []byte) (group string, partition int32, commitTs int64, ok bool) {
	str := func(b []byte) (string, []byte, bool) {
		if len(b) < 2 {
			return "", nil, false
		}
		n := int(int16(b[0])<<8 | int16(b[1]))
		if n < 0 || len(b) < 2+n {
			return "", nil, false
		}
		return string(b[2 : 2+n]), b[2+n:], true
	}
	if len(key) < 2 || key[0] != 0 || key[1] > 1 || len(value) < 2 || value[0] != 0 || value[1] != 3 {
		return "", 0, 0, false
	}
	g, rest, ok1 := str(key[2:])
	topic, rest, ok2 := str(rest)
	if !ok1 || !ok2 || topic != "old" || len(rest) != 4 {
		return "", 0, 0, false
	}
	partition = be32(rest)
	v := value[2+8+4:]
	_, v, ok3 := str(v)
	if !ok3 || len(v) < 8 {
		return "", 0, 0, false
	}
	commitTs = int64(uint64(be32(v))<<32 | uint64(uint32(be32(v[4:]))))
	return g, partition, commitTs, true
}

// TestEveryAPIAnswersItsOldestVersion sends each API the broker advertises
// in ApiVersions, at the oldest version advertised, with kmsg's default
// fields (empty lists, default ids), on a connection of its own: the broker
// answers every one with a response of that version, so an advertised old
// version is a served one. Produce carries acks=1 (acks=0 has no answer)
// and Fetch a zero wait.
func TestEveryAPIAnswersItsOldestVersion(t *testing.T) {
	b := brokertest.Start(t, "memory")
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	keys := dialRaw(t, b.Addr()).Do(av).(*kmsg.ApiVersionsResponse).ApiKeys
	if len(keys) < 20 {
		t.Fatalf("ApiVersions lists %d APIs", len(keys))
	}
	for _, k := range keys {
		req := kmsg.RequestForKey(k.ApiKey)
		if req == nil {
			t.Errorf("key %d: kmsg has no request", k.ApiKey)
			continue
		}
		req.SetVersion(k.MinVersion)
		switch r := req.(type) {
		case *kmsg.ProduceRequest:
			r.Acks = 1
		case *kmsg.FetchRequest:
			r.MaxWaitMillis = 0
		}
		t.Run(fmt.Sprintf("%s/v%d", kmsg.NameForKey(k.ApiKey), k.MinVersion), func(t *testing.T) {
			resp := dialRaw(t, b.Addr()).Do(req)
			if resp.Key() != k.ApiKey || resp.GetVersion() != k.MinVersion {
				t.Fatalf("answer %s v%d", kmsg.NameForKey(resp.Key()), resp.GetVersion())
			}
		})
	}
}

// TestSaramaPinnedTo082 drives the old versions with a client of its own
// protocol implementation: sarama told the cluster runs Kafka 0.8.2 (and
// not to send ApiVersions, which 0.8.2 did not have) asks for offsets with
// ListOffsets v0 and Metadata v0, finds the coordinator with
// FindCoordinator v0, and commits and fetches through its offset manager
// with OffsetCommit v1 and OffsetFetch v1. A second offset manager resumes
// from the commit, and kadm sees it. (Consuming would need Fetch v0, which
// Sluice does not serve: README.)
func TestSaramaPinnedTo082(t *testing.T) {
	b := brokertest.Start(t, "memory")
	cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "s082", 2, nil)
	ctx := testCtx(t, 30*time.Second)
	for i := range 12 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "s082", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V0_8_2_0
	cfg.ApiVersionsRequest = false
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	sc, err := sarama.NewClient([]string{b.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if n, err := sc.GetOffset("s082", 0, sarama.OffsetNewest); err != nil || n != 6 {
		t.Fatalf("sarama newest offset (ListOffsets v0): %d, %v; want 6", n, err)
	}
	if n, err := sc.GetOffset("s082", 1, sarama.OffsetOldest); err != nil || n != 0 {
		t.Fatalf("sarama oldest offset (ListOffsets v0): %d, %v; want 0", n, err)
	}

	manage := func() (sarama.OffsetManager, sarama.PartitionOffsetManager) {
		t.Helper()
		om, err := sarama.NewOffsetManagerFromClient("s082-group", sc)
		if err != nil {
			t.Fatal(err)
		}
		pom, err := om.ManagePartition("s082", 1)
		if err != nil {
			om.Close()
			t.Fatal(err)
		}
		return om, pom
	}
	om, pom := manage()
	if next, _ := pom.NextOffset(); next != sarama.OffsetNewest {
		t.Fatalf("next offset before any commit: %d", next)
	}
	pom.MarkOffset(4, "meta")
	om.Commit()
	select {
	case err := <-pom.Errors():
		t.Fatalf("commit: %v", err)
	default:
	}
	pom.AsyncClose()
	om.Close()

	om, pom = manage()
	defer om.Close()
	if next, md := pom.NextOffset(); next != 4 || md != "meta" {
		t.Fatalf("resumed at %d %q, want 4 \"meta\"", next, md)
	}
	pom.AsyncClose()
	offs, err := adm.FetchOffsets(ctx, "s082-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("s082", 1); !ok || o.Err != nil || o.At != 4 || o.Metadata != "meta" {
		t.Fatalf("kadm sees %+v", o)
	}
}
