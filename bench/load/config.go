// Package load is the load generator behind `sluice perf`, after Kafka's
// kafka-producer-perf-test and kafka-consumer-perf-test, built on franz-go's
// kgo client so that it measures a broker the way a real client sees it.
//
// Three modes:
//
//   - produce: Producers independent clients send fixed-size records as
//     fast as they can (or at TargetRate) until Records have been sent or
//     Duration has passed, and wait for the acks; produce latency is from
//     the Produce call to the ack.
//   - consume: one client reads the topic from its log start offsets up to
//     the high watermarks found at start (or until Records have been read,
//     waiting for more if needed) and stops.
//   - e2e: produce at TargetRate while a consumer in the same process tails
//     the topic from its end offsets; end-to-end latency is from the
//     timestamp written into each record's value at produce to its arrival
//     at the consumer.
//
// Transactions: with TransactionalID, produce (and e2e) send inside
// transactions, each producer committing every TransactionInterval (flush,
// then EndTransaction, then the next BeginTransaction, as a transactional
// application's poll-process-commit loop does); Isolation read_committed
// makes the consumers stop at the last stable offset and skip aborted
// records. Control records (transaction markers) are never counted.
//
// Every run is bounded: besides Records or Duration, a hard cap (Timeout)
// cancels whatever is still waiting.
//
// Record value layout (big-endian), so that one process can measure latency
// and recognize its own records in a shared topic:
//
//	offset size field
//	0      8    run id (random per run)
//	8      8    produce time, nanoseconds since the run's start (monotonic)
//	16     ...  filler: uppercase letters, as Kafka's perf tool sends
package load

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Mode is what a run does.
type Mode string

// The modes.
const (
	ModeProduce Mode = "produce"
	ModeConsume Mode = "consume"
	ModeE2E     Mode = "e2e"
)

// headerSize is the stamped prefix of every record value (run id + time).
const headerSize = 16

// DefaultE2ERate is the e2e target rate when none is given: low enough that
// latency measures the broker's path, not a queue in front of it.
const DefaultE2ERate = 1000

// DefaultTransactionInterval is how often a transactional producer commits
// when no interval is given.
const DefaultTransactionInterval = 100 * time.Millisecond

