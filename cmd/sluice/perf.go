package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluice/sluice/bench/load"
)

// perf implements `sluice perf produce|consume|e2e`, after Kafka's
// kafka-producer-perf-test and kafka-consumer-perf-test: it drives a broker
// with franz-go clients, prints a progress line every second on stderr and
// a summary (or, with --json, one JSON object) on stdout. Every run stops
// by itself: --records or --duration, the high watermarks at start for
// consume, and --timeout as a hard cap. SIGINT/SIGTERM stop it early and
// still print the summary. --transactional-id makes produce and e2e
// transactional (a commit every --transaction-ms); --isolation
// read_committed makes consumers stop at the last stable offset and skip
// aborted records. Exit status 1 when records failed or the hard
// cap ended the run, 2 on bad usage or when the run could not start.
// kvFlag collects repeated key=value flags.
type kvFlag struct{ m map[string]*string }

func (f *kvFlag) String() string { return "" }

func (f *kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", s)
	}
	if f.m == nil {
		f.m = map[string]*string{}
	}
	f.m[k] = &v
	return nil
}

func perf(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, "usage: sluice perf produce|consume|e2e|omb [flags]")
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		usage()
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	if args[0] == "omb" {
		return perfOMB(args[1:], stdout, stderr)
	}
	mode := load.Mode(args[0])
	switch mode {
	case load.ModeProduce, load.ModeConsume, load.ModeE2E:
	default:
		fmt.Fprintf(stderr, "sluice perf: unknown mode %q\n", args[0])
		usage()
		return 2
	}

	fs := flag.NewFlagSet("perf "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var brokers string
	fs.StringVar(&brokers, "brokers", "", "comma-separated seed brokers (default: bootstrap.servers of --command-config, else "+defaultBootstrap+")")
	fs.StringVar(&brokers, "bootstrap-server", "", "alias of --brokers")
	commandConfig := fs.String("command-config", "", "client properties `file` in librdkafka's names, as kcat -F reads (security.protocol, sasl.*, ssl.*, bootstrap.servers)")
	topic := fs.String("topic", "sluice-perf", "topic")
	partitions := fs.Int("partitions", 1, "partitions of the topic when it must be created (produce, e2e)")
	replicationFactor := fs.Int("replication-factor", 0, "replicas of each partition when the topic must be created (produce, e2e; 0: the broker's default.replication.factor); min.insync.replicas goes in --topic-config")
	recordSize := fs.Int("record-size", 1024, "value bytes per record (>= 16: run id and produce time)")
	records := fs.Int64("records", 0, "stop after this many records (produce: sent over all producers; consume: read)")
	duration := fs.Duration("duration", 0, "stop after this long (produce and e2e default to 10s when --records is not given)")
	timeout := fs.Duration("timeout", 0, "hard cap on the run (0: 3x --duration, at least --duration+10s; 5m when bounded by --records)")
	acks := fs.String("acks", "all", "0, 1 or all")
	linger := fs.Duration("linger", 5*time.Millisecond, "producer linger (Kafka's linger.ms default is 5ms)")
	batchMax := fs.Int("batch-max-bytes", 0, "producer batch size cap (0: the client's 1,000,012)")
	compression := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	producers := fs.Int("producers", 1, "independent producer clients")
	rate := fs.Float64("target-rate", 0, fmt.Sprintf("records/s over all producers, 0: unlimited (e2e: %d)", load.DefaultE2ERate))
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	quiet := fs.Bool("quiet", false, "no progress lines")
	keys := fs.Int64("keys", 0, "give records 8-byte keys cycling over this many values (0: no key; a compacted topic needs keys)")
	txnID := fs.String("transactional-id", "", "produce, e2e: send inside transactions with this transactional id (-N appended per producer when --producers > 1); needs --acks all")
	txnMs := fs.Int("transaction-ms", int(load.DefaultTransactionInterval/time.Millisecond), "with --transactional-id: commit every this many milliseconds")
	isolation := fs.String("isolation", "read_uncommitted", "consume, e2e: read_uncommitted or read_committed")
	var topicConfigs kvFlag
	fs.Var(&topicConfigs, "topic-config", "`key=value` config of the topic when it is created (repeatable), e.g. cleanup.policy=compact")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the load generator to this file (for go tool pprof)")
	traceFile := fs.String("trace", "", "write a runtime execution trace of the load generator to this file (for go tool trace)")
	if err := fs.Parse(args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice perf: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *partitions < 1 || *partitions > 1<<20 || *batchMax < 0 || *batchMax > 1<<30 {
		fmt.Fprintln(stderr, "sluice perf: --partitions must be >= 1 and --batch-max-bytes >= 0")
		return 2
	}
	if *replicationFactor < 0 || *replicationFactor > math.MaxInt16 {
		fmt.Fprintf(stderr, "sluice perf: --replication-factor %d: want 1-%d, or 0 for the broker's default\n", *replicationFactor, math.MaxInt16)
		return 2
	}
	if *txnMs < 1 {
		fmt.Fprintln(stderr, "sluice perf: --transaction-ms must be >= 1")
		return 2
	}
	cfg := load.Config{
		Mode:              mode,
		Topic:             *topic,
		Partitions:        int32(*partitions),
		ReplicationFactor: int16(*replicationFactor),
		RecordSize:        *recordSize,
		Records:           *records,
		Duration:          *duration,
		Timeout:           *timeout,
		Acks:              *acks,
		Linger:            *linger,
		BatchMaxBytes:     int32(*batchMax),
		Compression:       *compression,
		Producers:         *producers,
		TargetRate:        *rate,
		Keys:              *keys,
		TopicConfigs:      topicConfigs.m,

		TransactionalID:     *txnID,
		TransactionInterval: time.Duration(*txnMs) * time.Millisecond,
		Isolation:           *isolation,
	}
	cc, err := loadClientConfig(*commandConfig, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sluice perf: %v\n", err)
		return 2
	}
	cfg.Brokers, cfg.ClientOpts = clientSeeds(brokers, cc), cc.opts
	if !*quiet {
		cfg.Progress = stderr
	}

	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		fmt.Fprintf(stderr, "sluice perf: %v\n", err)
		return 2
	}
	defer stopProfile()
	stopTrace, err := startTrace(*traceFile)
	if err != nil {
		fmt.Fprintf(stderr, "sluice perf: %v\n", err)
		return 2
	}
	defer stopTrace()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res, err := load.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sluice perf: %v\n", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "sluice perf: %v\n", err)
			return 1
		}
	} else {
		res.WriteText(stdout)
	}
	if res.Errors > 0 || res.StoppedBy == "timeout" {
		return 1
	}
	return 0
}
