package console

// The records browser: GET reads a partition from an offset or a
// timestamp with Fetch requests sent straight to the partition's leader
// (no consumer group, no client state), decoded by kgo; POST produces one
// record.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

// Bounds of one read.
const (
	defaultRecordLimit = 50
	maxRecordLimit     = 500
	// maxRecordBytes bounds the key, value and header bytes of one read
	// (at least one record is returned, as Kafka's fetch does).
	maxRecordBytes = 1 << 20
)

type headerJSON struct {
	Key   string `json:"key"`
	Value []byte `json:"value"` // base64; null for a null value
}

type recordJSON struct {
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp"`
	Key       []byte       `json:"key"`   // base64; null for a null key
	Value     []byte       `json:"value"` // base64; null for a null value
	Headers   []headerJSON `json:"headers"`
}

type recordsJSON struct {
	Topic       string       `json:"topic"`
	Partition   int32        `json:"partition"`
	Records     []recordJSON `json:"records"`
	NextOffset  int64        `json:"nextOffset"`
	StartOffset int64        `json:"startOffset"`
	EndOffset   int64        `json:"endOffset"`
}

// readQuery is the parsed query of GET .../records.
type readQuery struct {
	partition    int32
	offset       int64
	hasOffset    bool
	timestamp    int64
	hasTimestamp bool
	limit        int
}

// parseReadQuery parses partition, offset or timestamp, and limit; the
// error says what is wrong, for a 400.
func parseReadQuery(r *http.Request) (readQuery, error) {
	q := readQuery{limit: defaultRecordLimit}
	v := r.URL.Query()
	if s := v.Get("partition"); s != "" {
		p, err := strconv.ParseInt(s, 10, 32)
		if err != nil || p < 0 {
			return q, fmt.Errorf("partition %q is not a partition number", s)
		}
		q.partition = int32(p)
	}
	if s := v.Get("offset"); s != "" {
		o, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return q, fmt.Errorf("offset %q is not an offset", s)
		}
		q.offset, q.hasOffset = o, true
	}
	if s := v.Get("timestamp"); s != "" {
		t, err := strconv.ParseInt(s, 10, 64)
		if err != nil || t < 0 {
			return q, fmt.Errorf("timestamp %q is not milliseconds since the epoch", s)
		}
		q.timestamp, q.hasTimestamp = t, true
	}
	if q.hasOffset && q.hasTimestamp {
		return q, fmt.Errorf("give offset or timestamp, not both")
	}
	if s := v.Get("limit"); s != "" {
		l, err := strconv.Atoi(s)
		if err != nil || l <= 0 {
			return q, fmt.Errorf("limit %q is not a positive number", s)
		}
		q.limit = min(l, maxRecordLimit)
	}
	return q, nil
}

// partitionOf returns the metadata of partition p of topic, answering the
// error itself (404 for an unknown topic or partition) and false.
func partitionOf(ctx context.Context, w http.ResponseWriter, adm *kadm.Client, topic string, p int32) (kadm.TopicDetail, kadm.PartitionDetail, bool) {
	tds, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		writeKafkaError(w, err)
		return kadm.TopicDetail{}, kadm.PartitionDetail{}, false
	}
	td, ok := tds[topic]
	if !ok {
		writeKafkaError(w, kerr.UnknownTopicOrPartition)
		return td, kadm.PartitionDetail{}, false
	}
	if td.Err != nil {
		writeKafkaError(w, td.Err)
		return td, kadm.PartitionDetail{}, false
	}
	pd, ok := td.Partitions[p]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("topic %s has no partition %d", topic, p), kerr.UnknownTopicOrPartition.Message)
		return td, pd, false
	}
	return td, pd, true
}

