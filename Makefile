# Sluice: a Kafka-compatible broker. `make run` starts a single-node broker on
# localhost:9092; `make test` installs what the tests need and runs them all.

GO        ?= go
BIN       := bin/sluice
PKGS      := ./...
# Packages whose state is shared between goroutines run under the race detector.
# go test starts packages in the order given: the longest (server, about
# 190 s under the race detector; cluster and broker, 70-90 s) go first so
# that the rest run beside them.
RACE_PKGS ?= ./server/... ./cluster/... ./broker/... ./engine/... ./segment/... ./mmapindex/... \
	./zerocopy/... ./record/... ./replication/... ./metastore/... ./group/... ./internal/... \
	./coordlog/... ./offsets/... ./txn/... ./replica/... ./acl/... ./auth/... ./console/... ./metrics/... \
	./schemareg/...

export GOFLAGS := -buildvcs=false

.PHONY: all build run cluster test test-deps unit race norace rest fuzz bench bench-report scale chaos vet clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/sluice

# make run ARGS='--set key=value ...' passes flags to sluice serve.
run: build
	./$(BIN) serve $(ARGS)

# A local cluster: ZooKeeper and brokers 1-3 on 127.0.0.1:9092-9094, data
# in ./cluster-data; Ctrl-C stops everything (scripts/cluster.sh).
cluster: build
	@./scripts/cluster.sh

# test-deps installs the external programs the integration tests drive.
test-deps:
	@./scripts/test-deps.sh

# make test runs every package once: those that share state between
# goroutines under the race detector, the rest (end-to-end tests of the
# binary, the CLI, config) without it.
test: test-deps vet race rest norace

# e2e (about 5 minutes) starts first, the other packages beside it; its
# waiting tests run three at a time (e2e/harness_test.go).
REST_FIRST := ./e2e
rest:
	$(GO) test -count=1 -parallel 3 -timeout 15m $(shell $(GO) list $(REST_FIRST)) \
		$(filter-out $(shell $(GO) list $(RACE_PKGS) $(REST_FIRST)),$(shell $(GO) list ./...))

vet:
	$(GO) vet $(PKGS)

# make unit runs every test that starts no process and needs no installed
# program, in about a minute and a half on 2 cores: go test -short, under
# which the tests that start ZooKeeper, the sluice binary, kcat, a Python or
# Node client, chromium or openssl skip (internal/testenv.NeedsProcess).
# The packages whose tests take longest are listed first so that they start
# first and the others run beside them (server alone takes about 60 s,
# most of it waiting on session and request timeouts). Three packages at
# a time on two cores: most of these tests wait on timers, and linking one
# package's test binary overlaps another's run (89-97 s here, warm, against
# 105-114 s at the default of two).
UNIT_FIRST := ./server ./engine/pebblelog ./segment
unit:
	$(GO) test -short -count=1 -p 3 -parallel 8 -timeout 5m $(shell $(GO) list $(UNIT_FIRST)) \
		$(filter-out $(shell $(GO) list $(UNIT_FIRST)),$(shell $(GO) list $(PKGS)))

race:
	$(GO) test -count=1 -race -timeout 15m $(RACE_PKGS)

# Tests that measure the bytes a decode allocates skip under the race
# detector (it changes what an allocation costs); they run here without it.
NORACE_TESTS ?= TestDecodedSize
norace:
	$(GO) test -count=1 -run '$(NORACE_TESTS)' ./server/

# Short fuzzing passes over every decoder and recovery scanner (the seed
# corpora of these targets also run as ordinary tests in `make test`).
# scripts/fuzz.sh finds every Fuzz* target in the tree with `go test -list`
# and fuzzes each for FUZZTIME; FUZZ_MATCH (a regexp over "<package>
# <target>") picks some, e.g. make fuzz FUZZ_MATCH=FuzzWrite FUZZTIME=1m.
FUZZTIME ?= 20s
FUZZ_MATCH ?= .
fuzz:
	@GO="$(GO)" FUZZTIME="$(FUZZTIME)" FUZZ_MATCH="$(FUZZ_MATCH)" ./scripts/fuzz.sh

BENCHTIME ?= 1s
bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem ./bench/... ./engine/... ./segment/... ./mmapindex/...

# Measure the machine's limits, sluice perf against every backend and
# kfake, and profiles; then the OMB shape (sluice perf omb) at 100 and
# 10,000 partitions against segment, pebble and kfake; rewrite
# BENCHMARKS.md's generated sections and docs/bench.svg (about 65 minutes
# on 2 cores; knobs at the top of scripts/bench-report.sh,
# scripts/bench-report-omb.sh and scripts/bench-report-sections.sh).
bench-report:
	@./scripts/bench-report.sh
	@./scripts/bench-report-omb.sh
	@./scripts/bench-report-sections.sh

# Partitions at scale on one node (issue 15): segment up to 20,000 under
# ulimit -n 20000, pebble up to 100,000; RSS per partition, fds, maps,
# Metadata/CreateTopics latency, stop and restart (scripts/scale.sh; about
# 15 minutes; not part of make test).
scale:
	@./scripts/scale.sh

# Network partitions (issue 27; e2e/chaos, as root): three brokers,
# ZooKeeper and the client each in a network namespace, cut apart with
# nftables, brokers SIGSTOPped and SIGKILLed, acks=all producers checked
# for lost records. The whole suite takes about four minutes; make test
# runs a one-minute subset of it (without SLUICE_CHAOS=full).
chaos: test-deps
	SLUICE_CHAOS=full $(GO) test -count=1 -v -timeout 20m -run TestChaos ./e2e/chaos/

clean:
	rm -rf bin
