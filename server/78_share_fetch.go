package server

// ShareFetch (key 78), versions 1-2 (Kafka 4.2's; v0 was 4.0's early
// access and is not served): a share group member's fetch (KIP-932).
//
//	v1: the stable protocol: share sessions, MaxRecords, BatchSize,
//	    acquired records with their delivery counts, piggy-backed
//	    acknowledgements
//	v2: ShareAcquireMode (KIP-1206), IsRenewAck (KIP-1222)
//
// A request runs in this order, as Kafka's KafkaApis.handleShareFetchRequest:
//
//  1. Read on the group (GROUP_AUTHORIZATION_FAILED), a member id of 1-36
//     characters (INVALID_REQUEST), a member of the group (UNKNOWN_MEMBER_ID;
//     Sluice checks this through ShareMembership, Kafka does not), and for
//     IsRenewAck: no fetch limits and acknowledgements in every partition
//     (INVALID_REQUEST).
//  2. The share session (share_session.go): epoch 0 opens one with the
//     request's partitions, epoch N>0 must be the session's next and adds
//     Topics and drops ForgottenTopicsData, epoch -1 closes it.
//  3. The piggy-backed acknowledgements, per partition: their result is the
//     partition's AcknowledgeErrorCode. A closing request then releases what
//     the member still holds in the session's partitions and answers.
//  4. The fetch: over the session's partitions, starting one further each
//     epoch (fairness), each partition reads its log from its first
//     acquirable offset, in steps that grow while they hold too few
//     acquirable records, acquires up to MaxRecords records in all (see
//     ShareAcquireMode below) below the high watermark (the last stable
//     offset under share.isolation.level=read_committed, which also
//     archives the records of aborted transactions instead of delivering
//     them) and the end of what it read, and answers the whole batches
//     holding them with AcquiredRecords. Read on each topic
//     (TOPIC_AUTHORIZATION_FAILED in its partitions).
//  5. Long poll: when nothing was acquired, the request waits up to
//     MaxWaitMillis for an append to one of its partitions, for records to
//     be released, acknowledged or archived in its groups' partitions, or
//     for a lock or redelivery backoff in them to end. MinBytes is treated
//     as 1: acquired records are never held back waiting for more.
//
// ShareAcquireMode (KIP-1206): record_limit (1) acquires at most MaxRecords
// records; batch_optimized (0, and every v1 request) acquires, as Kafka's
// SharePartition, through the end of the batch that holds the MaxRecords-th
// record, so that a batch goes to one member rather than its bytes to each
// member holding part of it. BatchSize shapes the client's batches only. A
// share partition's state starts, when the group first fetches it, at
// share.auto.offset.reset (latest by default).

import (
	"context"
	"maps"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
)

const (
	apiKeyShareFetch       int16 = 78
	apiKeyShareAcknowledge int16 = 79
)

// withShareData returns t with ShareFetch, ShareAcknowledge and
// Describe/Alter/DeleteShareGroupOffsets.
func withShareData(t apiTable) apiTable {
	t = maps.Clone(t)
	t[apiKeyShareFetch] = api{1, 2, handleShareFetch}
	t[apiKeyShareAcknowledge] = api{1, 2, handleShareAcknowledge}
	t[apiKeyDescribeShareGroupOffsets] = api{0, 1, handleDescribeShareGroupOffsets} // 90_describe_share_group_offsets.go
	t[apiKeyAlterShareGroupOffsets] = api{0, 0, handleAlterShareGroupOffsets}       // 91_alter_share_group_offsets.go
	t[apiKeyDeleteShareGroupOffsets] = api{0, 0, handleDeleteShareGroupOffsets}     // 92_delete_share_group_offsets.go
	return t
}

// defaultShareMaxRecords is what a ShareFetch without MaxRecords gets (the
// client's max.poll.records default).
const defaultShareMaxRecords = 500

// maxShareRead bounds one partition's log read in a ShareFetch.
const maxShareRead = 8 << 20

// shareResp collects a share response's partitions, by topic, with an
// index so that a request naming many partitions costs linear work.
type shareResp[P any] struct {
	topics map[[16]byte]int
	at     map[sharePart]int // position in parts[topics[topic]]
	order  [][16]byte
	parts  [][]P
}

