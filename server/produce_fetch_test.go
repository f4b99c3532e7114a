package server_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/record"
)

// TestProduceConsume100k produces 100k keyed records with headers and
// explicit timestamps over 6 partitions with acks=all and reads them back:
// per partition, same order, every field intact.
func TestProduceConsume100k(t *testing.T) {
	const n, parts = 100_000, 6
	forEachBackend(t, func(t *testing.T, be string) {
		b := brokertest.Start(t, be)
		prod := newClient(t, b.Addr(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("big"))
		createTopic(t, kadm.NewClient(prod), "big", parts, nil)
		ctx := testCtx(t, 3*time.Minute)

		base := time.UnixMilli(1_700_000_000_000)
		mk := func(i int) *kgo.Record {
			return &kgo.Record{
				Key:       []byte("key-" + strconv.Itoa(i%97)),
				Value:     []byte(fmt.Sprintf("value-%d-%s", i, bytes.Repeat([]byte{'x'}, i%50))),
				Headers:   []kgo.RecordHeader{{Key: "i", Value: []byte(strconv.Itoa(i))}, {Key: "empty"}},
				Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			}
		}
		// Per partition, the produced order as the broker acknowledged it.
		want := make([][]int, parts)
		errs := make(chan error, 1)
		for i := 0; i < n; i++ {
			i := i
			prod.Produce(ctx, mk(i), func(r *kgo.Record, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				if int(r.Offset) != len(want[r.Partition]) {
					select {
					case errs <- fmt.Errorf("record %d got offset %d in partition %d, want %d", i, r.Offset, r.Partition, len(want[r.Partition])):
					default:
					}
				}
				want[r.Partition] = append(want[r.Partition], i)
			})
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}

		cons := newClient(t, b.Addr(), kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(1<<20))
		next := make([]int, parts)
		got := 0
		for got < n {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("timed out after %d of %d records", got, n)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				got++
				p := r.Partition
				if next[p] >= len(want[p]) {
					t.Fatalf("partition %d: extra record at offset %d", p, r.Offset)
				}
				i := want[p][next[p]]
				if r.Offset != int64(next[p]) {
					t.Fatalf("partition %d: offset %d, want %d", p, r.Offset, next[p])
				}
				next[p]++
				w := mk(i)
				if !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || !r.Timestamp.Equal(w.Timestamp) {
					t.Fatalf("partition %d offset %d: got key %q value %q ts %v, want record %d", p, r.Offset, r.Key, r.Value, r.Timestamp, i)
				}
				if len(r.Headers) != 2 || r.Headers[0].Key != "i" || string(r.Headers[0].Value) != strconv.Itoa(i) || r.Headers[1].Key != "empty" || len(r.Headers[1].Value) != 0 {
					t.Fatalf("partition %d offset %d: headers %v", p, r.Offset, r.Headers)
				}
			})
		}
		for p := range want {
			if next[p] != len(want[p]) {
				t.Errorf("partition %d: consumed %d, produced %d", p, next[p], len(want[p]))
			}
		}
	})
}

// buildBatch returns one uncompressed batch of count records.
func buildBatch(pid int64, epoch int16, seq int32, count int, ts int64) []byte {
	recs := make([]record.BuildRecord, count)
	for i := range recs {
		recs[i] = record.BuildRecord{Key: []byte("k"), Value: []byte("v" + strconv.Itoa(i)), Timestamp: ts + int64(i)}
	}
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
}

func produceReq(version int16, acks int16, topic string, partition int32, batches []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batches
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestIdempotentRetry sends the same idempotent Produce twice: the second
// answer carries the original offset and the log holds the batch once.
func TestIdempotentRetry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be string) {
		b := brokertest.Start(t, be)
		adm := kadm.NewClient(newClient(t, b.Addr()))
		createTopic(t, adm, "idem", 1, nil)
		rc := dialRaw(t, b.Addr())

		ipid := kmsg.NewPtrInitProducerIDRequest()
		ipid.SetVersion(4)
		pr := rc.Do(ipid).(*kmsg.InitProducerIDResponse)
		if pr.ErrorCode != 0 || pr.ProducerID < 0 || pr.ProducerEpoch != 0 {
			t.Fatalf("init producer id: %+v", pr)
		}
		// One non-idempotent batch first, so the idempotent one is not at 0.
		first := rc.Do(produceReq(9, -1, "idem", 0, buildBatch(-1, -1, -1, 3, 1000))).(*kmsg.ProduceResponse)
		if ec := first.Topics[0].Partitions[0].ErrorCode; ec != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(ec))
		}
		batch := buildBatch(pr.ProducerID, 0, 0, 5, 2000)
		var offsets []int64
		for i := 0; i < 2; i++ {
			req := produceReq(9, -1, "idem", 0, append([]byte(nil), batch...))
			resp := rc.Do(req).(*kmsg.ProduceResponse)
			sp := resp.Topics[0].Partitions[0]
			if sp.ErrorCode != 0 {
				t.Fatalf("attempt %d: %v", i, kerr.ErrorForCode(sp.ErrorCode))
			}
			offsets = append(offsets, sp.BaseOffset)
		}
		if offsets[0] != 3 || offsets[1] != 3 {
			t.Fatalf("base offsets %v, want [3 3]", offsets)
		}
		// A gap in the sequence is refused.
		gap := rc.Do(produceReq(9, -1, "idem", 0, buildBatch(pr.ProducerID, 0, 7, 1, 3000))).(*kmsg.ProduceResponse)
		if ec := gap.Topics[0].Partitions[0].ErrorCode; ec != kerr.OutOfOrderSequenceNumber.Code {
			t.Fatalf("sequence gap: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(ec))
		}
		ends, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), "idem")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := ends.Lookup("idem", 0); o.Offset != 8 {
			t.Fatalf("end offset %d, want 8 (3 + 5, the retry not appended)", o.Offset)
		}
	})
}

