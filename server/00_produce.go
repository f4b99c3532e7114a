package server

// Produce (key 0), served v3-v11 (record format v2 only).
//
//	v3: transactional id; RecordBatch v2
//	v4: KAFKA_STORAGE_ERROR may be returned
//	v5: log start offset in the response
//	v7: zstd batches allowed
//	v8: per-record errors and an error message (KIP-467)
//	v9: flexible
//	v10, v11: current-leader tags (KIP-951; a single broker never moves a
//	    leader, so they stay unset)
//
// acks=1 is answered after the leader's append. acks=-1 is answered once
// the high watermark passes the batch: on a single node at once (one
// broker is the whole ISR), in a cluster when every replica of the ISR
// has fetched it (the request waits, pipelined behind the connection's
// earlier produce requests, see "Pipelined acks=all produce" below; with
// fewer in-sync replicas than min.insync.replicas it is refused with
// NOT_ENOUGH_REPLICAS before the append). acks=0 gets no response
// at all, and a failed acks=0 request closes the connection, as Kafka does,
// so that the client notices and refreshes its metadata. Partitions of one
// request append concurrently (produceWorkers at a time, or all at once
// when each waits for its ISR: produceAll); replication.Partition
// coalesces concurrent appends to one partition into one write and checks
// idempotent sequences.
// Transactional produce (a transactional id, transactional batches) needs
// Write on the transactional id, and transactional batches need a
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise, as
// Kafka). The batches are checked like idempotent ones and open the
// producer's transaction in each partition (replication/txn.go); a batch
// of an epoch older than the producer's (bumped by a marker too) is
// INVALID_PRODUCER_EPOCH, as Kafka answers since 2.7.
// Internal topics (__consumer_offsets) are written only by the broker:
// INVALID_TOPIC_EXCEPTION.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/internal/safe"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/quota"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
)

// hasTransactionalBatches reports whether a batch of r has the
// transactional attribute, peeking at batch headers only (the records are
// validated later, per partition).
func hasTransactionalBatches(r *kmsg.ProduceRequest) bool {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			recs := r.Topics[i].Partitions[j].Records
			for len(recs) >= record.HeaderSize {
				b := record.Batch(recs)
				if b.Transactional() {
					return true
				}
				size, _ := record.PeekSize(recs)
				if size < record.HeaderSize || size > len(recs) {
					break
				}
				recs = recs[size:]
			}
		}
	}
	return false
}