// get returns the entry of (topic, partition), made with mk when absent.
// The pointer is valid until the next get.
func (r *shareResp[P]) get(topic [16]byte, partition int32, mk func() P) *P {
	if r.topics == nil {
		r.topics, r.at = map[[16]byte]int{}, map[sharePart]int{}
	}
	i, ok := r.topics[topic]
	if !ok {
		i = len(r.order)
		r.topics[topic] = i
		r.order = append(r.order, topic)
		r.parts = append(r.parts, nil)
	}
	k := sharePart{topic, partition}
	j, ok := r.at[k]
	if !ok {
		j = len(r.parts[i])
		r.at[k] = j
		r.parts[i] = append(r.parts[i], mk())
	}
	return &r.parts[i][j]
}

// shareAckPart is one partition's acknowledgements, from either request.
type shareAckPart struct {
	topic     [16]byte
	partition int32
	batches   []share.AckBatch
}

// shareAckBatches converts a request's batches.
func shareAckBatches[B any](in []B, get func(*B) (int64, int64, []int8)) []share.AckBatch {
	out := make([]share.AckBatch, len(in))
	for i := range in {
		first, last, types := get(&in[i])
		ts := make([]share.AckType, len(types))
		for j, t := range types {
			ts[j] = share.AckType(t)
		}
		out[i] = share.AckBatch{First: first, Last: last, Types: ts}
	}
	return out
}

// shareResolve finds the local leader partition of (topic, partition) for
// the principal's Read: the partition, its topic name, or the error code.
func (s *Server) shareResolve(rc *reqCtx, topic [16]byte, partition int32) (*replica.Partition, string, int16) {
	if topic == ([16]byte{}) {
		return nil, "", kerr.UnknownTopicID.Code
	}
	t, err := s.lookup.resolveTopic("", topic)
	if err != nil {
		return nil, "", errorCode(err)
	}
	if !s.az.allowedTopic(rc, acl.OpRead, t.Name) {
		return nil, t.Name, kerr.TopicAuthorizationFailed.Code
	}
	if partition < 0 || int(partition) >= len(t.Parts) {
		return nil, t.Name, kerr.UnknownTopicOrPartition.Code
	}
	p := t.Parts[partition]
	if p == nil || !p.IsLeader() {
		return nil, t.Name, kerr.NotLeaderForPartition.Code
	}
	return p, t.Name, 0
}

// shareAck applies acknowledgements and returns each partition's code.
// Released records wake waiting fetches.
func (s *Server) shareAck(ctx context.Context, rc *reqCtx, group, member string, acks []shareAckPart, renew bool, cfg ShareGroupConfig) []int16 {
	codes := make([]int16, len(acks))
	pcfg := cfg.partitionConfig()
	now := s.now()
	changed := false
	for i, a := range acks {
		_, _, code := s.shareResolve(rc, a.topic, a.partition)
		if code != 0 {
			codes[i] = code
			continue
		}
		if len(a.batches) == 0 {
			continue // nothing to acknowledge, nothing to write
		}
		// Malformed batches first, as Kafka's
		// KafkaApis.validateAcknowledgementBatches before the share
		// partition is looked up.
		if err := share.CheckAckBatches(a.batches, renew); err != nil {
			codes[i] = errorCode(err)
			continue
		}
		h := s.share.parts.Lookup(share.Key{Group: group, Topic: a.topic, Partition: a.partition})
		if h == nil {
			// No share partition of the group here (never fetched since
			// the start, or its state deleted): Kafka's
			// SharePartitionManager.acknowledge answers so.
			codes[i] = kerr.UnknownTopicOrPartition.Code
			continue
		}
		key := share.Key{Group: group, Topic: a.topic, Partition: a.partition}
		h.Lock()
		h.P.ExpireLocks(now, pcfg)
		undo := h.P.Clone()
		err := h.P.Acknowledge(member, now, a.batches, renew, pcfg)
		if err == nil {
			// Durable before answered; a failed write undoes it.
			if err = s.sharePersist(ctx, key, h.P); err != nil {
				*h.P = *undo
			}
		}
		h.Unlock()
		codes[i] = errorCode(err)
		changed = changed || err == nil
	}
	if changed {
		s.share.parts.Notify()
	}
	return codes
}

// shareCtx is the context of a share request: its connection's.
func shareCtx(rc *reqCtx) context.Context {
	if rc != nil && rc.conn != nil {
		return rc.conn.ctx
	}
	return context.Background()
}

