// Command kfakeserve runs franz-go's kfake as a one-broker Kafka cluster in
// its own process, so `sluice perf` can drive it exactly as it drives
// `sluice serve` (same client, same pinning, CPU read from /proc/PID/stat).
// It is the baseline of scripts/bench-report.sh.
//
//	kfakeserve --port 9093 [--data-dir DIR] [--topics a,b --partitions 1] [--config k=v ...]
//
// --data-dir turns on kfake's persistence (kfake.DataDir: segment and index
// files written through the page cache, fsync only on roll and shutdown,
// like Kafka's default and like sluice's). It prints "listening ADDR" on
// stdout once the listener is up and runs until SIGINT or SIGTERM. --config
// sets a broker config (kfake.BrokerConfigs), e.g. log.cleaner.backoff.ms,
// the period of kfake's retention and compaction pass (an hour by default).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1 (0: a free one)")
	dataDir := flag.String("data-dir", "", "persist to this directory (kfake.DataDir); empty: memory only")
	topics := flag.String("topics", "", "comma-separated topics to create at start (kfake.SeedTopics)")
	partitions := flag.Int("partitions", 1, "partitions of each --topics topic")
	configs := map[string]string{}
	flag.Func("config", "`key=value` broker config (repeatable; kfake.BrokerConfigs)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", s)
		}
		configs[k] = v
		return nil
	})
	flag.Parse()

	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.AllowAutoTopicCreation(),
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	if len(configs) > 0 {
		opts = append(opts, kfake.BrokerConfigs(configs))
	}
	var seed []string
	for _, t := range strings.Split(*topics, ",") {
		if t = strings.TrimSpace(t); t != "" {
			seed = append(seed, t)
		}
	}
	if len(seed) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(*partitions), seed...))
	}

	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfakeserve: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", c.ListenAddrs()[0])

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	c.Close()
}