func handleProduce(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)

	var reqErr error
	switch {
	case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
		reqErr = errInvalidRequiredAcks
	case r.TransactionID != nil && !s.az.allowed(rc, acl.OpWrite, acl.ResourceTransactionalID, *r.TransactionID):
		reqErr = fmt.Errorf("%w: transactional id %q", errTransactionalIDAuthorization, *r.TransactionID)
	case r.TransactionID == nil && hasTransactionalBatches(r):
		// Kafka's KafkaApis.handleProduceRequest: transactional
		// records need a transactional id the principal may write.
		reqErr = fmt.Errorf("%w: transactional records without a transactional id", errTransactionalIDAuthorization)
	}

	n := 0
	for i := range r.Topics {
		n += len(r.Topics[i].Partitions)
	}
	// acks=-1 waits at most timeout_ms for the ISR; a timeout of 0 or
	// less answers at once with what is already replicated (the rest
	// REQUEST_TIMED_OUT), as Kafka's DelayedProduce does, never waits
	// forever. On a connection the wait is pipelined (below) and also
	// ends when the client goes away.
	parent := context.Background()
	var pipe *producePipe
	if r.Acks == -1 && reqErr == nil && rc != nil && rc.conn != nil {
		parent = rc.conn.ackCtx
		pipe = &producePipe{waits: make([]produceWait, n)}
		pipe.g.Reset(rc.conn.ackWake)
	}
	ctx, cancel := context.WithTimeout(parent, time.Duration(max(r.TimeoutMillis, 0))*time.Millisecond)
	cancelled := false
	defer func() {
		if !cancelled {
			cancel()
		}
	}()

	resp.Topics = make([]kmsg.ProduceResponseTopic, len(r.Topics))
	jobs := make([]produceJob, 0, n)
	k := 0 // the partition's position in the request: pipe.waits[k]
	for i := range r.Topics {
		rt := &r.Topics[i]
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		topicErr := reqErr
		if topicErr == nil && !s.az.allowedTopic(rc, acl.OpWrite, rt.Topic) {
			topicErr = errTopicAuthorization
		}
		var t *replica.Topic
		if topicErr == nil {
			t = s.rm.Topic(rt.Topic) // once per topic, not per partition
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			pw := pipe.at(k)
			pre := rc.prechecked(k, rp.Records)
			if pre.CRC {
				s.precheckedCRC.Add(1)
				if pre.Records {
					s.precheckedRecords.Add(1)
				}
			}
			k++
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			if topicErr != nil {
				s.fillProduceError(sp, rt.Topic, topicErr)
				continue
			}
			jobs = append(jobs, produceJob{t: t, topic: rt.Topic, rp: rp, pre: pre, sp: sp, pw: pw})
		}
	}
	// An append that waits for its ISR (acks=-1 outside a connection's
	// pipeline) gets its own goroutine, so that the request waits for its
	// slowest partition, not for their sum. Every other append returns
	// once it is in the log: produceWorkers goroutines, this one among
	// them, take the partitions in turn. One goroutine per partition cost
	// more than the appends of many small batches: with 10,000 partitions
	// a request carries a few hundred one-record batches, and each
	// goroutine's start and stack growth (runtime.newstack, copystack)
	// was 10% of the broker's CPU under `sluice perf omb`.
	workers := min(len(jobs), produceWorkers)
	if r.Acks == -1 && pipe == nil {
		workers = len(jobs)
	}
	s.produceAll(ctx, rc, r.Acks, jobs, workers, pipe)
	pipelined := false
	if pipe != nil {
		pipe.appended = time.Now()
		pipe.g.Seal()
		for i := range pipe.waits {
			pipelined = pipelined || pipe.waits[i].p != nil
		}
	}

	if s.quotas.Enabled() && rc != nil {
		user, cid := rc.quotaIDs()
		rc.throttle(quota.Produce, s.quotas.Record(quota.Produce, user, cid, float64(produceSize(rc, r))))
	}
	if r.Acks == 0 {
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				if sp.ErrorCode != 0 {
					return nil, fmt.Errorf("server: acks=0 produce to %s-%d failed: %s", st.Topic, sp.Partition, kerr.ErrorForCode(sp.ErrorCode))
				}
			}
		}
		return nil, nil
	}
	out := kresp(resp)
	if pipelined {
		cancelled = true
		out.wait = func() (metrics.Stamp, time.Duration) {
			defer cancel()
			return pipe.wait(ctx, s)
		}
		out.release = func() {
			cancel()
			pipe.cancel(errClientGone)
		}
	}
	return out, nil
}

// Pipelined acks=all produce. Kafka reads a connection's next request only
// after answering the one before, so an acks=all producer with several
// requests in flight still has them appended one ISR round trip apart: the
// leader appends, waits for its followers to fetch and fetch again, answers,
// and only then reads the next request, and its followers fetch one
// request's bytes at a time. A connection here appends its next produce
// request while the one before waits for its ISR: the handler appends
// (Partition.AppendLocal, which links each partition's AckWatch with the
// append) and returns a response whose wait the connection's writer runs
// before encoding it, so responses still leave in request order, and each
// only once the ISR has its records (or with the error the wait ended
// in). The outcome of each partition is decided by the partition when it
// is known (the HW passed the records, leadership was lost, the ISR
// shrank, the partition closed: replication/ackwait.go), not when the
// writer gets to the response, which may be a full timeout later: by then
// the partition may have become a follower, truncated the records and
// moved its HW past them. The writer only blocks until the request's
// AckGroup is done or its timeout passes. What is not
// yet acknowledged is exactly what Kafka would have in the log had the
// producer sent those requests on several connections; the records of a
// request whose wait fails stay in the log, as in Kafka. The pipeline is
// as deep as the requests the client sends before reading an answer
// (max.in.flight.requests.per.connection, 5 for an idempotent producer)
// and the connection's response queue (maxQueuedResponses, 32): the
// handler stops reading requests while that queue is full.
//
// Only Produce is pipelined after Produce: the handler waits for the
// pipelined produce requests of the connection to be decided before it
// handles any other request (conn.awaitPipeline), so a ListOffsets, Fetch,
// EndTxn... sent after a produce sees it, as Kafka, which handles a
// connection's requests one at a time, answers. Produce after produce
// keeps the order of the appends, so idempotent sequences are checked in
// the order sent. A client that goes away ends the waits (its requests
// stay appended), and acks=-1 produce requests the handler takes after
// that are not appended (conn.ackCtx).
//
// Metrics: the request's remote time is its own wait, from the appends to
// the outcome (Handled); the time until the writer takes the response,
// behind the waits of the requests before it, is response queue time.
//
// What it does not change: a follower still fetches one request's bytes
// per fetch (one follower Fetch per produce request per follower in
// scripts/bench-replication.sh, as before), since it is woken by the first
// append after its last fetch. What it removes is the leader's idle time
// between requests, which shows when the brokers have more than one core
// to run on (BROKER_CPUS=0,1 in that script).