// shareMember checks the parts of a share request common to both APIs and
// returns the top-level error code.
func (s *Server) shareMember(rc *reqCtx, group, member *string) (string, string, int16) {
	g, m := "", ""
	if group != nil {
		g = *group
	}
	if member != nil {
		m = *member
	}
	if !s.az.allowed(rc, acl.OpRead, acl.ResourceGroup, g) {
		return g, m, kerr.GroupAuthorizationFailed.Code
	}
	if g == "" || m == "" || len(m) > 36 {
		return g, m, kerr.InvalidRequest.Code
	}
	if _, ok := s.share.members.Member(g, m); !ok {
		return g, m, kerr.UnknownMemberID.Code
	}
	return g, m, 0
}

func handleShareFetch(s *Server, rc *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	group, member, code := s.shareMember(rc, req.GroupID, req.MemberID)
	if code != 0 {
		resp.ErrorCode = code
		return kresp(resp), nil
	}
	cfg := s.shareDataConfig(group)
	resp.AcquisitionLockTimeoutMillis = int32(min(cfg.RecordLockDuration.Milliseconds(), 1<<31-1))
	renew := req.Version >= 2 && req.IsRenewAck
	if renew {
		if req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return kresp(resp), nil
		}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if len(p.AcknowledgementBatches) == 0 {
					resp.ErrorCode = kerr.InvalidRequest.Code
					return kresp(resp), nil
				}
			}
		}
	}
	var out shareResp[kmsg.ShareFetchResponseTopicPartition]
	entry := func(topic [16]byte, partition int32) *kmsg.ShareFetchResponseTopicPartition {
		return out.get(topic, partition, func() kmsg.ShareFetchResponseTopicPartition {
			p := kmsg.NewShareFetchResponseTopicPartition()
			p.Partition = partition
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
			return p
		})
	}
	finish := func() (*response, error) {
		for i, id := range out.order {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID, t.Partitions = id, out.parts[i]
			resp.Topics = append(resp.Topics, t)
		}
		return kresp(resp), nil
	}

	// The acknowledgements, applied once the session is checked.
	var acks []shareAckPart
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) > 0 {
				acks = append(acks, shareAckPart{t.TopicID, p.Partition, shareAckBatches(p.AcknowledgementBatches,
					func(b *kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
						return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
					})})
			}
		}
	}
	if req.ShareSessionEpoch == 0 && len(acks) > 0 {
		// A new session has nothing to acknowledge (Kafka answers the
		// whole request so).
		resp.ErrorCode = kerr.InvalidRequest.Code
		return kresp(resp), nil
	}

	// The session.
	key := shareSessionKey{group, member}
	var ss *shareSession
	s.share.mu.Lock()
	switch e := req.ShareSessionEpoch; {
	case e == 0:
		// A session the member had is replaced (Kafka's cache.remove
		// before maybeCreateSession); what the member holds stays its
		// own, to acknowledge in the new session.
		if s.share.sessions[key] == nil && len(s.share.sessions) >= maxShareSessions {
			s.share.mu.Unlock()
			resp.ErrorCode = kerr.ShareSessionLimitReached.Code
			return kresp(resp), nil
		}
		ss = &shareSession{} // epoch 0, bumped to 1 below
		if rc != nil {
			ss.owner = rc.conn
		}
		s.share.sessions[key] = ss
	default:
		ss = s.share.sessions[key]
		switch {
		case ss == nil:
			code = kerr.ShareSessionNotFound.Code
		case e != -1 && e != ss.epoch:
			code = kerr.InvalidShareSessionEpoch.Code
		case e == -1:
			delete(s.share.sessions, key)
		}
	}
	if code != 0 {
		s.share.mu.Unlock()
		resp.ErrorCode = code
		return kresp(resp), nil
	}
	closing := req.ShareSessionEpoch == -1
	if closing {
		defer s.shareGroupIdle(group) // share_state.go
	}
	if !closing {
		// Partitions named join the session, forgotten ones leave it; only
		// partitions that resolve are kept, so a session cannot grow with
		// made-up ones.
		var gone map[sharePart]struct{}
		for _, f := range req.ForgottenTopicsData {
			for _, p := range f.Partitions {
				if gone == nil {
					gone = map[sharePart]struct{}{}
				}
				gone[sharePart{f.TopicID, p}] = struct{}{}
			}
		}
		ss.forget(gone)
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				sp := sharePart{t.TopicID, p.Partition}
				if !ss.has(sp) {
					if _, _, c := s.shareResolve(rc, t.TopicID, p.Partition); c == 0 {
						ss.add(sp)
					} else {
						entry(sp.topic, sp.partition).ErrorCode = c
					}
				}
			}
		}
	}
	epoch := ss.epoch
	parts := append([]sharePart(nil), ss.parts...)
	if !closing {
		ss.bump()
	}
	s.share.mu.Unlock()

	ctx := shareCtx(rc)
	for i, c := range s.shareAck(ctx, rc, group, member, acks, renew, cfg) {
		entry(acks[i].topic, acks[i].partition).AcknowledgeErrorCode = c
	}
	if closing {
		s.releaseSession(key, &shareSession{parts: parts})
		return finish()
	}
	if renew {
		return finish()
	}

	// The fetch, with its long poll.
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	maxBytes := int64(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = 1<<31 - 1
	}
	type target struct {
		sp   sharePart
		p    *replica.Partition
		code int16
	}
	targets := make([]target, len(parts))
	waitOn := [][]fetchTarget{make([]fetchTarget, 0, len(parts))}
	for i, sp := range parts {
		// Rotate by the epoch so that each partition gets its turn first.
		sp = parts[(i+int(epoch))%len(parts)]
		p, _, c := s.shareResolve(rc, sp.topic, sp.partition)
		targets[i] = target{sp, p, c}
		if c != 0 {
			entry(sp.topic, sp.partition).ErrorCode = c
			continue
		}
		waitOn[0] = append(waitOn[0], fetchTarget{p: p, committed: cfg.ReadCommitted})
		if req.ShareSessionEpoch == 0 {
			entry(sp.topic, sp.partition) // a new session answers every partition
		}
	}
	wholeBatches := req.Version < 2 || req.ShareAcquireMode == 0 // batch_optimized
	// fill returns how many partitions acquired records or failed (the
	// request is answered when that is not 0) and when a lock expires or
	// a backoff ends next.
	fill := func() (acquired int, next time.Time) {
		remRecords, remBytes := maxRecords, maxBytes
		for _, t := range targets {
			if t.code != 0 || remRecords <= 0 || remBytes <= 0 {
				continue
			}
			recs, ranges, dl, err := s.shareAcquire(ctx, t.p, group, member, t.sp, cfg, remRecords, remBytes, wholeBatches)
			if !dl.IsZero() && (next.IsZero() || dl.Before(next)) {
				next = dl
			}
			if err != nil {
				// An error answers at once, with what was acquired.
				entry(t.sp.topic, t.sp.partition).ErrorCode = errorCode(err)
				acquired++
				continue
			}
			if len(ranges) == 0 {
				continue
			}
			e := entry(t.sp.topic, t.sp.partition)
			e.Records, e.AcquiredRecords = recs, ranges
			for _, r := range ranges {
				remRecords -= int(r.LastOffset - r.FirstOffset + 1)
			}
			remBytes -= int64(len(recs))
			acquired++
		}
		return acquired, next
	}
	s.shareLongPoll(rc, waitOn, req.MaxWaitMillis, fill)
	return finish()
}