func (s *Server) readRecords(w http.ResponseWriter, r *http.Request, q *request) {
	topic := topicParam(w, r)
	if topic == "" {
		return
	}
	rq, err := parseReadQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "")
		return
	}
	if !q.require(w, acl.OpRead, acl.ResourceTopic, topic, "read topic", kerr.TopicAuthorizationFailed) {
		return
	}
	cl, adm, ctx, done, ok := q.kafka(w, r)
	if !ok {
		return
	}
	defer done()
	td, pd, ok := partitionOf(ctx, w, adm, topic, rq.partition)
	if !ok {
		return
	}
	st, err := stats(ctx, adm, kadm.TopicDetails{topic: td}, []string{topic}, false)
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	start, end := st.offsets(topic, rq.partition)
	from := start
	switch {
	case rq.hasOffset && rq.offset < 0:
		from = max(start, end+rq.offset)
	case rq.hasOffset:
		from = max(start, min(rq.offset, end))
	case rq.hasTimestamp:
		lo, err := adm.ListOffsetsAfterMilli(ctx, rq.timestamp, topic)
		if err != nil {
			writeKafkaError(w, err)
			return
		}
		o, ok := lo.Lookup(topic, rq.partition)
		switch {
		case !ok:
			writeKafkaError(w, kerr.UnknownTopicOrPartition)
			return
		case o.Err != nil:
			writeKafkaError(w, o.Err)
			return
		case o.Offset < 0:
			from = end // nothing at or after that time
		default:
			from = max(start, o.Offset)
		}
	}
	out := recordsJSON{Topic: topic, Partition: rq.partition, Records: []recordJSON{}, NextOffset: from, StartOffset: start, EndOffset: end}
	if from < end {
		if pd.Leader < 0 {
			writeKafkaError(w, kerr.LeaderNotAvailable)
			return
		}
		if err := fetchRecords(ctx, cl, td, pd, from, end, rq.limit, &out); err != nil {
			writeKafkaError(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, &out)
}

// fetchRecords reads records of partition pd from offset from, below end,
// into out: at most limit records and maxRecordBytes of them (but at least
// one), with Fetch requests to the leader.
func fetchRecords(ctx context.Context, cl *kgo.Client, td kadm.TopicDetail, pd kadm.PartitionDetail, from, end int64, limit int, out *recordsJSON) error {
	leader := cl.Broker(int(pd.Leader))
	decompressor := kgo.DefaultDecompressor()
	bytes := 0
	off := from
	for off < end && len(out.Records) < limit && bytes < maxRecordBytes {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 1
		req.MaxBytes = maxRecordBytes
		req.SessionID, req.SessionEpoch = 0, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = td.Topic, td.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset = pd.Partition, off
		rp.PartitionMaxBytes = maxRecordBytes
		rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := leader.Request(ctx, req)
		if err != nil {
			return err
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("console: fetch answered %d topics for 1", len(resp.Topics))
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset: off, Topic: td.Topic, Partition: pd.Partition,
		}, &resp.Topics[0].Partitions[0], decompressor, nil)
		if fp.Err != nil {
			return fp.Err
		}
		for _, rec := range fp.Records {
			if len(out.Records) >= limit || rec.Offset >= end {
				break
			}
			n := len(rec.Key) + len(rec.Value)
			for _, h := range rec.Headers {
				n += len(h.Key) + len(h.Value)
			}
			if len(out.Records) > 0 && bytes+n > maxRecordBytes {
				bytes = maxRecordBytes
				break
			}
			bytes += n
			rj := recordJSON{Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(), Key: rec.Key, Value: rec.Value, Headers: []headerJSON{}}
			for _, h := range rec.Headers {
				rj.Headers = append(rj.Headers, headerJSON{Key: h.Key, Value: h.Value})
			}
			out.Records = append(out.Records, rj)
			out.NextOffset = rec.Offset + 1
		}
		if len(out.Records) >= limit || bytes >= maxRecordBytes {
			break
		}
		if next <= off { // no progress: nothing more to read now
			break
		}
		off = next
		out.NextOffset = max(out.NextOffset, min(next, end))
	}
	return nil
}

// produceJSON is POST .../records's body: strings as text.
type produceJSON struct {
	Partition *int32  `json:"partition"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Headers   []struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	} `json:"headers"`
}

func (s *Server) produceRecord(w http.ResponseWriter, r *http.Request, q *request) {
	topic := topicParam(w, r)
	if topic == "" {
		return
	}
	var body produceJSON
	if !readJSON(w, r, &body) {
		return
	}
	if body.Partition != nil && *body.Partition < 0 {
		writeError(w, http.StatusBadRequest, "partition must not be negative", "")
		return
	}
	if !q.require(w, acl.OpWrite, acl.ResourceTopic, topic, "write to topic", kerr.TopicAuthorizationFailed) {
		return
	}
	cl, adm, ctx, done, ok := q.kafka(w, r)
	if !ok {
		return
	}
	defer done()
	tds, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		writeKafkaError(w, kerr.UnknownTopicOrPartition)
		return
	}
	n := int32(len(td.Partitions))
	rec := &kgo.Record{Topic: topic}
	if body.Key != nil {
		rec.Key = []byte(*body.Key)
	}
	if body.Value != nil {
		rec.Value = []byte(*body.Value)
	}
	for _, h := range body.Headers {
		var v []byte
		if h.Value != nil {
			v = []byte(*h.Value)
		}
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: v})
	}
	switch {
	case n == 0:
		writeKafkaError(w, kerr.UnknownTopicOrPartition)
		return
	case body.Partition != nil:
		if *body.Partition >= n {
			writeError(w, http.StatusNotFound, fmt.Sprintf("topic %s has no partition %d", topic, *body.Partition), kerr.UnknownTopicOrPartition.Message)
			return
		}
		rec.Partition = *body.Partition
	case rec.Key != nil:
		// The Java client's default: murmur2 of the key.
		rec.Partition = int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(rec, int(n)))
	default:
		rec.Partition = rand.Int32N(n)
	}
	res := cl.ProduceSync(ctx, rec)
	if err := res.FirstErr(); err != nil {
		writeKafkaError(w, err)
		return
	}
	got := res[0].Record
	writeJSON(w, http.StatusCreated, struct {
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	}{got.Partition, got.Offset})
}
