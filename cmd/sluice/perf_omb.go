package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice/sluice/bench/load"
)

// perfOMB implements `sluice perf omb`: the OpenMessaging Benchmark's
// workload shape (load.RunOMB) against one broker, reported as a Markdown
// table or, with --json, one JSON object. The broker's CPU per GB comes
// from /proc/PID/stat of --broker-pid, or of the broker --broker-cmd
// starts (run by sh -c with exec, in its own process group, stopped with
// SIGTERM at the end, SIGKILL 30 s later). Exit status 1 when records
// failed, 2 on bad usage or when the run could not start.
func perfOMB(args []string, stdout, stderr io.Writer) int {
	o, err := parseOMBFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sluice perf omb: %v\n", err)
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if o.brokerCmd != "" {
		pid, stop, err := startBroker(ctx, o.brokerCmd, o.cfg.Brokers[0], stderr)
		if err != nil {
			fmt.Fprintf(stderr, "sluice perf omb: %v\n", err)
			return 2
		}
		defer stop()
		o.cfg.BrokerPID = pid
	}
	res, err := load.RunOMB(ctx, o.cfg)
	if res == nil {
		fmt.Fprintf(stderr, "sluice perf omb: %v\n", err)
		return 2
	}
	res.Target = o.target
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "sluice perf omb: %v\n", err)
			return 1
		}
	} else {
		res.WriteTable(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice perf omb: %v\n", err)
		return 1
	}
	for _, p := range res.Phases {
		if p.Errors > 0 {
			return 1
		}
	}
	return 0
}

// ombOptions is what the flags of `sluice perf omb` ask for.
type ombOptions struct {
	cfg       load.OMBConfig
	brokerCmd string
	target    string
	asJSON    bool
}

func parseOMBFlags(args []string, stderr io.Writer) (ombOptions, error) {
	var o ombOptions
	fs := flag.NewFlagSet("perf omb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "", "comma-separated seed brokers (default: bootstrap.servers of --command-config, else "+defaultBootstrap+")")
	commandConfig := fs.String("command-config", "", "client properties `file` (security.protocol, sasl.*, ssl.*, bootstrap.servers)")
	fs.StringVar(&o.cfg.Topic, "topic", "", "topic (default: a new omb-<random> topic per run)")
	partitions := fs.Int("partitions", 100, "partitions of the topic")
	fs.IntVar(&o.cfg.RecordSize, "record-size", 1024, "value bytes per record (keys are 8 bytes)")
	fs.IntVar(&o.cfg.Producers, "producers", 4, "producer clients")
	fs.IntVar(&o.cfg.Consumers, "consumers", 4, "consumer clients, in one group")
	fs.StringVar(&o.cfg.Acks, "acks", "all", "1 or all")
	fs.DurationVar(&o.cfg.Linger, "linger", time.Millisecond, "producer linger (OMB's Kafka driver: linger.ms=1)")
	fs.StringVar(&o.cfg.Compression, "compression", "none", "none, gzip, snappy, lz4 or zstd (OMB's Kafka driver: none, the Java producer's default)")
	var topicConfigs kvFlag
	fs.Var(&topicConfigs, "topic-config", "`key=value` config of the topic when it is created (repeatable), e.g. retention.bytes=67108864")
	fs.DurationVar(&o.cfg.Warmup, "warmup", 10*time.Second, "warm-up at the unlimited rate, not reported (0s: none)")
	fs.DurationVar(&o.cfg.Probe, "probe", 30*time.Second, "the maximum-rate probe")
	fs.DurationVar(&o.cfg.Duration, "duration", 60*time.Second, "each fixed rate")
	fs.Float64Var(&o.cfg.MaxRate, "max-rate", 0, "records/s taken as the maximum, skipping the probe")
	rates := fs.String("rates", "25,50,75,100", "fixed rates, in percent of the maximum; none: the probe only (its maximum is then given to several brokers with --max-rate, so that they run at the same rates)")
	fs.IntVar(&o.cfg.Search, "search", 0, "bisection steps after the fixed rates, between the highest rate kept (acked within 5%) and the lowest above it not kept: the maximum sustained rate measured to 1/2^N of that interval (0-10)")
	fs.DurationVar(&o.cfg.SearchDuration, "search-duration", 0, "each search step (default: --duration)")
	fs.IntVar(&o.cfg.BrokerPID, "broker-pid", 0, "the broker's pid, for its CPU per GB")
	fs.StringVar(&o.brokerCmd, "broker-cmd", "", "start the broker with this shell command (e.g. `taskset -c 0 sluice serve ...`), measure it, stop it at the end")
	fs.StringVar(&o.target, "target", "", "a label for the report (e.g. sluice-segment, kfake)")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as one JSON object")
	quiet := fs.Bool("quiet", false, "no progress lines")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *partitions < 1 || *partitions > 1<<20 {
		return o, fmt.Errorf("--partitions %d: want 1-%d", *partitions, 1<<20)
	}
	o.cfg.Partitions = int32(*partitions)
	o.cfg.TopicConfigs = topicConfigs.m
	if _, err := load.CompressionCodec(o.cfg.Compression); err != nil {
		return o, fmt.Errorf("--compression: %w", err)
	}
	if o.cfg.Warmup == 0 {
		o.cfg.Warmup = -1 // none
	}
	if o.cfg.Probe <= 0 || o.cfg.Duration <= 0 || o.cfg.SearchDuration < 0 {
		return o, errors.New("--probe and --duration must be > 0, --search-duration >= 0")
	}
	if o.cfg.Search < 0 || o.cfg.Search > 10 {
		return o, fmt.Errorf("--search %d: want 0-10", o.cfg.Search)
	}
	if o.brokerCmd != "" && o.cfg.BrokerPID != 0 {
		return o, errors.New("--broker-cmd and --broker-pid: one or the other")
	}
	f, err := load.ParseFractions(*rates)
	if err != nil {
		return o, fmt.Errorf("--rates: %w", err)
	}
	o.cfg.Fractions = f
	cc, err := loadClientConfig(*commandConfig, stderr)
	if err != nil {
		return o, err
	}
	o.cfg.Brokers, o.cfg.ClientOpts = clientSeeds(*brokers, cc), cc.opts
	if !*quiet {
		o.cfg.Progress = stderr
	}
	return o, nil
}

// startBroker runs cmd (sh -c "exec cmd"), waits up to 60 s for addr to
// accept connections and returns its pid and a stop function that ends it
// (SIGTERM to its process group, SIGKILL after 30 s).
func startBroker(ctx context.Context, cmd, addr string, stderr io.Writer) (int, func(), error) {
	c := exec.Command("sh", "-c", "exec "+cmd)
	c.Stdout, c.Stderr = io.Discard, stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return 0, nil, fmt.Errorf("--broker-cmd: %w", err)
	}
	exited := make(chan struct{})
	go func() { c.Wait(); close(exited) }()
	pid := c.Process.Pid
	stop := func() {
		syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-pid, syscall.SIGKILL)
			<-exited
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return pid, stop, nil
		}
		select {
		case <-exited:
			return 0, nil, fmt.Errorf("--broker-cmd exited before %s accepted connections", addr)
		case <-ctx.Done():
			stop()
			return 0, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return 0, nil, fmt.Errorf("--broker-cmd: %s did not accept connections within 60 s", addr)
		}
	}
}