// shareLongPoll calls fill until it acquires something, or MaxWaitMillis
// passes: between calls it waits for an append to one of the targets'
// partitions (the fetch purgatory's wake-ups), a change to any share
// partition (share.Manager.Changed), or the earliest lock expiry or backoff
// end fill reported.
func (s *Server) shareLongPoll(rc *reqCtx, targets [][]fetchTarget, maxWaitMs int32, fill func() (int, time.Time)) {
	if maxWaitMs <= 0 {
		fill()
		return
	}
	deadline := time.Now().Add(time.Duration(maxWaitMs) * time.Millisecond)
	pf := parkedFetches.Get().(*parkedFetch)
	defer pf.release(targets)
	pf.prepare(targets)
	var srvClosing, connDone <-chan struct{}
	if rc != nil {
		srvClosing, connDone = rc.closing(s)
	} else {
		srvClosing = s.closing
	}
	for {
		pf.w.Reset()
		changed := s.share.parts.Changed()
		n, next := fill()
		if n > 0 {
			return
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return
		}
		if !next.IsZero() {
			// next is on the server's clock; wait that long on the wall's.
			wait = min(wait, max(next.Sub(s.now()), time.Millisecond))
		}
		if !pf.park(targets, 1) {
			continue
		}
		pf.timer.Reset(wait)
		s.share.parked.Add(1)
		select {
		case <-pf.w.C():
			pf.timer.Stop()
		case <-changed:
			pf.timer.Stop()
		case <-pf.timer.C:
		case <-srvClosing:
			s.share.parked.Add(-1)
			fill()
			return
		case <-connDone:
			s.share.parked.Add(-1)
			return
		}
		s.share.parked.Add(-1)
	}
}

