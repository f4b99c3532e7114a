package e2e

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestSarama drives the broker with sarama (github.com/IBM/sarama), a Go
// client with its own protocol implementation, its own choice of request
// versions (from config.Version, capped by ApiVersions) and its own
// consumer-group implementation: admin calls, an idempotent sync producer,
// an async producer in every codec, a consumer group that commits and
// resumes, a plain partition consumer, and the committed offsets read back
// through the admin client. One subtest per protocol version sarama is
// told the cluster runs.
func TestSarama(t *testing.T) {
	t.Parallel()
	for _, v := range []sarama.KafkaVersion{sarama.V2_8_0_0, sarama.V3_6_0_0, sarama.MaxVersion} {
		t.Run("version="+v.String(), func(t *testing.T) { testSarama(t, v) })
	}
}

const (
	saramaSyncN    = 3000 // keyed messages through the sync producer
	saramaAsyncN   = 400  // messages per codec through the async producer
	saramaMoreN    = 300  // produced after the group committed
	saramaParts    = 3
	saramaGroup    = "sarama-group"
	saramaRetMs    = "3600000"
	saramaPhaseMax = 90 * time.Second // per-phase deadline
)

// dumpBatchRE reads a batch line of `sluice dump-log`.
var dumpBatchRE = regexp.MustCompile(`producerId: (-?\d+) .* compresscodec: (\S+) .* isvalid: (\S+)`)

// saramaLog collects sarama's own log lines, shown when a subtest fails.
type saramaLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *saramaLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *saramaLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// sent is what a producer's ack said about one message.
type sent struct {
	partition int32
	offset    int64
	headers   []sarama.RecordHeader
}

