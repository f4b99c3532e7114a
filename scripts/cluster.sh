#!/usr/bin/env bash
# Starts a local Sluice cluster: one ZooKeeper and three brokers (ids 1-3)
# on 127.0.0.1, ports 9092-9094, data and logs under ./cluster-data/.
# Ctrl-C stops the brokers (SIGTERM: controlled shutdown) and then
# ZooKeeper. Run it with `make cluster`.
#
# Knobs: ZK_PORT (2181), BASE_PORT (9092), DATA (./cluster-data),
# BIN (bin/sluice), EXTRA ("--set key=value ..." for every broker).
set -euo pipefail

ZK_PORT=${ZK_PORT:-2181}
BASE_PORT=${BASE_PORT:-9092}
HTTP_BASE_PORT=${HTTP_BASE_PORT:-9644}
DATA=${DATA:-./cluster-data}
BIN=${BIN:-bin/sluice}
EXTRA=${EXTRA:-}
ZK_CP=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar

[ -x "$BIN" ] || { echo "cluster: $BIN missing; run make build" >&2; exit 1; }
command -v java >/dev/null || { echo "cluster: java missing; run make test-deps" >&2; exit 1; }
[ -f /usr/share/java/zookeeper.jar ] || { echo "cluster: zookeeper missing; run make test-deps" >&2; exit 1; }
mkdir -p "$DATA/zookeeper"

pids=()
stop() {
	trap - INT TERM EXIT
	echo
	echo "cluster: stopping brokers"
	for pid in "${pids[@]:1}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]:1}"; do wait "$pid" 2>/dev/null || true; done
	echo "cluster: stopping zookeeper"
	kill -TERM "${pids[0]}" 2>/dev/null || true
	wait "${pids[0]}" 2>/dev/null || true
	exit 0
}
trap stop INT TERM EXIT

# tickTime 500 ms allows session timeouts down to 1 s; no admin server on :8080.
cat >"$DATA/zoo.cfg" <<CFG
tickTime=500
dataDir=$(cd "$DATA" && pwd)/zookeeper
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok
CFG
java -Xmx256m -XX:+UseSerialGC -cp "$ZK_CP" -Dzookeeper.admin.enableServer=false \
	org.apache.zookeeper.server.ZooKeeperServerMain "$DATA/zoo.cfg" \
	>"$DATA/zookeeper.log" 2>&1 &
pids+=($!)
ready=""
for _ in $(seq 1 300); do
	kill -0 "${pids[0]}" 2>/dev/null || { echo "cluster: zookeeper exited; see $DATA/zookeeper.log" >&2; exit 1; }
	if { exec 3<>"/dev/tcp/127.0.0.1/$ZK_PORT"; } 2>/dev/null; then
		printf ruok >&3
		ans=$(timeout 2 cat <&3 || true)
		exec 3>&-
		[ "$ans" = imok ] && { ready=1; break; }
	fi
	sleep 0.1
done
[ -n "$ready" ] || { echo "cluster: zookeeper not ready after 30 s; see $DATA/zookeeper.log" >&2; exit 1; }
sleep 1 # ruok answers a moment before sessions are served

for id in 1 2 3; do
	port=$((BASE_PORT + id - 1))
	# shellcheck disable=SC2086
	"$BIN" serve \
		--set broker.id=$id \
		--set listeners=PLAINTEXT://127.0.0.1:$port \
		--set http.listeners=http://127.0.0.1:$((HTTP_BASE_PORT + id - 1)) \
		--set log.dirs="$DATA/broker-$id" \
		--set zookeeper.connect=127.0.0.1:$ZK_PORT/sluice \
		--set zookeeper.session.timeout.ms=6000 \
		$EXTRA >"$DATA/broker-$id.log" 2>&1 &
	pids+=($!)
done

cat <<MSG
cluster: ZooKeeper on 127.0.0.1:$ZK_PORT, brokers 1-3 on 127.0.0.1:$BASE_PORT-$((BASE_PORT + 2))
         metrics and console on http://127.0.0.1:$HTTP_BASE_PORT-$((HTTP_BASE_PORT + 2))
         data and logs in $DATA/ (broker-N.log, zookeeper.log); Ctrl-C stops everything.

  bin/sluice topic create orders --bootstrap-server 127.0.0.1:$BASE_PORT --partitions 3 --replication-factor 3 --config min.insync.replicas=2
  kcat -L -b 127.0.0.1:$BASE_PORT
  printf 'k1:hello\nk2:world\n' | kcat -P -b 127.0.0.1:$((BASE_PORT + 1)) -t orders -K: -X acks=all
  kcat -C -b 127.0.0.1:$((BASE_PORT + 2)) -t orders -e -f '%p/%o %k=%s\n'
  kill -9 <pid of a broker>   # leaders move to the other in-sync replicas within the session timeout (6 s)
MSG
echo "cluster: pids zookeeper=${pids[0]} brokers=${pids[*]:1}"
wait -n "${pids[@]}" || true
echo "cluster: a process exited; see $DATA/*.log" >&2
wait
