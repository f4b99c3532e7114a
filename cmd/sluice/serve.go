package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/sched"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// serve implements `sluice serve`: load the config, start the broker, and
// shut it down cleanly on SIGTERM or SIGINT (in-flight requests answered,
// logs flushed, the clean-shutdown marker written). A second signal while
// shutting down exits at once.
func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "a server.properties file")
	var sets stringList
	fs.Var(&sets, "set", "key=value overriding the config file (repeatable)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logJSON := fs.Bool("log-json", false, "log JSON lines instead of text")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (for go tool pprof)")
	traceFile := fs.String("trace", "", "write a runtime execution trace of the whole run to this file (for go tool trace)")
	memProfile := fs.String("memprofile", "", "on SIGTERM/SIGINT, before shutting down, write a heap profile (after a GC) to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "sluice serve: --log-level: %v\n", err)
		return 2
	}
	hopts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler = slog.NewTextHandler(stderr, hopts)
	if *logJSON {
		handler = slog.NewJSONHandler(stderr, hopts)
	}
	logger := slog.New(handler)
	slog.SetDefault(logger)

	cfg, err := config.Load(*cfgPath, sets)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}
	// Written on a clean shutdown; a SIGKILL leaves a truncated file.
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}
	defer stopProfile()
	stopTrace, err := startTrace(*traceFile)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}
	defer stopTrace()
	// Before the broker starts its goroutines: the threads it makes
	// later inherit the policy anyway.
	if kept, err := sched.SetProcess(cfg.SchedulingPolicy); err != nil {
		logger.Warn("process.scheduling.policy not applied", "policy", cfg.SchedulingPolicy.String(), "err", err)
	} else if kept > 0 {
		logger.Info("process.scheduling.policy: threads under another policy keep it", "policy", cfg.SchedulingPolicy.String(), "kept", kept)
	}
	b, err := broker.Start(cfg, broker.Options{Logger: logger})
	if err != nil {
		logger.Error("broker failed to start", "err", err)
		return 1
	}
	logger.Info("broker started", "addr", b.Addr(), "http", b.HTTPAddr(), "broker.id", cfg.BrokerID,
		"storage.backend", cfg.StorageBackend, "log.dirs", cfg.LogDirs)

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() { b.Wait(); close(done) }()
	select {
	case sig := <-sigs:
		logger.Info("shutting down", "signal", sig.String())
		go func() {
			<-sigs
			logger.Warn("second signal: exiting without a clean shutdown")
			os.Exit(1)
		}()
		if err := writeHeapProfile(*memProfile); err != nil {
			logger.Error("--memprofile", "err", err)
		}
		if err := b.Close(); err != nil {
			logger.Error("shutdown", "err", err)
			return 1
		}
		logger.Info("shut down cleanly")
		return 0
	case <-done:
		logger.Error("broker stopped without a signal")
		return 1
	}
}

// startCPUProfile starts a CPU profile written to path (nothing when path
// is ""); the returned func stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeHeapProfile writes the heap profile of what is live now (after a
// GC) to path; nothing when path is "". The partitions are still open, so
// it shows what they hold (go tool pprof -sample_index=inuse_space).
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
