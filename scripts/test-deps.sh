#!/usr/bin/env bash
# Installs what the integration tests need when it is missing: kcat (a
# librdkafka client), kafka-python (Debian's python3-kafka, for
# /usr/bin/python3), confluent-kafka-python (python3-confluent-kafka: librdkafka's
# transactional producer) and kafkajs (npm, pinned by e2e/compat/kafkajs's lock
# file), to prove compatibility with non-Go clients; a real ZooKeeper
# (for cluster tests); Debian's Burrow (LinkedIn's consumer-lag monitor,
# /usr/bin/Burrow, for e2e/burrow_test.go); Debian's chromium at
# /usr/bin/chromium, which the web console's browser tests drive headless
# with chromedp; nftables (nft) and iproute2 (ip) for the network-partition
# suite e2e/chaos; Versity's S3 gateway (versitygw, bin/tools) for tiered
# storage on S3. Under CI=true a
# dependency that cannot be installed is a failure; elsewhere it is a
# warning and those tests skip.
set -u
cd "$(dirname "$0")/.."
fail() {
	if [ "${CI:-}" = "true" ]; then
		echo "test-deps: $* (CI=true: failing)" >&2
		exit 1
	fi
	echo "test-deps: $*; tests that need it will skip" >&2
}

need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need+=(python3-kafka)
/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || need+=(python3-confluent-kafka)
# confluent-kafka-python's SchemaRegistryClient and its JSON and Protobuf
# serializers (e2e/schema_registry_python_test.go).
/usr/bin/python3 -c 'import requests' >/dev/null 2>&1 || need+=(python3-requests)
/usr/bin/python3 -c 'import jsonschema' >/dev/null 2>&1 || need+=(python3-jsonschema)
/usr/bin/python3 -c 'import google.protobuf' >/dev/null 2>&1 || need+=(python3-protobuf)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v Burrow >/dev/null 2>&1 || need+=(burrow)
if [ ${#need[@]} -gt 0 ]; then
	echo "test-deps: installing ${need[*]}" >&2
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO="sudo"
	if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"; } >&2; then
		fail "could not install ${need[*]}"
	fi
fi

js=e2e/compat/kafkajs
if [ ! -f "$js/node_modules/kafkajs/package.json" ] || [ ! -f "$js/node_modules/@kafkajs/confluent-schema-registry/package.json" ]; then
	echo "test-deps: npm ci in $js" >&2
	if ! (cd "$js" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) >&2; then
		fail "could not install kafkajs (npm ci in $js)"
	fi
fi
# Versity's S3 gateway, the S3-compatible store of the tiered-storage
# tests (internal/s3test), built from source into bin/tools.
if [ ! -x bin/tools/versitygw ]; then
	echo "test-deps: go install versitygw into bin/tools" >&2
	if ! GOBIN="$PWD/bin/tools" GOFLAGS=-mod=mod timeout 1200 go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 >&2; then
		fail "could not install versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"
	fi
fi
exit 0