// producePipe is one pipelined produce request's wait for its ISRs: one
// AckGroup, and one AckWatch per partition of the request, by position
// (one allocation per request; the watches are linked on the partitions,
// so the slice never grows). Each partition's append writes its own
// entry; the group is sealed once they are all done.
type producePipe struct {
	g        replication.AckGroup
	waits    []produceWait
	appended time.Time // when the appends were done (the wait's start)
}

// produceWait is one partition's wait; p nil: none (the append failed or
// never ran).
type produceWait struct {
	w     replication.AckWatch
	p     *replica.Partition
	sp    *kmsg.ProduceResponseTopicPartition
	topic string
}

// errClientGone ends the waits of a connection whose client went away;
// the records stay in the log. The response is normally dropped; should
// it be written, it says REQUEST_TIMED_OUT, never success.
var errClientGone = fmt.Errorf("server: the client went away while the request waited for its ISR: %w", context.DeadlineExceeded)

// at returns the k-th partition's entry (nil for a nil pipe).
func (pp *producePipe) at(k int) *produceWait {
	if pp == nil {
		return nil
	}
	return &pp.waits[k]
}

// wait waits until every partition's outcome is decided (they replicate
// concurrently, so the request waits for the slowest) or ctx ends, which
// decides those left (REQUEST_TIMED_OUT), and fills the error of the
// partitions that failed, as producePartition does for an unpipelined
// append. It returns when the outcome was decided and how long the
// request waited for it since its appends.
func (pp *producePipe) wait(ctx context.Context, s *Server) (metrics.Stamp, time.Duration) {
	if err := pp.g.Wait(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			err = errClientGone
		}
		pp.cancel(err)
	}
	for i := range pp.waits {
		w := &pp.waits[i]
		if w.p == nil {
			continue
		}
		if err := w.w.Err(); err != nil {
			s.fillProduceError(w.sp, w.topic, err)
		}
	}
	at := pp.g.DecidedAt()
	return metrics.StampAt(at), at.Sub(pp.appended)
}

// cancel decides with err every partition's wait still undecided.
func (pp *producePipe) cancel(err error) {
	for i := range pp.waits {
		if pp.waits[i].p != nil {
			pp.waits[i].w.Cancel(err)
		}
	}
}

// produceWorkers is how many goroutines append a request's partitions
// when no append waits for its ISR (handleProduce): enough to keep two
// cores busy when one partition's append waits for another's round or
// for a reopened file.
const produceWorkers = 4

// produceJob is one partition of a produce request to append: its topic
// (t nil: unknown), request and response entries and pipeline entry.
type produceJob struct {
	t     *replica.Topic
	topic string
	rp    *kmsg.ProduceRequestTopicPartition
	pre   record.Prechecked
	sp    *kmsg.ProduceResponseTopicPartition
	pw    *produceWait
}

