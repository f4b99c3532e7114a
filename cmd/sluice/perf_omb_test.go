package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/bench/load"
	"github.com/sluice/sluice/internal/testenv"
)

func TestPerfOMBFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		bad  string
	}{
		{name: "defaults"},
		{name: "rates", args: []string{"--rates", "50,100", "--warmup", "0s"}},
		{name: "bad rate", args: []string{"--rates", "50,abc"}, bad: "--rates"},
		{name: "pid and cmd", args: []string{"--broker-pid", "1", "--broker-cmd", "true"}, bad: "one or the other"},
		{name: "zero duration", args: []string{"--duration", "0s"}, bad: "must be > 0"},
		{name: "partitions", args: []string{"--partitions", "0"}, bad: "--partitions"},
		{name: "argument", args: []string{"extra"}, bad: "unexpected argument"},
		{name: "topic config", args: []string{"--topic-config", "retention.bytes=5", "--compression", "lz4"}},
		{name: "bad topic config", args: []string{"--topic-config", "retention.bytes"}, bad: "key=value"},
		{name: "bad compression", args: []string{"--compression", "brotli"}, bad: "--compression"},
		{name: "search", args: []string{"--search", "3", "--search-duration", "20s"}},
		{name: "bad search", args: []string{"--search", "11"}, bad: "--search 11"},
		{name: "negative search duration", args: []string{"--search-duration", "-1s"}, bad: "--search-duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseOMBFlags(tc.args, &stderr)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("err %v, want one about %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch tc.name {
			case "defaults":
				if o.cfg.Partitions != 100 || o.cfg.Producers != 4 || o.cfg.Consumers != 4 || len(o.cfg.Fractions) != 4 || o.cfg.Duration.Seconds() != 60 ||
					o.cfg.Compression != "none" || o.cfg.TopicConfigs != nil {
					t.Fatalf("defaults: %+v", o.cfg)
				}
			case "topic config":
				if v := o.cfg.TopicConfigs["retention.bytes"]; v == nil || *v != "5" || o.cfg.Compression != "lz4" {
					t.Fatalf("topic config: %+v", o.cfg)
				}
			case "search":
				if o.cfg.Search != 3 || o.cfg.SearchDuration.Seconds() != 20 {
					t.Fatalf("search: %+v", o.cfg)
				}
			case "rates":
				if len(o.cfg.Fractions) != 2 || o.cfg.Fractions[0] != 0.5 || o.cfg.Warmup >= 0 {
					t.Fatalf("rates: %+v", o.cfg)
				}
			}
		})
	}
}

// TestPerfOMBSmoke runs `sluice perf omb` with tiny phases against a broker
// it starts with --broker-cmd (the built binary), and checks that every
// phase produced and consumed records and reported the broker's CPU.
func TestPerfOMBSmoke(t *testing.T) {
	testenv.NeedsProcess(t, "a built sluice binary as the broker")
	bin := filepath.Join(t.TempDir(), "sluice")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := fmt.Sprintf("%s serve --set log.dirs=%s --set listeners=PLAINTEXT://%s --set http.listeners= --set schema.registry.listeners=", bin, t.TempDir(), addr)
	var stdout, stderr bytes.Buffer
	status := run([]string{"perf", "omb", "--brokers", addr, "--broker-cmd", cmd, "--partitions", "8", "--producers", "2", "--consumers", "2",
		"--warmup", "300ms", "--probe", "500ms", "--duration", "500ms", "--rates", "50,100", "--target", "smoke", "--json"}, &stdout, &stderr)
	if status != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", status, stdout.String(), stderr.String())
	}
	var res load.OMBResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout.String())
	}
	if res.Target != "smoke" || res.Partitions != 8 || res.MaxRate <= 0 || len(res.Phases) != 3 {
		t.Fatalf("result: %+v", res)
	}
	for _, p := range res.Phases {
		if p.Produced == 0 || p.Consumed == 0 || p.Errors != 0 || p.Publish.Count != p.Produced || p.E2E.Count != p.Consumed || p.BrokerCPU <= 0 || p.ClientCPU <= 0 {
			t.Errorf("phase %s: %+v", p.Name, p)
		}
	}
}