// TestFetchLongPollWakes: a fetch waiting on an empty partition answers
// when a record is appended, not at MaxWait. MaxWait is 60 s and the read
// gives up after 10 s, so only a woken fetch can answer in time; no timing
// is asserted beyond that.
func TestFetchLongPollWakes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be string) {
		b := brokertest.Start(t, be)
		cl := newClient(t, b.Addr())
		createTopic(t, kadm.NewClient(cl), "poll", 1, nil)
		rc := dialRaw(t, b.Addr())
		var tid [16]byte
		{
			md := kmsg.NewPtrMetadataRequest()
			md.SetVersion(12)
			md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("poll")}}
			tid = rc.Do(md).(*kmsg.MetadataResponse).Topics[0].TopicID
		}
		for _, version := range []int16{4, 11, 16} {
			t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
				ends, _ := kadm.NewClient(cl).ListEndOffsets(testCtx(t, 5*time.Second), "poll")
				o, _ := ends.Lookup("poll", 0)
				req := kmsg.NewPtrFetchRequest()
				req.SetVersion(version)
				req.ReplicaID = -1
				req.MaxWaitMillis = 60000
				req.MinBytes = 1
				req.MaxBytes = 1 << 20
				req.SessionEpoch = -1
				ft := kmsg.NewFetchRequestTopic()
				ft.Topic, ft.TopicID = "poll", tid
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.FetchOffset = o.Offset
				fp.PartitionMaxBytes = 1 << 20
				ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
				req.Topics = []kmsg.FetchRequestTopic{ft}
				start := time.Now()
				corr := rc.Send(req)
				time.Sleep(100 * time.Millisecond) // let the fetch park (not required for correctness)
				ps := time.Now()
				if err := cl.ProduceSync(testCtx(t, 5*time.Second), &kgo.Record{Topic: "poll", Value: []byte("wake")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
				resp := req.ResponseKind().(*kmsg.FetchResponse)
				resp.SetVersion(version)
				rc.Recv(corr, resp)
				elapsed := time.Since(start)
				t.Logf("produce took %v, fetch %v", time.Since(ps), elapsed)
				p := resp.Topics[0].Partitions[0]
				if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != o.Offset+1 {
					t.Fatalf("fetch: err %v, %d record bytes, hw %d", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches), p.HighWatermark)
				}
			})
		}
	})
}

// TestProduceErrors checks per-partition error codes.
func TestProduceErrors(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *configT) { c.AutoCreateTopics = false })
	adm := kadm.NewClient(newClient(t, b.Addr()))
	one := "1"
	createTopic(t, adm, "small", 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("200")})
	createTopic(t, adm, "ok", 1, nil)
	_ = one
	rc := dialRaw(t, b.Addr())

	bad := buildBatch(-1, -1, -1, 2, 1)
	bad[len(bad)-1] ^= 0xff // break the CRC
	big := buildBatch(-1, -1, -1, 50, 1)
	for _, tc := range []struct {
		name  string
		topic string
		part  int32
		data  []byte
		acks  int16
		want  *kerr.Error
	}{
		{"bad crc", "ok", 0, bad, -1, kerr.CorruptMessage},
		{"unknown topic", "nope", 0, buildBatch(-1, -1, -1, 1, 1), 1, kerr.UnknownTopicOrPartition},
		{"unknown partition", "ok", 3, buildBatch(-1, -1, -1, 1, 1), 1, kerr.UnknownTopicOrPartition},
		{"too large", "small", 0, big, 1, kerr.MessageTooLarge},
		{"bad acks", "ok", 0, buildBatch(-1, -1, -1, 1, 1), 2, kerr.InvalidRequiredAcks},
		{"truncated batch", "ok", 0, buildBatch(-1, -1, -1, 3, 1)[:40], 1, kerr.CorruptMessage},
		{"ok", "ok", 0, buildBatch(-1, -1, -1, 1, 1), 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := rc.Do(produceReq(7, tc.acks, tc.topic, tc.part, tc.data)).(*kmsg.ProduceResponse)
			got := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
			if tc.want == nil && got != nil || tc.want != nil && got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	// acks=0: no response; the next request's answer comes first.
	rc.Send(produceReq(7, 0, "ok", 0, buildBatch(-1, -1, -1, 1, 1)))
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	if resp := rc.Do(md).(*kmsg.MetadataResponse); len(resp.Topics) != 2 {
		t.Fatalf("metadata after acks=0: %d topics", len(resp.Topics))
	}
	ends, err := adm.ListEndOffsets(testCtx(t, 5*time.Second), "ok")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("ok", 0); o.Offset != 2 {
		t.Fatalf("end offset %d after an acks=1 and an acks=0 record, want 2", o.Offset)
	}
}

var _ = rand.Int