// produceAll appends jobs with workers goroutines, the caller's among
// them (workers <= 1: in order, on the caller's), and returns when every
// append is done.
func (s *Server) produceAll(ctx context.Context, rc *reqCtx, acks int16, jobs []produceJob, workers int, pipe *producePipe) {
	run := func(j *produceJob) {
		s.producePartition(ctx, rc, acks, j.t, j.topic, j.rp, j.pre, j.sp, pipe, j.pw)
	}
	if workers <= 1 {
		for i := range jobs {
			run(&jobs[i])
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for i := next.Add(1) - 1; i < int64(len(jobs)); i = next.Add(1) - 1 {
			run(&jobs[i])
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// producePartition appends one partition's batches and fills its response.
// A panic (a bug) fails this partition only.
// With pipe (acks -1 only) the ISR wait is left to pipe, through pw, the
// partition's entry.
func (s *Server) producePartition(ctx context.Context, rc *reqCtx, acks int16, t *replica.Topic, topicName string, rp *kmsg.ProduceRequestTopicPartition, pre record.Prechecked, sp *kmsg.ProduceResponseTopicPartition, pipe *producePipe, pw *produceWait) {
	err := safe.Call(s.log, "server: produce", func() error {
		s.producePartitionUnsafe(ctx, rc, acks, t, topicName, rp, pre, sp, pipe, pw)
		return nil
	})
	if err != nil {
		s.panics.Add(1)
		s.fillProduceError(sp, topicName, err)
	}
}

func (s *Server) producePartitionUnsafe(ctx context.Context, rc *reqCtx, acks int16, t *replica.Topic, topicName string, rp *kmsg.ProduceRequestTopicPartition, pre record.Prechecked, sp *kmsg.ProduceResponseTopicPartition, pipe *producePipe, pw *produceWait) {
	if t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Parts) {
		s.fillProduceError(sp, topicName, errUnknownTopicOrPartition)
		return
	}
	if isInternalTopic(topicName) {
		// Only the broker's coordinators write there (Kafka: "Cannot
		// append to internal topic").
		s.fillProduceError(sp, topicName, fmt.Errorf("%w: clients cannot produce to the internal topic %s", errInvalidTopic, topicName))
		return
	}
	p := t.Parts[rp.Partition]
	if p == nil { // cluster mode: no replica here; or its log dir failed
		err := s.rm.Offline(topicName, rp.Partition)
		if err == nil {
			err = replication.ErrNotLeader
		}
		s.fillProduceError(sp, topicName, err)
		return
	}
	switch {
	case len(rp.Records) == 0:
		s.fillProduceError(sp, topicName, fmt.Errorf("%w: no record batch", errInvalidRequest))
		countProduceError(p.Stats, sp.ErrorCode)
		return
	case int64(len(rp.Records)) > t.Config.Log.SegmentBytes:
		s.fillProduceError(sp, topicName, fmt.Errorf("%w: %d bytes, segment.bytes %d", errRecordListTooLarge, len(rp.Records), t.Config.Log.SegmentBytes))
		countProduceError(p.Stats, sp.ErrorCode)
		return
	}
	if t.Config.KeySchemaValidation || t.Config.ValueSchemaValidation { // schema_validate.go
		keys := schemaStrategy(t.Config.KeySchemaValidation, t.Config.KeySubjectStrategy)
		values := schemaStrategy(t.Config.ValueSchemaValidation, t.Config.ValueSubjectStrategy)
		if err := s.schemas.validate(ctx, topicName, keys, values, t.Config.Rules.MaxDecompressed, rp.Records); err != nil {
			s.fillSchemaError(sp, topicName, err)
			countProduceError(p.Stats, sp.ErrorCode)
			return
		}
	}
	var res replication.AppendResult
	var err error
	if pipe != nil {
		res, err = p.AppendLocal(rp.Records, pre, &pw.w, &pipe.g)
		if err == nil { // pw.w is linked: the writer waits for it
			pw.p, pw.sp, pw.topic = p, sp, topicName // read after pipe.g is sealed
		}
	} else {
		res, err = p.AppendChecked(ctx, rp.Records, acks, pre)
		rc.addRemote(res.Waited)
	}
	// Counted at the local append, as Kafka does: records appended whose
	// acks=-1 wait then failed are in the log all the same.
	switch {
	case res.Appended:
		p.Stats.Produced(res.LastOffset-res.BaseOffset+1, int64(len(rp.Records)))
	case err == nil:
		p.Stats.Produced(0, 0) // a retry (duplicate): nothing appended
	}
	if err != nil {
		s.rm.ReportStorageError(p, err) // an I/O error takes the log dir offline
		s.fillProduceError(sp, topicName, err)
		if !res.Appended {
			countProduceError(p.Stats, sp.ErrorCode)
		}
		return
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
}

// fillProduceError sets a partition's error and the -1 offsets Kafka sends
// with it.
func (s *Server) fillProduceError(sp *kmsg.ProduceResponseTopicPartition, topicName string, err error) {
	sp.ErrorCode = errorCode(err)
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
	sp.ErrorMessage = errorMessage(err)
	switch sp.ErrorCode {
	case kerr.UnknownServerError.Code, kerr.KafkaStorageError.Code:
		if !errors.Is(err, replica.ErrLogDirOffline) { // logged once, when the dir failed
			s.log.Error("server: produce failed", "topic", topicName, "partition", sp.Partition, "err", err)
		}
	}
}
