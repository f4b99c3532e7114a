// Package config holds the broker's configuration: Kafka's own key names
// (server.properties), their defaults, and the parsing and validation that
// `sluice serve --config FILE --set key=value` applies. An unknown key or a
// malformed value is an error naming the key, at start, never later.
//
// Every broker key and every topic key is defined once, in a table in the
// spirit of Kafka's ConfigDef (def.go: Key and TopicKey; the tables in
// keys.go and topickeys.go): name, type, default, validator, importance,
// documentation, whether it is dynamic or sensitive, and the topic key a
// broker key is the default of. The table drives parsing (parse.go),
// Default, what DescribeConfigs reports (Keys, TopicKeys, Describe,
// TopicDefault) and README's configuration tables (docs.go).
package config

import (
	"time"

	"github.com/sluice/sluice/internal/sched"
)

// Config is a parsed, validated broker configuration. The zero value is not
// valid; start from Default().
type Config struct {
	BrokerID            int32    // broker.id
	Listeners           []string // listeners, e.g. PLAINTEXT://:9092
	AdvertisedListeners []string // advertised.listeners; empty: derived from listeners
	// ListenerSecurityProtocolMap is listener.security.protocol.map: the
	// security protocol of each listener name (Kafka's default maps
	// PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL to themselves).
	ListenerSecurityProtocolMap map[string]string
	// ControlPlaneListenerName is control.plane.listener.name (KIP-291):
	// when set, the controller's requests (LeaderAndIsr, StopReplica,
	// UpdateMetadata) and ControlledShutdown are sent to, and only obeyed
	// on, this listener. "": on the client listener.
	ControlPlaneListenerName string
	// InterBrokerListenerName is inter.broker.listener.name: the listener
	// followers fetch from and the controller's requests go to when there
	// is no control-plane listener. "": the listener named by
	// security.inter.broker.protocol (default PLAINTEXT), else the first
	// listener that is not the control plane's.
	InterBrokerListenerName     string
	InterBrokerSecurityProtocol string // security.inter.broker.protocol

	// SASL (sasl.enabled.mechanisms, sasl.mechanism.inter.broker.protocol;
	// per-listener overrides and JAAS options are in SecurityProperties).
	SASLEnabledMechanisms    []string
	SASLInterBrokerMechanism string
	// SASLServerMaxReceiveSize bounds a frame before authentication
	// (sasl.server.max.receive.size, 512 KiB).
	SASLServerMaxReceiveSize int32
	// ConnectionsMaxReauth is connections.max.reauth.ms (KIP-368): a SASL
	// session must re-authenticate within it; 0: never.
	ConnectionsMaxReauth time.Duration
	// ConnectionsAuthenticationTimeout is
	// connections.authentication.timeout.ms (Sluice's own): from accept to
	// a finished TLS handshake and SASL authentication; 0: unbounded.
	ConnectionsAuthenticationTimeout time.Duration
	// FailedAuthenticationDelay is
	// connection.failed.authentication.delay.ms: how long a failed
	// authentication waits before it is answered.
	FailedAuthenticationDelay time.Duration
	// MaxFailedAuthenticationsPerIP and FailedAuthenticationsWindow are
	// max.failed.authentications.per.ip and
	// failed.authentications.per.ip.window.ms (Sluice's own): how many
	// logins an address may fail, SASL and HTTP together, at once and per
	// window (auth/loginlimit); 0: no limit.
	MaxFailedAuthenticationsPerIP int32
	FailedAuthenticationsWindow   time.Duration

	// Authorization: authorizer.class.name ("" none; Kafka's AclAuthorizer
	// class name or "sluice"), super.users, allow.everyone.if.no.acl.found.
	AuthorizerClassName  string
	SuperUsers           []string
	AllowEveryoneIfNoACL bool

	// SecurityProperties holds every ssl.*, sasl.* (other than the keys
	// above) and listener.name.<l>.* key as given; see ListenerProperty.
	SecurityProperties map[string]string
	LogDirs            []string // log.dirs (log.dir accepted as an alias)
	StorageBackend     string   // storage.backend: segment, pebble, memory

	// Tiered storage (KIP-405; package tiered). RemoteStorageProperties
	// holds every rsm.config.* key as given (the remote storage manager's
	// own settings, read by the backend that is configured).
	RemoteLogStorageSystemEnable bool          // remote.log.storage.system.enable
	LogLocalRetentionMs          int64         // log.local.retention.ms; -2: the topic's retention.ms
	LogLocalRetentionBytes       int64         // log.local.retention.bytes; -2: the topic's retention.bytes
	RemoteLogManagerTaskInterval time.Duration // remote.log.manager.task.interval.ms
	RemoteLogCopyMaxBytesPerSec  int64         // remote.log.manager.copy.max.bytes.per.second
	RemoteLogFetchMaxBytesPerSec int64         // remote.log.manager.fetch.max.bytes.per.second
	RemoteLogReaderThreads       int           // remote.log.reader.threads
	RemoteFetchMaxWait           time.Duration // remote.fetch.max.wait.ms
	RemoteLogIndexCacheBytes     int64         // remote.log.index.file.cache.total.size.bytes
	RemoteStorageProperties      map[string]string
	RemoteLogStorageBackend      string // remote.log.storage.backend: localdir or s3

	NumPartitions            int32 // num.partitions
	DefaultReplicationFactor int16 // default.replication.factor
	AutoCreateTopics         bool  // auto.create.topics.enable

	LogSegmentBytes       int64         // log.segment.bytes
	LogSegmentMs          time.Duration // log.roll.ms / log.roll.hours
	LogRetention          time.Duration // log.retention.ms/.minutes/.hours; < 0 unlimited
	LogRetentionBytes     int64         // log.retention.bytes; < 0 unlimited
	LogRetentionCheck     time.Duration // log.retention.check.interval.ms
	LogIndexIntervalBytes int           // log.index.interval.bytes
	LogIndexSizeMaxBytes  int           // log.index.size.max.bytes
	LogFlushIntervalMsgs  int64         // log.flush.interval.messages; <= 0 or MaxInt64: never by count
	LogFlushInterval      time.Duration // log.flush.interval.ms; 0: never by time
	MessageMaxBytes       int           // message.max.bytes
	MessageTimestampType  string        // log.message.timestamp.type: CreateTime | LogAppendTime
	SocketRequestMaxBytes int32         // socket.request.max.bytes
	ConnectionsMaxIdle    time.Duration // connections.max.idle.ms

	// LogFlushOffsetCheckpointInterval is log.flush.offset.checkpoint.interval.ms
	// (Kafka's default 60000): how often the recovery points are
	// checkpointed, bounding what a killed broker re-validates; 0: only at
	// a clean stop.
	LogFlushOffsetCheckpointInterval time.Duration
	// LogSegmentOpenFilesMax is log.segment.open.files.max (Sluice's own):
	// how many segments of the segment backend keep their files open and
	// their indexes mapped at once (1 descriptor and 2 mappings each); 0:
	// sized from the process's limits at start (broker/limits.go).
	LogSegmentOpenFilesMax int
	// LogSegmentTailCacheBytes is log.segment.tail.cache.bytes (Sluice's
	// own): the memory per log dir the segment and pebble backends keep
	// copies of their files' last small appends in, for fetches at the
	// tail (engine/tailcache); 0: off.
	LogSegmentTailCacheBytes int64
	// LogSegmentDeleteDelay is log.segment.delete.delay.ms (Kafka's default
	// 60000): how long bytes a log no longer indexes stay on disk before
	// they are removed. The pebble backend punches them out of its data
	// files only this long after retention, truncation or the cleaner let
	// go of them, so a fetch response sendfile(2) handed to a socket before
	// cannot be zeroed under it; the segment backend unlinks segment files
	// at once (an unlinked file's pages stay intact for whoever holds them).
	LogSegmentDeleteDelay time.Duration
	// SchedulingPolicy is process.scheduling.policy (Sluice's own):
	// the Linux scheduling policy `sluice serve` gives its threads,
	// normal (default: the kernel's) or batch (no wake-up preemption:
	// fewer context switches when requests overlap on a core the broker
	// has to itself, later wake-ups on one it shares; internal/sched).
	SchedulingPolicy sched.Policy

	// log.message.timestamp.difference.max.ms (deprecated in Kafka),
	// .before.max.ms and .after.max.ms: how far (ms) a CreateTime timestamp
	// may lie before or after the broker's clock; math.MaxInt64 (Kafka's
	// default) is unbounded. before/after fall back to difference while
	// left at the default, as in Kafka's LogConfig.
	MessageTimestampDifferenceMax int64
	MessageTimestampBeforeMax     int64
	MessageTimestampAfterMax      int64

	// QueuedMaxRequestBytes bounds the bytes of request frames being read
	// or waiting to be handled, broker-wide (queued.max.request.bytes); <= 0
	// is unbounded. Kafka's default is -1; ours is 256 MiB: at least
	// socket.request.max.bytes (Kafka's own rule, so that the largest frame
	// allowed can always be read), several times what full produce
	// throughput keeps in flight (1 GB/s for ~100 ms of handling is ~100 MB),
	// and small enough that 10,000 slow or hostile connections cannot hold
	// more, whatever sizes they announce.
	QueuedMaxRequestBytes int64
	// RequestReadTimeout bounds the time from a frame's first byte to its
	// last (request.read.timeout.ms, Sluice's own key): a client that sends
	// a size and then trickles the body is cut off.
	RequestReadTimeout time.Duration
	// MaxConnections bounds open client connections (max.connections): at
	// the limit the broker stops accepting until one closes, as Kafka does.
	MaxConnections int32
	// MaxConnectionCreationRate bounds new connections per second
	// (max.connection.creation.rate, KIP-612): accepting is delayed to
	// hold it. Per listener: ListenerLimit.
	MaxConnectionCreationRate int32
	// QuotaWindowNum and QuotaWindowSizeSeconds shape the sampled rates
	// of client quotas (quota.window.num, quota.window.size.seconds);
	// ControllerQuotaWindowNum and ControllerQuotaWindowSizeSeconds those
	// of controller_mutation_rate (package quota).
	QuotaWindowNum, QuotaWindowSizeSeconds                     int32
	ControllerQuotaWindowNum, ControllerQuotaWindowSizeSeconds int32
	// MaxConnectionsPerIP bounds connections from one address
	// (max.connections.per.ip); one over it is closed as it is accepted.
	MaxConnectionsPerIP int32
	// MaxConnectionsPerIPOverrides maps a host (IP or name) to its own
	// limit (max.connections.per.ip.overrides, "host:count,...").
	MaxConnectionsPerIPOverrides map[string]int32

	ZooKeeperConnect        string        // zookeeper.connect; "" = single-node mode
	ZooKeeperSessionTimeout time.Duration // zookeeper.session.timeout.ms
	// ZooKeeper security, Kafka's keys plus Sluice's digest identity
	// (zookeeper.go turns them into cluster.ZkSecurity's parts:
	// ZooKeeperDigest, ZooKeeperTLS).
	ZooKeeperSetACL                bool   // zookeeper.set.acl
	ZooKeeperAuthDigest            string // zookeeper.auth.digest: "user:password"
	ZooKeeperAuthDigestFile        string // zookeeper.auth.digest.file: a file holding user:password
	ZooKeeperSSLClientEnable       bool   // zookeeper.ssl.client.enable
	ZooKeeperSSLKeystoreLocation   string // zookeeper.ssl.keystore.location (PEM: key and chain)
	ZooKeeperSSLKeystorePassword   string // zookeeper.ssl.keystore.password: decrypts the PEM key
	ZooKeeperSSLKeystoreType       string // zookeeper.ssl.keystore.type: PEM or ""
	ZooKeeperSSLTruststoreLocation string // zookeeper.ssl.truststore.location (PEM CAs)
	ZooKeeperSSLTruststorePassword string // zookeeper.ssl.truststore.password: unused for PEM
	ZooKeeperSSLTruststoreType     string // zookeeper.ssl.truststore.type: PEM or ""
	// ZooKeeperSSLEndpointIdentification is
	// zookeeper.ssl.endpoint.identification.algorithm: "HTTPS" verifies
	// the server's host name, "" does not.
	ZooKeeperSSLEndpointIdentification string
	ZooKeeperSSLEnabledProtocols       string        // zookeeper.ssl.enabled.protocols; "": ZooKeeperSSLProtocol
	ZooKeeperSSLProtocol               string        // zookeeper.ssl.protocol: TLSv1.2, TLSv1.3 or TLS (both)
	ZooKeeperSSLCipherSuites           string        // zookeeper.ssl.cipher.suites
	MinInsyncReplicas                  int           // min.insync.replicas
	ReplicaLagTimeMax                  time.Duration // replica.lag.time.max.ms
	UncleanLeaderElection              bool          // unclean.leader.election.enable
	OffsetsTopicReplication            int16         // offsets.topic.replication.factor
	OffsetsTopicPartitions             int32         // offsets.topic.num.partitions
	// OffsetsTopicSegmentBytes is offsets.topic.segment.bytes (100 MiB):
	// the segment.bytes of __consumer_offsets, which is compacted, so
	// smaller segments let the cleaner reach commits sooner.
	OffsetsTopicSegmentBytes   int32
	OffsetsRetention           time.Duration // offsets.retention.minutes
	GroupInitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	GroupMinSessionTimeout     time.Duration // group.min.session.timeout.ms
	GroupMaxSessionTimeout     time.Duration // group.max.session.timeout.ms
	FetchSessionCacheSlots     int32         // max.incremental.fetch.session.cache.slots (KIP-227; 0: none)
	ControlledShutdownEnable   bool          // controlled.shutdown.enable
	AutoLeaderRebalance        bool          // auto.leader.rebalance.enable
	LeaderImbalanceCheck       time.Duration // leader.imbalance.check.interval.seconds
	LeaderImbalancePercentage  int           // leader.imbalance.per.broker.percentage
	DeleteTopicEnable          bool          // delete.topic.enable
	ProducerIDExpiration       time.Duration // producer.id.expiration.ms
	// The transaction coordinator (package txn) and its internal topic
	// __transaction_state, Kafka's keys and defaults.
	TransactionalIDExpiration        time.Duration // transactional.id.expiration.ms (7 d)
	TransactionStatePartitions       int32         // transaction.state.log.num.partitions (50)
	TransactionStateReplication      int16         // transaction.state.log.replication.factor (3)
	TransactionStateSegmentBytes     int32         // transaction.state.log.segment.bytes (100 MiB)
	TransactionStateMinISR           int           // transaction.state.log.min.isr (2): min.insync.replicas of the topic
	TransactionMaxTimeout            time.Duration // transaction.max.timeout.ms (15 min)
	TransactionAbortTimedOutInterval time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s)
	TransactionRemoveExpiredInterval time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms (1 h)
	ClusterIDOverride                string        // cluster.id (sluice: optional fixed cluster id)
	RackID                           string        // broker.rack

	// HTTPListeners is http.listeners (Sluice's own key): where the HTTP
	// side (/metrics, /healthz, /readyz, the console and /api/) listens,
	// http://host:port or https://host:port (TLS with the broker's ssl.*
	// settings). Default http://127.0.0.1:9644; empty: no HTTP server, and
	// no metrics are kept.
	HTTPListeners []string
	// SchemaRegistryListeners is schema.registry.listeners (Sluice's own
	// key): where the schema registry (package schemareg) listens, at most
	// one http://host:port or https://host:port (TLS with the broker's
	// ssl.* settings). Default http://127.0.0.1:8081; empty: off.
	SchemaRegistryListeners []string
	// HTTPMetricsAuthentication is http.metrics.authentication.enable
	// (Sluice's own key, true): when the HTTP side needs a user, /metrics
	// needs one too; false serves /metrics to anyone, as /healthz.
	HTTPMetricsAuthentication bool
	// MetricsPartitionSeriesMax is metrics.partition.series.max (Sluice's
	// own key, 10000): above this many local partitions the kafka_log_log_*
	// series are not exported, and above this many committed offsets in
	// the exported groups (group x partition) the per-partition
	// kafka_consumergroup_lag and current_offset series are not; 0: never
	// exported.
	MetricsPartitionSeriesMax int

	// Log cleaning (compaction), Kafka's keys and defaults. The topic
	// configs cleanup.policy, delete.retention.ms, min.cleanable.dirty.ratio,
	// min.compaction.lag.ms and max.compaction.lag.ms default to the
	// log.cleanup.policy and log.cleaner.* values here.
	LogCleanupPolicy CleanupPolicy // log.cleanup.policy (delete)
	LogCleanerEnable bool          // log.cleaner.enable (true)
	// LogCleanerThreads is log.cleaner.threads (1); 0: no cleaning.
	LogCleanerThreads int
	// LogCleanerDedupeBufferSize is log.cleaner.dedupe.buffer.size (128
	// MiB): the memory of the cleaners' key-hash maps, shared by the
	// threads. It bounds how much of a log one pass can clean, not what
	// the cleaner can clean eventually.
	LogCleanerDedupeBufferSize int64
	// LogCleanerIOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second:
	// the cleaners' read plus write rate, all threads together.
	// math.MaxFloat64 (Kafka's default, Double.MAX_VALUE) is unbounded.
	LogCleanerIOMaxBytesPerSecond float64
	// LogCleanerBackoff is log.cleaner.backoff.ms (15 s): how long a
	// cleaner sleeps when no log needs cleaning.
	LogCleanerBackoff time.Duration
	// LogCleanerDeleteRetentionMs is log.cleaner.delete.retention.ms (1
	// day): how long a tombstone stays readable after the segment holding
	// it was cleaned. Kept in ms, as Kafka's LONG, so that it is described
	// as it was given.
	LogCleanerDeleteRetentionMs int64
	// LogCleanerMinCleanableRatio is log.cleaner.min.cleanable.ratio (0.5),
	// in [0, 1]: a log is cleaned once this share of it is dirty
	// (written since the last cleaning).
	LogCleanerMinCleanableRatio float64
	// LogCleanerMinCompactionLagMs and LogCleanerMaxCompactionLagMs are
	// log.cleaner.min.compaction.lag.ms (0) and
	// log.cleaner.max.compaction.lag.ms (math.MaxInt64, Kafka's
	// Long.MAX_VALUE: no bound): a record stays uncompacted for at least
	// the min, and is compacted by the max even below the dirty ratio.
	// Invariant (Validate): min <= max.
	LogCleanerMinCompactionLagMs int64
	LogCleanerMaxCompactionLagMs int64

	// The follower fetchers' requests to their leaders (cluster mode),
	// Kafka's keys and defaults: replica.fetch.max.bytes (per partition,
	// 1 MiB), replica.fetch.response.max.bytes (10 MiB),
	// replica.fetch.min.bytes (1), replica.fetch.wait.max.ms (500 ms:
	// how long the leader holds a fetch with less than min bytes;
	// Invariant (Validate): <= replica.lag.time.max.ms) and
	// replica.fetch.backoff.ms (1 s, after an error).
	// replica.fetch.response.max.bytes is at most
	// ReplicaFetchResponseMaxBytesLimit.
	ReplicaFetchMaxBytes         int32
	ReplicaFetchResponseMaxBytes int32
	ReplicaFetchMinBytes         int32
	ReplicaFetchWaitMax          time.Duration
	ReplicaFetchBackoff          time.Duration

	// LeaderReplicationThrottledRate and FollowerReplicationThrottledRate
	// are leader.replication.throttled.rate and
	// follower.replication.throttled.rate (bytes/s; math.MaxInt64, Kafka's
	// default, is unbounded), enforced by quota.Replication over
	// ReplicationQuotaWindowNum samples of ReplicationQuotaWindowSizeSeconds
	// (replication.quota.window.num, .size.seconds).
	LeaderReplicationThrottledRate   int64
	FollowerReplicationThrottledRate int64

	// ReplicaAlterLogDirsIOMaxBytesPerSecond is
	// replica.alter.log.dirs.io.max.bytes.per.second: the copy rate of
	// moves between log dirs, all together (math.MaxInt64: unbounded; 0:
	// held back). Dynamic: replica.Manager.SetAlterLogDirsRate applies it.
	ReplicaAlterLogDirsIOMaxBytesPerSecond int64

	ReplicationQuotaWindowNum, ReplicationQuotaWindowSizeSeconds int32

	// dynDefault and dynBroker are the dynamic layers WithDynamic applied
	// (the cluster-wide default and this broker's, Kafka's
	// DYNAMIC_DEFAULT_BROKER_CONFIG and DYNAMIC_BROKER_CONFIG), as given:
	// what Describe reports those sources from. Never modified once set.
	dynDefault, dynBroker map[string]string

	// Consumer groups (KIP-848), Kafka's group.coordinator.* and
	// group.consumer.* keys.
	GroupRebalanceProtocols           []string      // group.coordinator.rebalance.protocols
	GroupConsumerHeartbeatInterval    time.Duration // group.consumer.heartbeat.interval.ms
	GroupConsumerMinHeartbeatInterval time.Duration // group.consumer.min.heartbeat.interval.ms
	GroupConsumerMaxHeartbeatInterval time.Duration // group.consumer.max.heartbeat.interval.ms
	GroupConsumerSessionTimeout       time.Duration // group.consumer.session.timeout.ms
	GroupConsumerMinSessionTimeout    time.Duration // group.consumer.min.session.timeout.ms
	GroupConsumerMaxSessionTimeout    time.Duration // group.consumer.max.session.timeout.ms
	GroupConsumerMaxSize              int           // group.consumer.max.size
	GroupConsumerAssignors            []string      // group.consumer.assignors (short names)
	GroupConsumerMigrationPolicy      string        // group.consumer.migration.policy (lower case)

	// Share groups (KIP-932), Kafka's group.share.* keys (sharegroup.go).
	GroupShare ShareGroupBroker

	// explicit maps each key set by Load or Set (its canonical name) to
	// the value as given: what DescribeConfigs reports as
	// STATIC_BROKER_CONFIG. Copied on write, so Configs copied from one
	// another do not share changes.
	explicit map[string]string
}

// ReplicaFetchResponseMaxBytesLimit bounds replica.fetch.response.max.bytes
// (Kafka has no bound): a follower reads its leader's answers through
// internal/kconn, which refuses one larger than kconn.MaxResponseBytes
// (256 MiB) and drops the connection, so a follower catching up over many
// partitions with a larger setting would be refused the same answer on
// every retry and never catch up. Half of kconn's bound leaves room for
// the partitions' headers beside the records.
const ReplicaFetchResponseMaxBytesLimit = 128 << 20

// Default returns Kafka's defaults (and Sluice's for its own keys): every
// key's Default in the table (keys.go) applied in turn. Each call builds a
// new Config; the caller owns it.
func Default() Config { return buildDefault() }

// SingleNode reports whether the broker runs without ZooKeeper, as its own
// controller with topic metadata in its metastore.
func (c *Config) SingleNode() bool { return c.ZooKeeperConnect == "" }