func testSarama(t *testing.T, version sarama.KafkaVersion) {
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=100")
	slog := &saramaLog{}
	prevLogger := sarama.Logger
	sarama.Logger = log.New(slog, "[sarama] ", log.Ltime|log.Lmicroseconds)
	t.Cleanup(func() {
		sarama.Logger = prevLogger
		if t.Failed() {
			t.Logf("sarama log:\n%s", slog.String())
			t.Logf("broker log:\n%s", b.logText())
		}
	})
	addrs := []string{b.addr}
	topic := "sarama-" + version.String()
	start := time.Now()

	newConfig := func() *sarama.Config {
		cfg := sarama.NewConfig()
		cfg.Version = version
		cfg.ClientID = "sluice-e2e-sarama"
		cfg.Net.DialTimeout = 10 * time.Second
		cfg.Net.ReadTimeout = 30 * time.Second
		cfg.Net.WriteTimeout = 10 * time.Second
		cfg.Metadata.Retry.Max = 5
		cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
		return cfg
	}

	// ---- ClusterAdmin: create, describe, list, describe config.
	admin, err := sarama.NewClusterAdmin(addrs, newConfig())
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer admin.Close()
	ret := saramaRetMs
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions: saramaParts, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &ret},
	}, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: saramaParts, ReplicationFactor: 1}, false); err == nil {
		t.Errorf("CreateTopic of an existing topic succeeded")
	} else if !errorsIsKError(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("CreateTopic of an existing topic: %v, want %v", err, sarama.ErrTopicAlreadyExists)
	}
	mds, err := admin.DescribeTopics([]string{topic})
	if err != nil {
		t.Fatalf("DescribeTopics: %v", err)
	}
	if len(mds) != 1 || mds[0].Name != topic || mds[0].Err != sarama.ErrNoError {
		t.Fatalf("DescribeTopics: %+v", mds)
	}
	if len(mds[0].Partitions) != saramaParts {
		t.Fatalf("DescribeTopics: %d partitions, want %d", len(mds[0].Partitions), saramaParts)
	}
	for _, p := range mds[0].Partitions {
		if p.Err != sarama.ErrNoError || p.Leader != 0 || len(p.Replicas) != 1 || p.Replicas[0] != 0 ||
			len(p.Isr) != 1 || p.Isr[0] != 0 {
			t.Errorf("DescribeTopics partition %d: err=%v leader=%d replicas=%v isr=%v", p.ID, p.Err, p.Leader, p.Replicas, p.Isr)
		}
	}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if d, ok := topics[topic]; !ok {
		t.Fatalf("ListTopics lacks %s: %v", topic, topics)
	} else {
		if d.NumPartitions != saramaParts || d.ReplicationFactor != 1 {
			t.Errorf("ListTopics %s: partitions=%d rf=%d", topic, d.NumPartitions, d.ReplicationFactor)
		}
		if v := d.ConfigEntries["retention.ms"]; v == nil || *v != saramaRetMs {
			t.Errorf("ListTopics %s: retention.ms = %v, want %s", topic, strPtr(v), saramaRetMs)
		}
	}
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("DescribeConfig: %v", err)
	}
	found := false
	for _, e := range entries {
		if e.Name == "retention.ms" {
			found = true
			if e.Value != saramaRetMs || e.Default {
				t.Errorf("DescribeConfig retention.ms = %q (default=%v, source=%v), want %s set on the topic",
					e.Value, e.Default, e.Source, saramaRetMs)
			}
		}
	}
	if !found || len(entries) < 2 {
		t.Errorf("DescribeConfig returned %d entries, retention.ms found=%v", len(entries), found)
	}

	expect := map[string]sent{} // key -> the ack's partition/offset and the headers sent
	record := func(m *sarama.ProducerMessage) {
		t.Helper()
		k := string(m.Key.(sarama.StringEncoder))
		if _, dup := expect[k]; dup {
			t.Fatalf("key %s produced twice", k)
		}
		if m.Offset < 0 || m.Partition < 0 || m.Partition >= saramaParts {
			t.Fatalf("key %s: ack with partition %d offset %d", k, m.Partition, m.Offset)
		}
		expect[k] = sent{m.Partition, m.Offset, m.Headers}
	}
	newMsg := func(key, src string, i int) *sarama.ProducerMessage {
		return &sarama.ProducerMessage{
			Topic: topic,
			Key:   sarama.StringEncoder(key),
			Value: sarama.StringEncoder("value-" + key),
			Headers: []sarama.RecordHeader{
				{Key: []byte("src"), Value: []byte(src)},
				{Key: []byte("idx"), Value: []byte(strconv.Itoa(i))},
			},
		}
	}
	producerConfig := func() *sarama.Config {
		cfg := newConfig()
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Return.Successes = true
		cfg.Producer.Return.Errors = true
		cfg.Producer.Retry.Max = 5
		cfg.Producer.Retry.Backoff = 100 * time.Millisecond
		return cfg
	}
	syncProduce := func(prefix string, n int) {
		t.Helper()
		p, err := sarama.NewSyncProducer(addrs, producerConfig())
		if err != nil {
			t.Fatalf("NewSyncProducer: %v", err)
		}
		defer p.Close()
		deadline := time.Now().Add(saramaPhaseMax)
		const batch = 250
		for i := 0; i < n; {
			if time.Now().After(deadline) {
				t.Fatalf("sync producer: %d of %d sent after %v", i, n, saramaPhaseMax)
			}
			if i%(2*batch) == 0 { // one at a time now and then, SendMessages otherwise
				m := newMsg(fmt.Sprintf("%s-%05d", prefix, i), prefix, i)
				part, off, err := p.SendMessage(m)
				if err != nil {
					t.Fatalf("SendMessage %d: %v", i, err)
				}
				if part != m.Partition || off != m.Offset {
					t.Fatalf("SendMessage returned %d/%d, message says %d/%d", part, off, m.Partition, m.Offset)
				}
				record(m)
				i++
				continue
			}
			var msgs []*sarama.ProducerMessage
			for ; i < n && len(msgs) < batch; i++ {
				msgs = append(msgs, newMsg(fmt.Sprintf("%s-%05d", prefix, i), prefix, i))
			}
			if err := p.SendMessages(msgs); err != nil {
				t.Fatalf("SendMessages: %v", err)
			}
			for _, m := range msgs {
				record(m)
			}
		}
	}

	// ---- SyncProducer, idempotent, acks=all.
	syncProduce("sync", saramaSyncN)

	// ---- AsyncProducer in every codec; every message must be acked.
	codecs := []sarama.CompressionCodec{sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD}
	for _, codec := range codecs {
		cfg := producerConfig()
		cfg.Producer.Compression = codec
		cfg.Producer.Flush.Messages = 50
		cfg.Producer.Flush.Frequency = 5 * time.Millisecond
		p, err := sarama.NewAsyncProducer(addrs, cfg)
		if err != nil {
			t.Fatalf("NewAsyncProducer(%v): %v", codec, err)
		}
		name := codec.String()
		timeout := time.NewTimer(saramaPhaseMax)
		nsent, nacked := 0, 0
		var errs []error
		for nacked+len(errs) < saramaAsyncN {
			var in chan<- *sarama.ProducerMessage
			var next *sarama.ProducerMessage
			if nsent < saramaAsyncN {
				in = p.Input()
				next = newMsg(fmt.Sprintf("%s-%05d", name, nsent), name, nsent)
			}
			select {
			case in <- next:
				nsent++
			case m := <-p.Successes():
				record(m)
				nacked++
			case e := <-p.Errors():
				errs = append(errs, e)
			case <-timeout.C:
				p.AsyncClose()
				t.Fatalf("async producer %s: %d sent, %d acked, %d errors after %v", name, nsent, nacked, len(errs), saramaPhaseMax)
			}
		}
		timeout.Stop()
		if err := p.Close(); err != nil {
			t.Errorf("async producer %s Close: %v", name, err)
		}
		if len(errs) > 0 {
			t.Fatalf("async producer %s: %d errors, first: %v", name, len(errs), errs[0])
		}
	}
	total := len(expect)
	if total != saramaSyncN+len(codecs)*saramaAsyncN {
		t.Fatalf("%d acks recorded, want %d", total, saramaSyncN+len(codecs)*saramaAsyncN)
	}
	perPart := map[int32]int{}
	for _, s := range expect {
		perPart[s.partition]++
	}
	if len(perPart) != saramaParts {
		t.Errorf("keys landed in %d partitions, want %d: %v", len(perPart), saramaParts, perPart)
	}

	// The batches on disk are as sarama compressed them, and all carry the
	// idempotent producer's id.
	codecBatches := map[string]int{}
	for p := 0; p < saramaParts; p++ {
		seg := filepath.Join(b.dir, fmt.Sprintf("%s-%d", topic, p), "00000000000000000000.log")
		out, stderr, err := run(t, 60*time.Second, "", sluiceBinary(t), "dump-log", seg)
		if err != nil {
			t.Fatalf("dump-log %s: %v\n%s", seg, err, stderr)
		}
		for _, l := range lines(out) {
			m := dumpBatchRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			if m[1] == "-1" || m[3] != "true" {
				t.Errorf("partition %d: batch with producerId %s, isvalid %s: %s", p, m[1], m[3], l)
			}
			codecBatches[m[2]]++
		}
	}
	for _, c := range append([]string{"none"}, "gzip", "snappy", "lz4", "zstd") {
		if codecBatches[c] == 0 {
			t.Errorf("no %s batch on disk: %v", c, codecBatches)
		}
	}
	if len(codecBatches) != 5 {
		t.Errorf("batch codecs on disk: %v", codecBatches)
	}

	client, err := sarama.NewClient(addrs, newConfig())
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer client.Close()
	highWatermarks := func() map[int32]int64 {
		t.Helper()
		hw := map[int32]int64{}
		for p := int32(0); p < saramaParts; p++ {
			off, err := client.GetOffset(topic, p, sarama.OffsetNewest)
			if err != nil {
				t.Fatalf("GetOffset(%d, newest): %v", p, err)
			}
			hw[p] = off
			if low, err := client.GetOffset(topic, p, sarama.OffsetOldest); err != nil || low != 0 {
				t.Fatalf("GetOffset(%d, oldest) = %d, %v; want 0", p, low, err)
			}
		}
		return hw
	}
	hw := highWatermarks()
	for p, n := range perPart {
		if hw[p] != int64(n) {
			t.Errorf("partition %d: high watermark %d, %d messages acked there", p, hw[p], n)
		}
	}

	// check verifies one consumed message against what its producer sent.
	check := func(m *sarama.ConsumerMessage) error {
		k := string(m.Key)
		s, ok := expect[k]
		if !ok {
			return fmt.Errorf("unknown key %q at %d/%d", k, m.Partition, m.Offset)
		}
		if m.Topic != topic || m.Partition != s.partition || m.Offset != s.offset {
			return fmt.Errorf("key %s at %s %d/%d, acked at %d/%d", k, m.Topic, m.Partition, m.Offset, s.partition, s.offset)
		}
		if string(m.Value) != "value-"+k {
			return fmt.Errorf("key %s: value %q", k, m.Value)
		}
		if len(m.Headers) != len(s.headers) {
			return fmt.Errorf("key %s: %d headers, want %d", k, len(m.Headers), len(s.headers))
		}
		for i, h := range m.Headers {
			if !bytes.Equal(h.Key, s.headers[i].Key) || !bytes.Equal(h.Value, s.headers[i].Value) {
				return fmt.Errorf("key %s: header %d = %s=%s, want %s=%s", k, i, h.Key, h.Value, s.headers[i].Key, s.headers[i].Value)
			}
		}
		if m.Timestamp.Before(start.Add(-time.Minute)) || m.Timestamp.After(time.Now().Add(time.Minute)) {
			return fmt.Errorf("key %s: timestamp %v, test started %v", k, m.Timestamp, start)
		}
		return nil
	}

	groupConfig := func() *sarama.Config {
		cfg := newConfig()
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Enable = false // commit explicitly
		cfg.Consumer.Return.Errors = true
		cfg.Consumer.Group.Session.Timeout = 10 * time.Second
		cfg.Consumer.Group.Heartbeat.Interval = time.Second
		cfg.Consumer.Group.Rebalance.Timeout = 30 * time.Second
		return cfg
	}
	// consumeGroup runs one consumer-group member until it has received
	// want messages (then waits grace for any extra), commits what it
	// marked, closes, and returns the messages in arrival order per
	// partition.
	consumeGroup := func(want int, grace time.Duration) map[int32][]*sarama.ConsumerMessage {
		t.Helper()
		cg, err := sarama.NewConsumerGroup(addrs, saramaGroup, groupConfig())
		if err != nil {
			t.Fatalf("NewConsumerGroup: %v", err)
		}
		h := &saramaHandler{want: want, done: make(chan struct{}), got: map[int32][]*sarama.ConsumerMessage{}}
		var cgErrs []error
		var errMu sync.Mutex
		errsDone := make(chan struct{})
		go func() {
			defer close(errsDone)
			for e := range cg.Errors() {
				errMu.Lock()
				cgErrs = append(cgErrs, e)
				errMu.Unlock()
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), saramaPhaseMax)
		defer cancel()
		consumeDone := make(chan error, 1)
		go func() {
			var err error
			for i := 0; i < 20 && ctx.Err() == nil; i++ { // Consume returns at each rebalance
				if err = cg.Consume(ctx, []string{topic}, h); err != nil {
					break
				}
			}
			consumeDone <- err
		}()
		select {
		case <-h.done:
		case err := <-consumeDone:
			cg.Close()
			t.Fatalf("Consume returned early: %v (got %d of %d)", err, h.count(), want)
		case <-ctx.Done():
			cancel()
			cg.Close()
			t.Fatalf("consumer group got %d of %d messages within %v", h.count(), want, saramaPhaseMax)
		}
		time.Sleep(grace)
		h.mu.Lock()
		sess := h.sess
		h.mu.Unlock()
		sess.Commit()
		cancel()
		if err := <-consumeDone; err != nil && ctx.Err() == nil {
			t.Errorf("Consume: %v", err)
		}
		if err := cg.Close(); err != nil {
			t.Errorf("ConsumerGroup Close: %v", err)
		}
		<-errsDone
		errMu.Lock()
		defer errMu.Unlock()
		for _, e := range cgErrs {
			t.Errorf("consumer group error: %v", e)
		}
		if h.setups != 1 {
			t.Errorf("consumer group had %d sessions, want 1 (an unexpected rebalance)", h.setups)
		}
		return h.got
	}
	checkCommitted := func(hw map[int32]int64) {
		t.Helper()
		parts := make([]int32, 0, saramaParts)
		for p := int32(0); p < saramaParts; p++ {
			parts = append(parts, p)
		}
		groups, err := admin.ListConsumerGroups()
		if err != nil {
			t.Fatalf("ListConsumerGroups: %v", err)
		}
		if pt := groups[saramaGroup]; pt != "consumer" {
			t.Errorf("ListConsumerGroups: %s has protocol type %q, want consumer (%v)", saramaGroup, pt, groups)
		}
		descs, err := admin.DescribeConsumerGroups([]string{saramaGroup})
		if err != nil {
			t.Fatalf("DescribeConsumerGroups: %v", err)
		}
		if len(descs) != 1 || descs[0].GroupId != saramaGroup || descs[0].Err != sarama.ErrNoError ||
			descs[0].State != "Empty" || len(descs[0].Members) != 0 {
			for _, d := range descs {
				t.Errorf("DescribeConsumerGroups after Close: %+v", *d)
			}
			t.Errorf("DescribeConsumerGroups: want one Empty group %s with no members", saramaGroup)
		}
		resp, err := admin.ListConsumerGroupOffsets(saramaGroup, map[string][]int32{topic: parts})
		if err != nil {
			t.Fatalf("ListConsumerGroupOffsets: %v", err)
		}
		if resp.Err != sarama.ErrNoError {
			t.Fatalf("ListConsumerGroupOffsets: error %v", resp.Err)
		}
		for _, p := range parts {
			blk := resp.GetBlock(topic, p)
			if blk == nil {
				t.Errorf("ListConsumerGroupOffsets: no block for partition %d", p)
				continue
			}
			if blk.Err != sarama.ErrNoError || blk.Offset != hw[p] {
				t.Errorf("ListConsumerGroupOffsets partition %d: offset %d err %v, want %d (the high watermark)", p, blk.Offset, blk.Err, hw[p])
			}
		}
	}

	// ---- Consumer group: everything from the oldest offset.
	got := consumeGroup(total, 0)
	seen := map[string]bool{}
	for p, msgs := range got {
		for i, m := range msgs {
			if m.Offset != int64(i) {
				t.Fatalf("group, partition %d: message %d has offset %d (out of order or a gap)", p, i, m.Offset)
			}
			if err := check(m); err != nil {
				t.Fatalf("group: %v", err)
			}
			if seen[string(m.Key)] {
				t.Fatalf("group: key %s consumed twice", m.Key)
			}
			seen[string(m.Key)] = true
		}
		if int64(len(msgs)) != hw[p] {
			t.Errorf("group, partition %d: %d messages, high watermark %d", p, len(msgs), hw[p])
		}
	}
	if len(seen) != total {
		t.Fatalf("group consumed %d distinct messages, want %d", len(seen), total)
	}
	checkCommitted(hw)

	// ---- Produce M more; a new member of the group resumes at the commit.
	syncProduce("more", saramaMoreN)
	hw2 := highWatermarks()
	got = consumeGroup(saramaMoreN, time.Second)
	n := 0
	for p, msgs := range got {
		for i, m := range msgs {
			if m.Offset != hw[p]+int64(i) {
				t.Fatalf("resumed group, partition %d: message %d has offset %d, want %d", p, i, m.Offset, hw[p]+int64(i))
			}
			if err := check(m); err != nil {
				t.Fatalf("resumed group: %v", err)
			}
			if seen[string(m.Key)] {
				t.Fatalf("resumed group: key %s consumed again", m.Key)
			}
			seen[string(m.Key)] = true
			n++
		}
		if int64(len(msgs)) != hw2[p]-hw[p] {
			t.Errorf("resumed group, partition %d: %d messages, %d new", p, len(msgs), hw2[p]-hw[p])
		}
	}
	if n != saramaMoreN {
		t.Fatalf("resumed group got %d messages, want exactly %d", n, saramaMoreN)
	}
	checkCommitted(hw2)

	// ---- Plain partition consumer: partition 0 from the oldest offset to the high watermark.
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("NewConsumerFromClient: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("ConsumePartition: %v", err)
	}
	defer pc.Close()
	want0 := 0
	for _, s := range expect {
		if s.partition == 0 {
			want0++
		}
	}
	if int64(want0) != hw2[0] {
		t.Fatalf("partition 0: %d messages acked, high watermark %d", want0, hw2[0])
	}
	timeout := time.NewTimer(saramaPhaseMax)
	defer timeout.Stop()
	for next := int64(0); next < hw2[0]; next++ {
		select {
		case m := <-pc.Messages():
			if m.Offset != next {
				t.Fatalf("partition consumer: offset %d, want %d", m.Offset, next)
			}
			if err := check(m); err != nil {
				t.Fatalf("partition consumer: %v", err)
			}
		case e := <-pc.Errors():
			t.Fatalf("partition consumer: %v", e)
		case <-timeout.C:
			t.Fatalf("partition consumer: reached offset %d of %d within %v", next, hw2[0], saramaPhaseMax)
		}
	}
	if hwm := pc.HighWaterMarkOffset(); hwm != hw2[0] {
		t.Errorf("partition consumer: HighWaterMarkOffset %d, want %d", hwm, hw2[0])
	}
	t.Logf("%s: %d messages produced (%d sync, %d per codec, %d more), high watermarks %v, batches on disk by codec %v",
		version, len(expect), saramaSyncN, saramaAsyncN, saramaMoreN, hw2, codecBatches)
}

// saramaHandler is a sarama.ConsumerGroupHandler that records every
// message, marks it, and signals when want messages have arrived.
type saramaHandler struct {
	want int
	done chan struct{}

	mu     sync.Mutex
	sess   sarama.ConsumerGroupSession
	setups int
	got    map[int32][]*sarama.ConsumerMessage
	n      int
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sess = s
	h.setups++
	return nil
}

func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			s.MarkMessage(m, "")
			h.mu.Lock()
			h.got[m.Partition] = append(h.got[m.Partition], m)
			h.n++
			if h.n == h.want {
				close(h.done)
			}
			h.mu.Unlock()
		case <-s.Context().Done():
			return nil
		}
	}
}

func (h *saramaHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// errorsIsKError reports whether err is, or wraps, the Kafka error code k
// (sarama's admin wraps codes in *TopicError and similar).
func errorsIsKError(err error, k sarama.KError) bool {
	for e := err; e != nil; {
		if ke, ok := e.(sarama.KError); ok && ke == k {
			return true
		}
		if te, ok := e.(*sarama.TopicError); ok && te.Err == k {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

func strPtr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
