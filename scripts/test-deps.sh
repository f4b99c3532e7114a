#!/usr/bin/env bash
# Installs what the integration tests need when it is missing: kcat (a
# librdkafka client, to prove compatibility with a non-Go client) and a real
# ZooKeeper (for cluster tests). Under CI=true a dependency that cannot be
# installed is a failure; elsewhere it is a warning and those tests skip.
set -u
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
[ ${#need[@]} -eq 0 ] && exit 0

echo "test-deps: installing ${need[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"; } >&2; then
	if [ "${CI:-}" = "true" ]; then
		echo "test-deps: could not install ${need[*]} (CI=true: failing)" >&2
		exit 1
	fi
	echo "test-deps: could not install ${need[*]}; tests that need them will skip" >&2
fi
exit 0