// shareAcquire acquires up to maxRecords records of one share partition for
// member (with wholeBatches, on to the end of the batch holding the last of
// them) and returns the bytes of the batches that hold them, the acquired
// ranges, and the next time a lock expires or a backoff ends there.
func (s *Server) shareAcquire(ctx context.Context, p *replica.Partition, group, member string, sp sharePart, cfg ShareGroupConfig, maxRecords int, maxBytes int64, wholeBatches bool) ([]byte, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, time.Time, error) {
	now := s.now()
	pcfg := cfg.partitionConfig()
	key := share.Key{Group: group, Topic: sp.topic, Partition: sp.partition}
	h := s.share.parts.Lookup(key)
	if h == nil {
		// The persisted state, else a new one at share.auto.offset.reset
		// (share_state.go).
		opened, err := s.shareOpen(ctx, key, pcfg.MaxRecordLocks, func() int64 { return shareStartOffset(p, cfg.AutoOffsetReset, now) })
		if err != nil {
			return nil, nil, time.Time{}, err
		}
		h = s.share.parts.Get(key, func() *share.Partition { return opened })
	}
	h.Lock()
	defer h.Unlock()
	sh := h.P
	if sh.ExpireLocks(now, pcfg) > 0 {
		// Expired deliveries count: write them (best effort: the fetch
		// goes on; an acknowledgement's write carries them otherwise).
		if err := s.sharePersist(ctx, key, sh); err != nil {
			s.log.Warn("server: share state not written after lock expiry", "group", group, "partition", sp.partition, "err", err)
		}
	}
	sh.AdvanceStart(p.LogStartOffset())
	deadline := func() time.Time {
		t, _ := sh.NextDeadline()
		return t
	}
	bound := p.HighWatermark()
	if cfg.ReadCommitted {
		bound = p.LastStableOffset()
	}
	// The log is read in steps, from the first acquirable offset on, each
	// twice the last (shareReadStep first), until maxRecords are acquired,
	// the bound is reached or the read budget is spent: one read of the
	// whole budget (8 MiB) for a few hundred records cost 16 bytes
	// allocated per byte delivered (BENCHMARKS.md, share groups).
	budget := int(min(max(maxBytes, 1), maxShareRead))
	step := min(budget, max(shareReadMin, min(shareReadStep, maxRecords*1024)))
	var (
		keep    []byte
		acq     []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
		scratch []byte
	)
	for from := sh.FirstAcquirable(now); maxRecords > 0 && budget > 0 && from < bound; {
		if from == sh.Next() && pcfg.MaxRecordLocks > 0 && sh.InFlight() >= pcfg.MaxRecordLocks {
			break // the in-flight bound
		}
		sl, err := p.ReadBelow(from, step, bound)
		if err != nil {
			if len(acq) > 0 {
				break // answer what was acquired; the next fetch meets the error
			}
			return nil, nil, deadline(), err
		}
		scratch, err = sl.AppendTo(scratch[:0])
		sl.Release()
		if err != nil {
			if len(acq) > 0 {
				break
			}
			return nil, nil, deadline(), err
		}
		covered := int64(-1)
		eachBatch(scratch, func(b record.Batch) { covered = b.NextOffset() })
		if covered <= from {
			break
		}
		budget -= len(scratch)
		step = min(budget, step*2)
		ranges := sh.Acquire(member, now, maxRecords, min(bound, covered), pcfg)
		if n := rangesLen(ranges); wholeBatches && n >= maxRecords {
			// The limit was reached: the rest of the last record's batch too.
			last := ranges[len(ranges)-1].Last
			eachBatch(scratch, func(b record.Batch) {
				if b.BaseOffset() <= last && last < b.LastOffset() {
					more := sh.Acquire(member, now, int(b.LastOffset()-last), min(bound, b.NextOffset()), pcfg)
					ranges = mergeRanges(ranges, more)
				}
			})
		}
		if cfg.ReadCommitted && len(ranges) > 0 {
			ranges = archiveAborted(p, sh, member, scratch, ranges, from, bound)
		}
		if len(ranges) > 0 {
			first, last := ranges[0].First, ranges[len(ranges)-1].Last
			// Keep the batches that hold acquired records.
			eachBatch(scratch, func(b record.Batch) {
				if b.LastOffset() >= first && b.BaseOffset() <= last {
					keep = append(keep, b[:b.Size()]...)
				}
			})
			for _, r := range ranges {
				maxRecords -= int(r.Last - r.First + 1)
				if n := len(acq); n > 0 && acq[n-1].LastOffset == r.First-1 && acq[n-1].DeliveryCount == r.DeliveryCount {
					acq[n-1].LastOffset = r.Last // runs across reads are one
					continue
				}
				acq = append(acq, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: r.First, LastOffset: r.Last, DeliveryCount: r.DeliveryCount})
			}
		}
		// On past what is held by others: the next acquirable offset.
		from = max(covered, sh.FirstAcquirable(now))
	}
	if len(acq) == 0 {
		return nil, nil, deadline(), nil
	}
	return keep, acq, deadline(), nil
}