// Config describes one run. Zero values take the defaults documented on
// each field.
type Config struct {
	Mode    Mode
	Brokers []string // seed brokers; empty: localhost:9092
	Topic   string   // empty: "sluice-perf"

	// Partitions is the partition count used when the topic must be
	// created (produce and e2e create a missing topic). 0: 1.
	Partitions int32

	// ReplicationFactor is the replica count of each partition when the
	// topic must be created. 0: the broker's default.replication.factor.
	// A topic that exists keeps its own. min.insync.replicas goes in
	// TopicConfigs.
	ReplicationFactor int16

	RecordSize int // value bytes per record, >= 16 (the stamped header). 0: 1024

	// Keys > 0 gives every record an 8-byte key, a counter modulo Keys
	// (big-endian), so that a compacted topic (which refuses key-less
	// records) can be loaded and its cleaner has that many keys to keep.
	// 0: no key.
	Keys int64

	// TopicConfigs are the configs of the topic when it must be created
	// (produce and e2e), e.g. cleanup.policy=compact.
	TopicConfigs map[string]*string

	// Records bounds the run by count (produce: records sent over all
	// producers; consume: records read). Duration bounds it by time. With
	// neither, produce and e2e run for 10s and consume reads up to the high
	// watermarks found at start.
	Records  int64
	Duration time.Duration

	// Timeout is the hard cap on the whole measured run. 0: three times
	// Duration (at least Duration+10s), or 5 minutes when bounded by count.
	Timeout time.Duration

	Acks          string        // "0", "1" or "all" (also "-1"). "": all
	Linger        time.Duration // producer linger; 0: none
	BatchMaxBytes int32         // producer batch size cap; 0: the client's default (1,000,012)
	Compression   string        // none, gzip, snappy, lz4, zstd. "": none
	Producers     int           // independent producer clients. 0: 1

	// TargetRate is records/s over all producers; 0: as fast as possible
	// (e2e: DefaultE2ERate).
	TargetRate float64

	// Progress receives one line per ProgressInterval (default 1s) while
	// the run lasts; nil: none.
	Progress         io.Writer
	ProgressInterval time.Duration

	// TransactionalID makes produce and e2e transactional: producer i
	// uses this id ("ID-i" when Producers > 1) and commits every
	// TransactionInterval (0: 100ms). It needs acks=all (transactions are
	// idempotent). "": no transactions.
	TransactionalID     string
	TransactionInterval time.Duration

	// Isolation is the consumers' isolation level: "read_uncommitted"
	// (or "") or "read_committed".
	Isolation string

	// ClientOpts are appended to every client's options: TLS and SASL from
	// `sluice perf --command-config`, a logger in tests.
	ClientOpts []kgo.Opt
}

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	switch c.Mode {
	case ModeProduce, ModeConsume, ModeE2E:
	default:
		return c, fmt.Errorf("load: unknown mode %q: want produce, consume or e2e", c.Mode)
	}
	if len(c.Brokers) == 0 {
		c.Brokers = []string{"localhost:9092"}
	}
	if c.Topic == "" {
		c.Topic = "sluice-perf"
	}
	if c.Partitions == 0 {
		c.Partitions = 1
	}
	if c.Partitions < 0 {
		return c, fmt.Errorf("load: partitions %d < 1", c.Partitions)
	}
	if c.ReplicationFactor < 0 {
		return c, fmt.Errorf("load: replication factor %d < 1", c.ReplicationFactor)
	}
	if c.RecordSize == 0 {
		c.RecordSize = 1024
	}
	if c.RecordSize < headerSize {
		return c, fmt.Errorf("load: record size %d: at least %d bytes (run id and produce time)", c.RecordSize, headerSize)
	}
	if c.Records < 0 || c.Duration < 0 || c.Timeout < 0 || c.Linger < 0 || c.TargetRate < 0 || c.Producers < 0 || c.BatchMaxBytes < 0 {
		return c, errors.New("load: negative records, duration, timeout, linger, rate, producers or batch size")
	}
	if c.Mode != ModeConsume && c.Records == 0 && c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Timeout == 0 {
		if c.Duration > 0 {
			c.Timeout = max(3*c.Duration, c.Duration+10*time.Second)
		} else {
			c.Timeout = 5 * time.Minute
		}
	}
	if c.Producers == 0 {
		c.Producers = 1
	}
	if c.Mode == ModeE2E && c.TargetRate == 0 {
		c.TargetRate = DefaultE2ERate
	}
	if c.TransactionInterval < 0 {
		return c, errors.New("load: negative transaction interval")
	}
	if c.TransactionalID != "" {
		if c.Mode == ModeConsume {
			return c, errors.New("load: a transactional id is for produce and e2e, not consume")
		}
		if a := strings.ToLower(c.Acks); a != "" && a != "all" && a != "-1" {
			return c, fmt.Errorf("load: acks %q with a transactional id: transactions need acks=all", c.Acks)
		}
		if c.TransactionInterval == 0 {
			c.TransactionInterval = DefaultTransactionInterval
		}
	}
	switch c.Isolation {
	case "", "read_uncommitted", "read_committed":
	default:
		return c, fmt.Errorf("load: isolation %q: want read_uncommitted or read_committed", c.Isolation)
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = time.Second
	}
	if _, err := c.producerOpts(); err != nil {
		return c, err
	}
	return c, nil
}

// producerOpts turns the producer settings into kgo options.
func (c Config) producerOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch strings.ToLower(c.Acks) {
	case "", "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		// Idempotent writes need acks=all; kgo refuses anything else
		// unless idempotence is off.
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("load: acks %q: want 0, 1 or all", c.Acks)
	}
	codec, err := CompressionCodec(c.Compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(c.Linger))
	if c.BatchMaxBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(c.BatchMaxBytes))
	}
	return opts, nil
}

// transactionalID is producer i's transactional id, "" without
// transactions.
func (c Config) transactionalID(i int) string {
	if c.TransactionalID == "" || c.Producers <= 1 {
		return c.TransactionalID
	}
	return fmt.Sprintf("%s-%d", c.TransactionalID, i)
}

// isolation is the consumers' kgo isolation level.
func (c Config) isolation() kgo.IsolationLevel {
	if c.Isolation == "read_committed" {
		return kgo.ReadCommitted()
	}
	return kgo.ReadUncommitted()
}

// clientOpts are the options every client of the run shares.
func (c Config) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID("sluice-perf")}
	return append(opts, c.ClientOpts...)
}

// CompressionCodec is the producer codec a --compression flag names; ""
// is none, as the Java producer's compression.type default. Commands call
// it while parsing their flags, so that a bad name fails before anything
// (a broker of --broker-cmd) starts.
func CompressionCodec(name string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(name) {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("load: compression %q: want none, gzip, snappy, lz4 or zstd", name)
}