// rangesLen is the number of offsets in ranges.
func rangesLen(ranges []share.Range) int {
	n := 0
	for _, r := range ranges {
		n += int(r.Last - r.First + 1)
	}
	return n
}

// mergeRanges appends more (after a's offsets) to a, joining adjacent runs
// of the same delivery count.
func mergeRanges(a, more []share.Range) []share.Range {
	for _, r := range more {
		if n := len(a); n > 0 && a[n-1].Last == r.First-1 && a[n-1].DeliveryCount == r.DeliveryCount {
			a[n-1].Last = r.Last
			continue
		}
		a = append(a, r)
	}
	return a
}

// shareReadMin and shareReadStep bound the first log read of a share
// partition in a ShareFetch: a KiB per record asked for, within them.
const (
	shareReadMin  = 16 << 10
	shareReadStep = 256 << 10
)

// archiveAborted archives, under read_committed, the records just acquired
// that belong to aborted transactions (they are never delivered) and
// returns the acquired ranges left.
func archiveAborted(p *replica.Partition, sh *share.Partition, member string, buf []byte, ranges []share.Range, from, bound int64) []share.Range {
	aborted, err := p.AbortedTransactions(from, bound)
	if err != nil || len(aborted) == 0 {
		return ranges
	}
	eachBatch(buf, func(b record.Batch) {
		if !b.Transactional() || b.Control() {
			return
		}
		for _, a := range aborted {
			if a.ProducerID == b.ProducerID() && b.BaseOffset() >= a.FirstOffset && b.BaseOffset() <= a.LastOffset {
				sh.ArchiveAcquired(member, b.BaseOffset(), b.LastOffset())
				return
			}
		}
	})
	var out []share.Range
	for _, r := range ranges {
		for off := r.First; off <= r.Last; off++ {
			if st, _, ok := sh.Record(off); !ok || st != share.Acquired {
				continue
			}
			if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == r.DeliveryCount {
				out[n-1].Last = off
				continue
			}
			out = append(out, share.Range{First: off, Last: off, DeliveryCount: r.DeliveryCount})
		}
	}
	return out
}

// eachBatch calls f for each whole batch in b, in order.
func eachBatch(b []byte, f func(record.Batch)) {
	for len(b) >= record.HeaderSize {
		bt := record.Batch(b)
		size := bt.Size()
		if size < record.HeaderSize || size > len(b) {
			return
		}
		f(bt)
		b = b[size:]
	}
}

// shareStartOffset is where a group's new share partition starts:
// share.auto.offset.reset's latest (the high watermark), earliest (the log
// start) or by_duration (the first record at or after now minus the
// duration; the high watermark when none).
func shareStartOffset(p *replica.Partition, reset string, now time.Time) int64 {
	switch {
	case reset == "earliest":
		return p.LogStartOffset()
	case strings.HasPrefix(reset, "by_duration:"):
		if d, err := parseByDuration(strings.TrimPrefix(reset, "by_duration:")); err == nil {
			if off, _, ok, err := p.OffsetForTimestamp(now.Add(-d).UnixMilli()); err == nil && ok {
				return off
			}
		}
	}
	return p.HighWatermark()
}
