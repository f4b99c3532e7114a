package config

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/auth/tlsconf"
	"github.com/sluice/sluice/internal/sched"
)

// brokerKeys is the table of broker keys, grouped as README shows them.
// Kafka's names, types and defaults except where Doc says "Sluice's own"
// or names the difference. Read-only.
var brokerKeys = []Key{
	// Identity and listeners.
	{Name: "broker.id", Aliases: []string{"node.id"}, Type: TypeInt, Importance: High, Default: "0",
		Doc:   "this broker's id (`node.id` is accepted as an alias)",
		codec: int32Key(func(c *Config) *int32 { return &c.BrokerID }, 0, math.MaxInt32)},
	{Name: "broker.rack", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc:   "this broker's rack, reported in Metadata",
		codec: stringKey(func(c *Config) *string { return &c.RackID }, false)},
	{Name: "cluster.id", Type: TypeString, Importance: Low, NoDefault: true,
		Doc:   "Sluice's own: a fixed cluster id instead of a generated one",
		codec: stringKey(func(c *Config) *string { return &c.ClusterIDOverride }, false)},
	{Name: "listeners", Type: TypeList, Importance: High, Default: "PLAINTEXT://:9092",
		Doc: "where to listen, `NAME://host:port` each (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL through `listener.security.protocol.map`; see Security; port 0 picks a free port)",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				s.c.Listeners, err = parseListeners(key, v, false)
				return err
			},
			get: listString(func(c *Config) []string { return c.Listeners }),
		}},
	{Name: "advertised.listeners", Type: TypeList, Importance: High, NoDefault: true,
		Doc: "the address clients are told, per listener name; unset: from `listeners`",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				s.c.AdvertisedListeners, err = parseListeners(key, v, true)
				return err
			},
			get: listString(func(c *Config) []string { return c.AdvertisedListeners }),
		}},
	{Name: "listener.security.protocol.map", Type: TypeString, Importance: Low,
		Default: "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
		Doc:     "the security protocol of each listener name, `NAME:PROTOCOL,...`",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				s.c.ListenerSecurityProtocolMap, err = parseProtocolMap(key, v)
				return err
			},
			get: func(c *Config) string {
				return mapString(c.ListenerSecurityProtocolMap, ":", func(p string) string { return p })
			},
		}},
	{Name: "control.plane.listener.name", Type: TypeString, Importance: High, NoDefault: true,
		Doc:   "cluster mode (KIP-291): the listener the controller's requests (LeaderAndIsr, StopReplica, UpdateMetadata) and ControlledShutdown travel on; they are refused (CLUSTER_AUTHORIZATION_FAILED) on every other listener. Clients and followers use the first other listener",
		codec: stringKey(func(c *Config) *string { return &c.ControlPlaneListenerName }, true)},
	{Name: "inter.broker.listener.name", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc:   "cluster mode: the listener brokers reach each other on; unset: the one named by `security.inter.broker.protocol`, else the first listener that is not `control.plane.listener.name`",
		codec: stringKey(func(c *Config) *string { return &c.InterBrokerListenerName }, true)},
	{Name: "security.inter.broker.protocol", Type: TypeString, Importance: Medium, Default: "PLAINTEXT",
		Doc:   "cluster mode: the listener name brokers use when `inter.broker.listener.name` is not set",
		codec: stringKey(func(c *Config) *string { return &c.InterBrokerSecurityProtocol }, true)},
	{Name: "http.listeners", Type: TypeList, Importance: Medium, Default: "http://127.0.0.1:9644",
		Doc: "Sluice's own: where `/metrics`, `/healthz`, `/readyz`, the web console and `/api/` are served (`http://` or `https://host:port`, comma-separated); empty: no HTTP server and no metrics",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				s.c.HTTPListeners, err = parseHTTPListeners(key, v)
				return err
			},
			get: listString(func(c *Config) []string { return c.HTTPListeners }),
		}},
	{Name: "schema.registry.listeners", Type: TypeList, Importance: Medium, Default: "http://127.0.0.1:8081",
		Doc: "Sluice's own: where the built-in schema registry serves Confluent Schema Registry's REST API (`http://host:port` or `https://host:port` with the broker's `ssl.*` settings; one listener); empty: no schema registry. It logs its clients in with the broker's users and follows the ACLs whenever the console does (README, Schema registry, Security)",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				ls, err := parseHTTPListeners(key, v)
				if err != nil {
					return err
				}
				if len(ls) > 1 {
					return keyError(key, "one listener, not %d", len(ls))
				}
				s.c.SchemaRegistryListeners = ls
				return nil
			},
			get: listString(func(c *Config) []string { return c.SchemaRegistryListeners }),
		}},
	{Name: "http.metrics.authentication.enable", Type: TypeBoolean, Importance: Medium, Default: "true",
		Doc:   "Sluice's own: when the HTTP side needs a user (an authorizer, or a Kafka listener that authenticates its clients; see Who sees what), `/metrics` needs one too (and with an authorizer shows the series of only the topics and groups that user may Describe); `false` serves `/metrics` to anyone who reaches the port, topic and group names included",
		codec: boolKey(func(c *Config) *bool { return &c.HTTPMetricsAuthentication })},

	// Storage.
	{Name: "log.dirs", Aliases: []string{"log.dir"}, Type: TypeString, Importance: High, Default: "./data",
		Doc: "the data directories, comma-separated (JBOD: each holds its own partitions; the metastore lives in the first); `log.dir` is accepted as an alias",
		codec: codec{
			set: func(s *setter, key, v string) error {
				s.c.LogDirs = splitList(v)
				if len(s.c.LogDirs) == 0 {
					return keyError(key, "empty")
				}
				return nil
			},
			get: listString(func(c *Config) []string { return c.LogDirs }),
		}},
	{Name: "storage.backend", Type: TypeString, Importance: High, Default: "segment", Topic: "storage.backend",
		Doc: "Sluice's own: `segment`, `pebble` or `memory` (see Storage backends)",
		codec: codec{
			set: func(s *setter, key, v string) error {
				s.c.StorageBackend = v
				if v == "" {
					return keyError(key, "empty")
				}
				return nil
			},
			get: func(c *Config) string { return c.StorageBackend },
		}},
	{Name: "num.partitions", Type: TypeInt, Importance: Medium, Default: "1",
		Doc:   "partitions of auto-created topics",
		codec: int32Key(func(c *Config) *int32 { return &c.NumPartitions }, 1, math.MaxInt32)},
	{Name: "default.replication.factor", Type: TypeInt, Importance: Medium, Default: "1",
		Doc:   "replication factor of auto-created topics and of CreateTopics without one",
		codec: int16Key(func(c *Config) *int16 { return &c.DefaultReplicationFactor }, 1, math.MaxInt16)},
	{Name: "auto.create.topics.enable", Type: TypeBoolean, Importance: High, Default: "true",
		Doc:   "create topics on Metadata/Produce for unknown names",
		codec: boolKey(func(c *Config) *bool { return &c.AutoCreateTopics })},
	{Name: "delete.topic.enable", Type: TypeBoolean, Importance: High, Default: "true",
		Doc:   "DeleteTopics is refused (TOPIC_DELETION_DISABLED) when false",
		codec: boolKey(func(c *Config) *bool { return &c.DeleteTopicEnable })},
	{Name: "log.segment.bytes", Dynamic: ClusterWide, Type: TypeInt, Importance: High, Default: "1073741824", Topic: "segment.bytes",
		Doc:   "segment size before a roll",
		codec: int64Key(func(c *Config) *int64 { return &c.LogSegmentBytes }, 14, math.MaxInt32)},
	{Name: "log.roll.ms", Dynamic: ClusterWide, Type: TypeLong, Importance: High, Default: "604800000", Topic: "segment.ms",
		Doc: "segment age before a roll (7 days); takes precedence over `log.roll.hours`",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				s.roll[key], err = parseDuration(key, v, time.Millisecond, 1)
				return err
			},
			get: func(c *Config) string { return durationString(c.LogSegmentMs, time.Millisecond) },
		}},
	{Name: "log.roll.hours", Type: TypeInt, Importance: High, Default: "168",
		Doc: "segment age before a roll, when `log.roll.ms` is not set",
		codec: codec{set: func(s *setter, key, v string) (err error) {
			s.roll[key], err = parseDuration(key, v, time.Hour, 1)
			return err
		}}},
	{Name: "log.retention.ms", Dynamic: ClusterWide, Type: TypeLong, Importance: High, Default: "604800000", Topic: "retention.ms",
		Doc: "delete segments older than this (7 days; -1: never); takes precedence over `log.retention.minutes` and `log.retention.hours`",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				s.retention[key], err = parseDuration(key, v, time.Millisecond, -1)
				return err
			},
			get: func(c *Config) string { return durationString(c.LogRetention, time.Millisecond) },
		}},
	{Name: "log.retention.minutes", Type: TypeInt, Importance: High, NoDefault: true,
		Doc: "retention in minutes, when `log.retention.ms` is not set; takes precedence over `log.retention.hours`",
		codec: codec{set: func(s *setter, key, v string) (err error) {
			s.retention[key], err = parseDuration(key, v, time.Minute, -1)
			return err
		}}},
	{Name: "log.retention.hours", Type: TypeInt, Importance: High, Default: "168",
		Doc: "retention in hours, when neither `log.retention.ms` nor `log.retention.minutes` is set",
		codec: codec{set: func(s *setter, key, v string) (err error) {
			s.retention[key], err = parseDuration(key, v, time.Hour, -1)
			return err
		}}},
	{Name: "log.retention.bytes", Dynamic: ClusterWide, Type: TypeLong, Importance: High, Default: "-1", Topic: "retention.bytes",
		Doc:   "delete old segments above this size per partition (-1: no bound)",
		codec: int64Key(func(c *Config) *int64 { return &c.LogRetentionBytes }, -1, math.MaxInt64)},
	{Name: "log.retention.check.interval.ms", Type: TypeLong, Importance: Medium, Default: "300000",
		Doc:   "how often retention runs",
		codec: durationKey(func(c *Config) *time.Duration { return &c.LogRetentionCheck }, time.Millisecond, 1)},
	{Name: "log.index.interval.bytes", Dynamic: ClusterWide, Type: TypeInt, Importance: Medium, Default: "4096",
		Doc:   "bytes of log between offset index entries",
		codec: intKey(func(c *Config) *int { return &c.LogIndexIntervalBytes }, 0, math.MaxInt32)},
	{Name: "log.index.size.max.bytes", Dynamic: ClusterWide, Type: TypeInt, Importance: Medium, Default: "10485760",
		Doc:   "preallocated index size",
		codec: intKey(func(c *Config) *int { return &c.LogIndexSizeMaxBytes }, 4, math.MaxInt32)},
	{Name: "log.segment.open.files.max", Type: TypeInt, Importance: Medium, Default: "0",
		Doc:   "Sluice's own: on `segment`, segments whose files are open at once, active ones included (each holds its .log's descriptor and its two index mappings; the index files are closed once mapped, as Kafka's are); on `pebble`, partition data files open at once (1 descriptor each); others are opened on demand and closed least-recently-used first, so descriptors and mappings stay bounded whatever the partition count. 0 (the default): sized at start from the limits, shared among the log dirs (a store of another backend that a topic opens in a log dir then gets 1000): three quarters of the descriptors `RLIMIT_NOFILE` leaves after 1024 (the rest stays for connections), within what `vm.max_map_count` leaves after 1024 mappings; 14,232 segments under `ulimit -n` 20000, so 10,000 active partitions append to open files. At start the broker raises its soft `RLIMIT_NOFILE` to the hard one and logs the size and what the limits allow",
		codec: intKey(func(c *Config) *int { return &c.LogSegmentOpenFilesMax }, 0, math.MaxInt32)},
	{Name: "log.segment.tail.cache.bytes", Type: TypeLong, Importance: Low, Default: "268435456",
		Doc:   "Sluice's own: the memory per log dir that keeps a copy of the last bytes of each active segment (on `segment`) or partition data file (on `pebble`) whose appends are small (up to 4 KiB each, 16 KiB per file), so that a fetch at the tail (a consumer keeping up, a follower) is a copy from memory rather than a pread(2) of the file; with thousands of partitions each fetch reads a batch or two from each, and those reads were a tenth of the broker's CPU. A file that finds the budget spent is read as before; `0` turns the cache off",
		codec: int64Key(func(c *Config) *int64 { return &c.LogSegmentTailCacheBytes }, 0, math.MaxInt64)},
	{Name: "log.segment.delete.delay.ms", Type: TypeLong, Importance: High, Default: "60000",
		Doc:   "how long bytes that retention, truncation or the cleaner let go of stay on disk before they are removed: on `pebble`, the ranges of its data files are punched out (hole punching) only after it, so a fetch response already handed to a socket by sendfile(2) is not zeroed under a consumer that reads it within the delay; what is not due at a clean stop is recorded and punched a delay after the next start (after a crash, what was let go of since the last clean stop stays allocated until its partition is deleted); on `segment`, deleted segment files are unlinked at once (readers keep an unlinked file's pages)",
		codec: durationKey(func(c *Config) *time.Duration { return &c.LogSegmentDeleteDelay }, time.Millisecond, 0)},
	{Name: "log.flush.offset.checkpoint.interval.ms", Type: TypeInt, Importance: High, Default: "60000",
		Doc:   "how often recovery points (offsets known fsynced) are checkpointed, so a killed broker re-validates only what lies past them; `0`: only at a clean stop",
		codec: durationKey(func(c *Config) *time.Duration { return &c.LogFlushOffsetCheckpointInterval }, time.Millisecond, 0)},
	{Name: "log.flush.interval.messages", Dynamic: ClusterWide, Type: TypeLong, Importance: High, Default: "9223372036854775807", Topic: "flush.messages",
		Doc: "fsync after this many records (1: every append, group-committed); the default, Long.MAX_VALUE, never",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				s.c.LogFlushIntervalMsgs, err = parseInt64(key, v, 1, math.MaxInt64)
				if s.c.LogFlushIntervalMsgs == math.MaxInt64 {
					s.c.LogFlushIntervalMsgs = 0
				}
				return err
			},
			get: func(c *Config) string {
				if c.LogFlushIntervalMsgs <= 0 {
					return strconv.FormatInt(math.MaxInt64, 10)
				}
				return strconv.FormatInt(c.LogFlushIntervalMsgs, 10)
			},
		}},
	{Name: "log.flush.interval.ms", Type: TypeLong, Importance: High, NoDefault: true,
		Doc:   "periodic fsync of every log; unset or `0`: never",
		codec: durationKey(func(c *Config) *time.Duration { return &c.LogFlushInterval }, time.Millisecond, 0)},
	// Tiered storage (KIP-405; package tiered, README "Tiered storage").
	{Name: "remote.log.storage.system.enable", Type: TypeBoolean, Importance: Medium, Default: "false",
		Doc:   "turns tiered storage on for this broker: topics with `remote.storage.enable=true` copy their rolled segments to the remote storage (`rsm.config.*`: the local-directory backend's root is `rsm.config.dir`, by default the first log dir with `-remote` appended) and read them back. Only with `storage.backend=segment`; in a cluster every broker must reach the same remote storage, and the remote log metadata lives in `__remote_log_metadata`",
		codec: boolKey(func(c *Config) *bool { return &c.RemoteLogStorageSystemEnable })},
	{Name: "remote.log.storage.backend", Type: TypeString, Importance: Medium, Default: "localdir",
		Doc: "Sluice's own (Kafka names a class in `remote.log.storage.manager.class.name`): the remote storage of tiered storage, `localdir` (a directory, `rsm.config.dir`; for development) or `s3` (an S3-compatible object store, `rsm.config.storage.s3.*`; docs/tiered-storage.md)",
		codec: codec{
			set: func(s *setter, key, v string) error {
				switch v {
				case "localdir", "s3":
					s.c.RemoteLogStorageBackend = v
					return nil
				}
				return keyError(key, "%q is not localdir or s3", v)
			},
			get: func(c *Config) string { return c.RemoteLogStorageBackend },
		}},
	{Name: "rsm.config.storage.s3.bucket.name", Type: TypeString, Importance: High, NoDefault: true,
		Doc: "Aiven tiered storage's key: the S3 bucket of `remote.log.storage.backend=s3` (required there)", codec: rsmKey(nil)},
	{Name: "rsm.config.storage.s3.region", Type: TypeString, Importance: Medium, Default: "us-east-1",
		Doc: "Aiven tiered storage's key: the bucket's AWS region", codec: rsmKey(nil)},
	{Name: "rsm.config.storage.s3.endpoint.url", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc: "Aiven tiered storage's key: the URL of an S3-compatible store (unset: AWS's endpoint for the region)", codec: rsmKey(nil)},
	{Name: "rsm.config.storage.s3.path.style.access.enabled", Type: TypeBoolean, Importance: Low, Default: "false",
		Doc: "Aiven tiered storage's key: address the bucket in the path (`http://host/bucket/key`), as most S3-compatible stores need, instead of the host name", codec: rsmKey(rsmBool)},
	{Name: "rsm.config.storage.aws.access.key.id", Type: TypePassword, Importance: Medium, NoDefault: true, Sensitive: true,
		Doc: "Aiven tiered storage's key: the access key id (with the secret; unset: the AWS SDK's default credential chain); a password as in Aiven's plugin: never logged or described", codec: rsmKey(nil)},
	{Name: "rsm.config.storage.aws.secret.access.key", Type: TypePassword, Importance: Medium, NoDefault: true, Sensitive: true,
		Doc: "Aiven tiered storage's key: the secret access key; never logged or described", codec: rsmKey(nil)},
	{Name: "rsm.config.key.prefix", Type: TypeString, Importance: Low, NoDefault: true,
		Doc: "Aiven tiered storage's key: prepended to every object key (e.g. `cluster-a/`)", codec: rsmKey(nil)},
	{Name: "rsm.config.storage.s3.multipart.upload.part.size", Type: TypeInt, Importance: Low, Default: "26214400",
		Doc: "Aiven tiered storage's key: the part size of multipart uploads (5 MiB to 5 GiB); a segment up to it is one PutObject", codec: rsmKey(rsmInt(5<<20, math.MaxInt32))},
	{Name: "rsm.config.storage.s3.api.call.timeout", Type: TypeLong, Importance: Low, Default: "60000",
		Doc: "Aiven tiered storage's key: milliseconds one call to the store may take (one PutObject, one part, one ranged GET with its body); past it the call fails and is retried", codec: rsmKey(rsmInt(1, math.MaxInt64))},
	{Name: "log.local.retention.ms", Type: TypeLong, Importance: Medium, Default: "-2", Topic: "local.retention.ms",
		Doc:   "tiered topics: how long a segment stays on local disk once it is remote; -2: the topic's `retention.ms`",
		codec: int64Key(func(c *Config) *int64 { return &c.LogLocalRetentionMs }, -2, math.MaxInt64)},
	{Name: "log.local.retention.bytes", Type: TypeLong, Importance: Medium, Default: "-2", Topic: "local.retention.bytes",
		Doc:   "tiered topics: the most bytes a partition keeps on local disk (only segments already remote are deleted); -2: the topic's `retention.bytes`",
		codec: int64Key(func(c *Config) *int64 { return &c.LogLocalRetentionBytes }, -2, math.MaxInt64)},
	{Name: "remote.log.manager.task.interval.ms", Type: TypeLong, Importance: Low, Default: "30000",
		Doc:   "how often the remote log manager copies each tiered partition's rolled segments, applies local retention and deletes remote segments past the topic's retention",
		codec: durationKey(func(c *Config) *time.Duration { return &c.RemoteLogManagerTaskInterval }, time.Millisecond, 1)},
	{Name: "remote.log.manager.copy.max.bytes.per.second", Type: TypeLong, Importance: Medium, Default: "9223372036854775807",
		Doc:   "the most bytes per second the broker copies to remote storage (Long.MAX_VALUE: no bound)",
		codec: int64Key(func(c *Config) *int64 { return &c.RemoteLogCopyMaxBytesPerSec }, 1, math.MaxInt64)},
	{Name: "remote.log.manager.fetch.max.bytes.per.second", Type: TypeLong, Importance: Medium, Default: "9223372036854775807",
		Doc:   "the most bytes per second the broker reads from remote storage for fetches: past the rate no remote read starts and the partition is answered empty until the quota allows, as Kafka's fetch throttle (Long.MAX_VALUE: no bound)",
		codec: int64Key(func(c *Config) *int64 { return &c.RemoteLogFetchMaxBytesPerSec }, 1, math.MaxInt64)},
	{Name: "remote.log.reader.threads", Type: TypeInt, Importance: Medium, Default: "10",
		Doc:   "remote reads of fetches in progress at once; more wait their turn",
		codec: intKey(func(c *Config) *int { return &c.RemoteLogReaderThreads }, 1, math.MaxInt32)},
	{Name: "remote.fetch.max.wait.ms", Type: TypeInt, Importance: Medium, Default: "500",
		Doc:   "the longest a fetch waits for its remote read (a free reader of `remote.log.reader.threads`, then the read); past it the fetch answers the partition with no records while the read goes on, and the consumer's next fetch gets what it read",
		codec: durationKey(func(c *Config) *time.Duration { return &c.RemoteFetchMaxWait }, time.Millisecond, 1)},
	{Name: "remote.log.index.file.cache.total.size.bytes", Type: TypeLong, Importance: Low, Default: "1073741824",
		Doc:   "bytes of remote offset and transaction indexes and of chunks read from remote segments kept in memory for remote fetches (a consumer that re-reads, or whose fetch stopped waiting for a read, is served from it); the least recently used go first",
		codec: int64Key(func(c *Config) *int64 { return &c.RemoteLogIndexCacheBytes }, 1, math.MaxInt64)},

	{Name: "process.scheduling.policy", Type: TypeString, Importance: Low, Default: "normal",
		Doc: "Sluice's own: the Linux scheduling policy `sluice serve` gives all its threads. `normal` keeps the kernel's default (SCHED_OTHER): a broker thread woken by a request preempts what runs on its core. `batch` (SCHED_BATCH) is the same fair scheduler without wake-up preemption: on a core the broker has to itself, its append of one request and its read of the next take turns at the scheduler tick instead of preempting each other (acks=all produce on one core: up to 14-18% less CPU per GB; a 3-broker cluster on one core: 15% less CPU per GB and 20% more throughput), but on a core shared with other processes every wake-up of the broker waits for theirs to yield (e2e latency at 10,000 records/s on a shared core: p50 3.0 ms under `batch`, 0.9 ms under `normal`; BENCHMARKS.md, \"Produce with franz-go defaults\"). A broker started under a real-time or idle policy (`chrt`) keeps that",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				if s.c.SchedulingPolicy, err = sched.Parse(v); err != nil {
					return keyError(key, "%v", err)
				}
				return nil
			},
			get: func(c *Config) string { return c.SchedulingPolicy.String() },
		}},

	// Records.
	{Name: "message.max.bytes", Dynamic: ClusterWide, Type: TypeInt, Importance: High, Default: "1048588", Topic: "max.message.bytes",
		Doc:   "largest record batch accepted",
		codec: intKey(func(c *Config) *int { return &c.MessageMaxBytes }, 0, math.MaxInt32)},
	{Name: "log.message.timestamp.type", Dynamic: ClusterWide, Type: TypeString, Importance: Medium, Default: "CreateTime", Topic: "message.timestamp.type",
		Doc: "`CreateTime` or `LogAppendTime`",
		codec: codec{
			set: func(s *setter, key, v string) error {
				s.c.MessageTimestampType = v
				if v != "CreateTime" && v != "LogAppendTime" {
					return keyError(key, "%q is not CreateTime or LogAppendTime", v)
				}
				return nil
			},
			get: func(c *Config) string { return c.MessageTimestampType },
		}},
	{Name: "log.message.timestamp.difference.max.ms", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "9223372036854775807", Topic: "message.timestamp.difference.max.ms",
		Doc:   "deprecated in Kafka: how far (ms) a CreateTime timestamp may lie from the broker's clock, where the before/after keys are left at their default (INVALID_TIMESTAMP past it)",
		codec: int64Key(func(c *Config) *int64 { return &c.MessageTimestampDifferenceMax }, 0, math.MaxInt64)},
	{Name: "log.message.timestamp.before.max.ms", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "9223372036854775807", Topic: "message.timestamp.before.max.ms",
		Doc:   "how far (ms) a CreateTime timestamp may lie before the broker's clock",
		codec: int64Key(func(c *Config) *int64 { return &c.MessageTimestampBeforeMax }, 0, math.MaxInt64)},
	{Name: "log.message.timestamp.after.max.ms", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "9223372036854775807", Topic: "message.timestamp.after.max.ms",
		Doc:   "how far (ms) a CreateTime timestamp may lie after the broker's clock",
		codec: int64Key(func(c *Config) *int64 { return &c.MessageTimestampAfterMax }, 0, math.MaxInt64)},

	// Log cleaning.
	{Name: "log.cleanup.policy", Dynamic: ClusterWide, Type: TypeList, Importance: Medium, Default: "delete", Topic: "cleanup.policy",
		Doc: "topics' default `cleanup.policy`: `delete`, `compact` or `compact,delete` (see Log compaction)",
		codec: codec{
			set: func(s *setter, key, v string) error {
				var err error
				if s.c.LogCleanupPolicy, err = ParseCleanupPolicy(v); err != nil {
					return keyError(key, "%v", err)
				}
				return nil
			},
			get: func(c *Config) string { return c.LogCleanupPolicy.String() },
		}},
	{Name: "log.cleaner.enable", Type: TypeBoolean, Importance: Medium, Default: "true",
		Doc:   "run the log cleaner",
		codec: boolKey(func(c *Config) *bool { return &c.LogCleanerEnable })},
	{Name: "log.cleaner.threads", Dynamic: ClusterWide, Type: TypeInt, Importance: Medium, Default: "1",
		Doc:   "cleaner threads (`0`: none)",
		codec: intKey(func(c *Config) *int { return &c.LogCleanerThreads }, 0, math.MaxInt32)},
	{Name: "log.cleaner.dedupe.buffer.size", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "134217728",
		Doc:   "memory of the cleaners' key maps, all threads together; bounds one pass, not what can be cleaned",
		codec: int64Key(func(c *Config) *int64 { return &c.LogCleanerDedupeBufferSize }, 1, math.MaxInt64)},
	{Name: "log.cleaner.io.max.bytes.per.second", Dynamic: ClusterWide, Type: TypeDouble, Importance: Medium, Default: "1.7976931348623157E308",
		Doc:   "cleaners' read plus write rate; the default, Kafka's `Double.MAX_VALUE`, is unbounded",
		codec: floatKey(func(c *Config) *float64 { return &c.LogCleanerIOMaxBytesPerSecond }, math.SmallestNonzeroFloat64, math.MaxFloat64)},
	{Name: "log.cleaner.backoff.ms", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "15000",
		Doc:   "cleaner sleep when no log needs cleaning",
		codec: durationKey(func(c *Config) *time.Duration { return &c.LogCleanerBackoff }, time.Millisecond, 0)},
	{Name: "log.cleaner.delete.retention.ms", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "86400000", Topic: "delete.retention.ms",
		Doc:   "topics' default `delete.retention.ms`: how long a tombstone stays after its segment was cleaned (1 day)",
		codec: int64Key(func(c *Config) *int64 { return &c.LogCleanerDeleteRetentionMs }, 0, math.MaxInt64)},
	{Name: "log.cleaner.min.cleanable.ratio", Dynamic: ClusterWide, Type: TypeDouble, Importance: Medium, Default: "0.5", Topic: "min.cleanable.dirty.ratio",
		Doc:   "topics' default `min.cleanable.dirty.ratio`, in [0, 1]: dirty share of a log before it is cleaned",
		codec: floatKey(func(c *Config) *float64 { return &c.LogCleanerMinCleanableRatio }, 0, 1)},
	{Name: "log.cleaner.min.compaction.lag.ms", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "0", Topic: "min.compaction.lag.ms",
		Doc:   "topics' default `min.compaction.lag.ms`: a record stays uncompacted at least this long",
		codec: int64Key(func(c *Config) *int64 { return &c.LogCleanerMinCompactionLagMs }, 0, math.MaxInt64)},
	{Name: "log.cleaner.max.compaction.lag.ms", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "9223372036854775807", Topic: "max.compaction.lag.ms",
		Doc:   "topics' default `max.compaction.lag.ms`: a record is compacted by then even below the dirty ratio; at least the min (the default is no bound)",
		codec: int64Key(func(c *Config) *int64 { return &c.LogCleanerMaxCompactionLagMs }, 1, math.MaxInt64)},

	// Requests and connections.
	{Name: "socket.request.max.bytes", Type: TypeInt, Importance: High, Default: "104857600",
		Doc:   "larger request frames close the connection before any allocation",
		codec: int32Key(func(c *Config) *int32 { return &c.SocketRequestMaxBytes }, 1, math.MaxInt32)},
	{Name: "connections.max.idle.ms", Type: TypeLong, Importance: Medium, Default: "600000",
		Doc:   "idle connections are closed",
		codec: durationKey(func(c *Config) *time.Duration { return &c.ConnectionsMaxIdle }, time.Millisecond, 1)},
	{Name: "queued.max.request.bytes", Type: TypeLong, Importance: Medium, Default: "268435456",
		Doc: "broker-wide bytes of requests being read or waiting to be handled (256 MiB; Kafka: `-1`, unbounded); a frame's buffer grows as its bytes arrive (not from its size prefix), and a connection that finds the pool full stops reading until bytes are freed. An eighth is kept for requests of at most 64 KiB (heartbeats, fetches, small produces), so they are still read while large ones fill the rest. Must be at least `socket.request.max.bytes`; `-1` or `0`: unbounded. Sluice deviates from Kafka's default so that thousands of slow or hostile connections announcing large frames cannot exhaust memory: the pool bounds the request bytes held. A frame larger than its connection's previous one is read outside the Go heap and given back to the kernel when its read ends, so 40 connections trickling 100 MiB frames raise RSS by about the pool and no more (BENCHMARKS.md, Request memory)",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				s.c.QueuedMaxRequestBytes, err = parseInt64(key, v, math.MinInt64, math.MaxInt64)
				if s.c.QueuedMaxRequestBytes <= 0 {
					s.c.QueuedMaxRequestBytes = -1 // Kafka: any value <= 0 is unbounded
				}
				return err
			},
			get: func(c *Config) string { return strconv.FormatInt(c.QueuedMaxRequestBytes, 10) },
		}},
	{Name: "request.read.timeout.ms", Type: TypeLong, Importance: Medium, Default: "30000",
		Doc:   "Sluice's own: a request must arrive whole within this time of its first byte, waits for request memory included, or the connection is closed and its bytes freed (a client announcing a large frame and trickling it). `connections.max.idle.ms` still bounds the wait for a request to begin",
		codec: durationKey(func(c *Config) *time.Duration { return &c.RequestReadTimeout }, time.Millisecond, 1)},
	{Name: "max.connection.creation.rate", Dynamic: ClusterWide, Type: TypeInt, Importance: Medium, Default: "2147483647",
		Doc:   "as Kafka (KIP-612): new connections per second the broker accepts; above it, accepting is delayed (a burst of one second's worth passes at once). `listener.name.<listener>.max.connection.creation.rate` limits one listener too; the inter-broker and control-plane listeners are delayed only by their own",
		codec: int32Key(func(c *Config) *int32 { return &c.MaxConnectionCreationRate }, 0, math.MaxInt32)},
	{Name: "max.connections", Dynamic: ClusterWide, Type: TypeInt, Importance: Medium, Default: "2147483647",
		Doc:   "as Kafka: at the limit the broker stops accepting, and new connections wait in the listen backlog until one closes. `listener.name.<listener>.max.connections` limits one listener too. With more than one listener, the inter-broker and control-plane listeners' connections count toward this limit but are never held back by it (Kafka protects only the inter-broker one)",
		codec: int32Key(func(c *Config) *int32 { return &c.MaxConnections }, 0, math.MaxInt32)},
	{Name: "max.connections.per.ip", Dynamic: ClusterWide, Type: TypeInt, Importance: Medium, Default: "2147483647",
		Doc:   "as Kafka: a connection from an address at its limit is closed as it is accepted; `0` only with overrides",
		codec: int32Key(func(c *Config) *int32 { return &c.MaxConnectionsPerIP }, 0, math.MaxInt32)},
	{Name: "max.connections.per.ip.overrides", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc: "as Kafka: `host:count,...`, host an IP address or a name (resolved once at start)",
		codec: codec{
			set: func(s *setter, key, v string) (err error) {
				s.c.MaxConnectionsPerIPOverrides, err = parseHostCounts(key, v)
				return err
			},
			get: func(c *Config) string {
				return mapString(c.MaxConnectionsPerIPOverrides, ":", func(n int32) string { return strconv.Itoa(int(n)) })
			},
		}},
	{Name: "max.incremental.fetch.session.cache.slots", Type: TypeInt, Importance: Medium, Default: "1000",
		Doc:   "how many incremental fetch sessions (KIP-227) the broker keeps, for consumers and followers; when full, a new session evicts one idle for 120 s or, by Kafka's rules, a smaller one (a follower's may evict a consumer's); all sessions together hold at most 1,048,576 partitions (a full fetch that does not fit gets no session, an incremental one that would pass it loses its session); `0` turns sessions off and every fetch is a full one",
		codec: int32Key(func(c *Config) *int32 { return &c.FetchSessionCacheSlots }, 0, math.MaxInt32)},
	{Name: "quota.window.num", Type: TypeInt, Importance: Low, Default: "11",
		Doc:   "as Kafka: the number of samples kept for client quotas (`producer_byte_rate`, `consumer_byte_rate`, `request_percentage`; see Quotas)",
		codec: int32Key(func(c *Config) *int32 { return &c.QuotaWindowNum }, 1, math.MaxInt32)},
	{Name: "quota.window.size.seconds", Type: TypeInt, Importance: Low, Default: "1",
		Doc:   "as Kafka: the time span of each client quota sample",
		codec: int32Key(func(c *Config) *int32 { return &c.QuotaWindowSizeSeconds }, 1, math.MaxInt32)},
	{Name: "controller.quota.window.num", Type: TypeInt, Importance: Low, Default: "11",
		Doc:   "as Kafka: the number of samples kept for `controller_mutation_rate` quotas (the token bucket's burst is `(num - 1) × size × rate`)",
		codec: int32Key(func(c *Config) *int32 { return &c.ControllerQuotaWindowNum }, 1, math.MaxInt32)},
	{Name: "controller.quota.window.size.seconds", Type: TypeInt, Importance: Low, Default: "1",
		Doc:   "as Kafka: the time span of each `controller_mutation_rate` sample",
		codec: int32Key(func(c *Config) *int32 { return &c.ControllerQuotaWindowSizeSeconds }, 1, math.MaxInt32)},
	{Name: "replication.quota.window.num", Type: TypeInt, Importance: Low, Default: "11",
		Doc:   "as Kafka: the number of samples kept for replication throttles (`leader.replication.throttled.rate`, `follower.replication.throttled.rate`)",
		codec: int32Key(func(c *Config) *int32 { return &c.ReplicationQuotaWindowNum }, 1, math.MaxInt32)},
	{Name: "replication.quota.window.size.seconds", Type: TypeInt, Importance: Low, Default: "1",
		Doc:   "as Kafka: the time span of each replication throttle sample",
		codec: int32Key(func(c *Config) *int32 { return &c.ReplicationQuotaWindowSizeSeconds }, 1, math.MaxInt32)},
	{Name: "metrics.partition.series.max", Type: TypeInt, Importance: Low, Default: "10000",
		Doc:   "Sluice's own: above this many local partitions the `kafka_log_log_*` series, and above this many committed offsets (group × partition) the per-partition consumer-lag series, are not exported (`0`: never)",
		codec: intKey(func(c *Config) *int { return &c.MetricsPartitionSeriesMax }, 0, math.MaxInt32)},

	// Security.
	{Name: "sasl.enabled.mechanisms", Type: TypeList, Importance: Medium, Default: "GSSAPI",
		Doc: "the SASL mechanisms SASL listeners offer (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); `listener.name.<listener>.sasl.enabled.mechanisms` per listener",
		codec: codec{
			set: func(s *setter, key, v string) error { s.c.SASLEnabledMechanisms = upperList(v); return nil },
			get: listString(func(c *Config) []string { return c.SASLEnabledMechanisms }),
		}},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: TypeString, Importance: Medium, Default: "GSSAPI",
		Doc:   "cluster mode: the SASL mechanism a broker logs in to the others with, using the `username` and `password` of its listener's JAAS entry for that mechanism",
		codec: stringKey(func(c *Config) *string { return &c.SASLInterBrokerMechanism }, true)},
	{Name: "sasl.server.max.receive.size", Type: TypeInt, Importance: Low, Default: "524288",
		Doc:   "largest frame read before a SASL connection is authenticated",
		codec: int32Key(func(c *Config) *int32 { return &c.SASLServerMaxReceiveSize }, 1, math.MaxInt32)},
	{Name: "sasl.jaas.config", Type: TypePassword, Importance: Medium, NoDefault: true, Sensitive: true,
		Doc:   "JAAS login entries (PLAIN users as `user_<name>=\"password\"`, this broker's own `username` and `password`), for listeners without `listener.name.<listener>.<mechanism>.sasl.jaas.config`",
		codec: securityKey()},
	{Name: "connections.max.reauth.ms", Type: TypeLong, Importance: Medium, Default: "0",
		Doc:   "KIP-368: a SASL session must re-authenticate within this; `0`: never",
		codec: durationKey(func(c *Config) *time.Duration { return &c.ConnectionsMaxReauth }, time.Millisecond, 0)},
	{Name: "connections.authentication.timeout.ms", Type: TypeLong, Importance: Medium, Default: "10000",
		Doc:   "Sluice's own (Kafka has no broker key for it): a connection must finish its TLS handshake (SSL, SASL_SSL) and its SASL authentication (SASL_*) within this time of being accepted, or it is closed; until then it holds one of `max.connections`. `connections.max.idle.ms` applies after it; re-authentication (`connections.max.reauth.ms`) is not bounded by it. `0`: no bound",
		codec: durationKey(func(c *Config) *time.Duration { return &c.ConnectionsAuthenticationTimeout }, time.Millisecond, 0)},
	{Name: "connection.failed.authentication.delay.ms", Type: TypeInt, Importance: Low, Default: "100",
		Doc:   "how long a failed authentication waits before it is answered",
		codec: durationKey(func(c *Config) *time.Duration { return &c.FailedAuthenticationDelay }, time.Millisecond, 0)},
	{Name: "max.failed.authentications.per.ip", Type: TypeInt, Importance: Medium, Default: "10",
		Doc:   "Sluice's own (Kafka has no such limit): how many logins one client address (an IPv4 address, or an IPv6 /64) may fail at once, SASL on the Kafka listeners and basic auth on the HTTP side counted together; past it, its logins are refused without their password being checked (SASL_AUTHENTICATION_FAILED, HTTP 429 with `Retry-After`) until `failed.authentications.per.ip.window.ms` gives one back (a token bucket: at most this many more per window). Successful logins spend nothing. At most 16,384 addresses are tracked, the one whose last login is oldest forgotten first. `0`: no limit",
		codec: int32Key(func(c *Config) *int32 { return &c.MaxFailedAuthenticationsPerIP }, 0, math.MaxInt32)},
	{Name: "failed.authentications.per.ip.window.ms", Type: TypeLong, Importance: Medium, Default: "60000",
		Doc:   "Sluice's own: the span over which an address gets `max.failed.authentications.per.ip` more failed logins (one back every window/max)",
		codec: durationKey(func(c *Config) *time.Duration { return &c.FailedAuthenticationsWindow }, time.Millisecond, 1)},
	{Name: "ssl.keystore.type", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc: "`PEM` (the only type read; unset means PEM)", codec: securityKey()},
	{Name: "ssl.keystore.location", Type: TypeString, Importance: High, NoDefault: true,
		Doc: "PEM file with the private key and the certificate chain, leaf first", codec: securityKey()},
	{Name: "ssl.keystore.key", Type: TypePassword, Importance: High, NoDefault: true, Sensitive: true,
		Doc: "the private key as inline PEM text, instead of `ssl.keystore.location`", codec: securityKey()},
	{Name: "ssl.keystore.certificate.chain", Type: TypePassword, Importance: High, NoDefault: true, Sensitive: true,
		Doc: "the certificate chain as inline PEM text, with `ssl.keystore.key`", codec: securityKey()},
	{Name: "ssl.keystore.password", Type: TypePassword, Importance: High, NoDefault: true, Sensitive: true,
		Doc: "refused: a PEM keystore has no store password (use `ssl.key.password`)", codec: securityKey()},
	{Name: "ssl.key.password", Type: TypePassword, Importance: High, NoDefault: true, Sensitive: true,
		Doc: "decrypts an encrypted PKCS#8 private key", codec: securityKey()},
	{Name: "ssl.truststore.type", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc: "`PEM` (the only type read; unset means PEM)", codec: securityKey()},
	{Name: "ssl.truststore.location", Type: TypeString, Importance: High, NoDefault: true,
		Doc: "PEM file of the CAs client certificates must chain to", codec: securityKey()},
	{Name: "ssl.truststore.certificates", Type: TypePassword, Importance: High, NoDefault: true, Sensitive: true,
		Doc: "the CAs as inline PEM text, instead of `ssl.truststore.location`", codec: securityKey()},
	{Name: "ssl.truststore.password", Type: TypePassword, Importance: High, NoDefault: true, Sensitive: true,
		Doc: "refused: a PEM truststore has no password", codec: securityKey()},
	{Name: "ssl.client.auth", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc: "`none` (unset), `requested` or `required`: whether clients present certificates (principal `User:<subject>` mapped by `ssl.principal.mapping.rules`)", codec: securityKey()},
	{Name: "ssl.enabled.protocols", Type: TypeList, Importance: Medium, NoDefault: true,
		Doc: "TLS versions accepted; unset: `TLSv1.2,TLSv1.3`", codec: securityKey()},
	{Name: "ssl.cipher.suites", Type: TypeList, Importance: Low, NoDefault: true,
		Doc: "TLS 1.2 cipher suites; unset: Go's defaults (TLS 1.3 suites are all three or none)", codec: securityKey()},
	{Name: "ssl.principal.mapping.rules", Type: TypeString, Importance: Low, NoDefault: true,
		Doc: "Kafka's `RULE:pattern/replacement/[LU]` rules from a certificate's subject to a principal name; unset: `DEFAULT`", codec: securityKey()},

	// Authorization.
	{Name: "authorizer.class.name", Type: TypeString, Importance: Low, Default: "",
		Doc: "`kafka.security.authorizer.AclAuthorizer` (or its alias `sluice`) turns ACLs on; empty: none",
		codec: codec{
			set: func(s *setter, key, v string) error {
				switch strings.TrimSpace(v) {
				case "", "sluice", "kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer":
					s.c.AuthorizerClassName = strings.TrimSpace(v)
					return nil
				}
				return keyError(key, "%q: use kafka.security.authorizer.AclAuthorizer (or its alias sluice), or leave it empty for none", v)
			},
			get: func(c *Config) string { return c.AuthorizerClassName },
		}},
	{Name: "super.users", Type: TypeString, Importance: Low, NoDefault: true,
		Doc: "principals allowed everything, `User:a;User:b`",
		codec: codec{
			set: func(s *setter, key, v string) error {
				s.c.SuperUsers = nil
				for _, u := range strings.Split(v, ";") {
					if u = strings.TrimSpace(u); u != "" {
						s.c.SuperUsers = append(s.c.SuperUsers, u)
					}
				}
				return nil
			},
			get: func(c *Config) string { return strings.Join(c.SuperUsers, ";") },
		}},
	{Name: "allow.everyone.if.no.acl.found", Type: TypeBoolean, Importance: Low, Default: "false",
		Doc:   "with ACLs on, a resource without ACLs is open to everyone",
		codec: boolKey(func(c *Config) *bool { return &c.AllowEveryoneIfNoACL })},

	// Groups and offsets.
	{Name: "group.initial.rebalance.delay.ms", Type: TypeInt, Importance: Medium, Default: "3000",
		Doc:   "wait for more members before a new group's first rebalance",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupInitialRebalanceDelay }, time.Millisecond, 0)},
	{Name: "group.min.session.timeout.ms", Type: TypeInt, Importance: Medium, Default: "6000",
		Doc:   "shortest consumer session timeout allowed",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupMinSessionTimeout }, time.Millisecond, 0)},
	{Name: "group.max.session.timeout.ms", Type: TypeInt, Importance: Medium, Default: "1800000",
		Doc:   "longest consumer session timeout allowed",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupMaxSessionTimeout }, time.Millisecond, 0)},
	{Name: "group.coordinator.rebalance.protocols", Type: TypeList, Importance: Medium, Default: "classic,consumer",
		Doc: "group protocols served: `classic` (JoinGroup/SyncGroup) and `consumer` (KIP-848 ConsumerGroupHeartbeat); `classic` is required",
		codec: codec{
			set: func(s *setter, key, v string) error {
				s.c.GroupRebalanceProtocols = nil
				for _, p := range strings.Split(v, ",") {
					switch p = strings.TrimSpace(strings.ToLower(p)); p {
					case "":
					case "classic", "consumer":
						s.c.GroupRebalanceProtocols = append(s.c.GroupRebalanceProtocols, p)
					default:
						return keyError(key, "%q is not one of classic, consumer", p)
					}
				}
				if !slices.Contains(s.c.GroupRebalanceProtocols, "classic") {
					return keyError(key, "must contain classic")
				}
				return nil
			},
			get: func(c *Config) string { return strings.Join(c.GroupRebalanceProtocols, ",") },
		}},
	{Name: "group.consumer.heartbeat.interval.ms", Type: TypeInt, Importance: Medium, Default: "5000",
		Doc:   "consumer groups (KIP-848): how often members heartbeat",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupConsumerHeartbeatInterval }, time.Millisecond, 1)},
	{Name: "group.consumer.min.heartbeat.interval.ms", Type: TypeInt, Importance: Medium, Default: "5000",
		Doc:   "consumer groups: lower bound of `group.consumer.heartbeat.interval.ms`",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupConsumerMinHeartbeatInterval }, time.Millisecond, 1)},
	{Name: "group.consumer.max.heartbeat.interval.ms", Type: TypeInt, Importance: Medium, Default: "15000",
		Doc:   "consumer groups: upper bound of `group.consumer.heartbeat.interval.ms`",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupConsumerMaxHeartbeatInterval }, time.Millisecond, 1)},
	{Name: "group.consumer.session.timeout.ms", Type: TypeInt, Importance: Medium, Default: "45000",
		Doc:   "consumer groups: a member silent this long is removed",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupConsumerSessionTimeout }, time.Millisecond, 1)},
	{Name: "group.consumer.min.session.timeout.ms", Type: TypeInt, Importance: Medium, Default: "45000",
		Doc:   "consumer groups: lower bound of `group.consumer.session.timeout.ms`",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupConsumerMinSessionTimeout }, time.Millisecond, 1)},
	{Name: "group.consumer.max.session.timeout.ms", Type: TypeInt, Importance: Medium, Default: "60000",
		Doc:   "consumer groups: upper bound of `group.consumer.session.timeout.ms`",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupConsumerMaxSessionTimeout }, time.Millisecond, 1)},
	{Name: "group.consumer.max.size", Type: TypeInt, Importance: Medium, Default: "2147483647",
		Doc:   "consumer groups: most members a group may have (GROUP_MAX_SIZE_REACHED beyond)",
		codec: intKey(func(c *Config) *int { return &c.GroupConsumerMaxSize }, 1, math.MaxInt32)},
	{Name: "group.consumer.assignors", Type: TypeList, Importance: Medium, Default: "uniform,range",
		Doc: "consumer groups: server-side assignors (`uniform`, `range`, or Kafka's class names); the first is the default",
		codec: codec{
			set: func(s *setter, key, v string) error {
				s.c.GroupConsumerAssignors = nil
				for _, a := range strings.Split(v, ",") {
					switch a = strings.TrimSpace(a); a {
					case "":
					case "uniform", "org.apache.kafka.coordinator.group.assignor.UniformAssignor":
						s.c.GroupConsumerAssignors = append(s.c.GroupConsumerAssignors, "uniform")
					case "range", "org.apache.kafka.coordinator.group.assignor.RangeAssignor":
						s.c.GroupConsumerAssignors = append(s.c.GroupConsumerAssignors, "range")
					default:
						return keyError(key, "%q is not an assignor: uniform, range", a)
					}
				}
				if len(s.c.GroupConsumerAssignors) == 0 {
					return keyError(key, "needs at least one assignor")
				}
				return nil
			},
			get: func(c *Config) string { return strings.Join(c.GroupConsumerAssignors, ",") },
		}},
	{Name: "group.consumer.migration.policy", Type: TypeString, Importance: Medium, Default: "bidirectional",
		Doc: "online migration between classic and consumer (KIP-848) groups: `bidirectional`, `upgrade` (classic to consumer only), `downgrade` (consumer to classic only) or `disabled`",
		codec: codec{
			set: func(s *setter, key, v string) error {
				switch v = strings.ToLower(strings.TrimSpace(v)); v {
				case "bidirectional", "upgrade", "downgrade", "disabled":
					s.c.GroupConsumerMigrationPolicy = v
					return nil
				}
				return keyError(key, "%q is not one of bidirectional, upgrade, downgrade, disabled", v)
			},
			get: func(c *Config) string { return c.GroupConsumerMigrationPolicy },
		}},
	{Name: "group.share.enable", Type: TypeBoolean, Importance: Medium, Default: "false",
		Doc:   "share groups (KIP-932): serve ShareGroupHeartbeat and ShareGroupDescribe (Kafka 4.2's internal key; Kafka enables them with the `share.version` feature)",
		codec: boolKey(func(c *Config) *bool { return &c.GroupShare.Enable })},
	{Name: "group.share.heartbeat.interval.ms", Type: TypeInt, Importance: Medium, Default: "5000",
		Doc:   "share groups: how often members heartbeat",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupShare.HeartbeatInterval }, time.Millisecond, 1)},
	{Name: "group.share.min.heartbeat.interval.ms", Type: TypeInt, Importance: Medium, Default: "5000",
		Doc:   "share groups: lower bound of `group.share.heartbeat.interval.ms`",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupShare.MinHeartbeatInterval }, time.Millisecond, 1)},
	{Name: "group.share.max.heartbeat.interval.ms", Type: TypeInt, Importance: Medium, Default: "15000",
		Doc:   "share groups: upper bound of `group.share.heartbeat.interval.ms`",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupShare.MaxHeartbeatInterval }, time.Millisecond, 1)},
	{Name: "group.share.session.timeout.ms", Type: TypeInt, Importance: Medium, Default: "45000",
		Doc:   "share groups: a member silent this long is removed",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupShare.SessionTimeout }, time.Millisecond, 1)},
	{Name: "group.share.min.session.timeout.ms", Type: TypeInt, Importance: Medium, Default: "45000",
		Doc:   "share groups: lower bound of `group.share.session.timeout.ms`",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupShare.MinSessionTimeout }, time.Millisecond, 1)},
	{Name: "group.share.max.session.timeout.ms", Type: TypeInt, Importance: Medium, Default: "60000",
		Doc:   "share groups: upper bound of `group.share.session.timeout.ms`",
		codec: durationKey(func(c *Config) *time.Duration { return &c.GroupShare.MaxSessionTimeout }, time.Millisecond, 1)},
	{Name: "group.share.max.size", Type: TypeInt, Importance: Medium, Default: "200",
		Doc:   "share groups: most members a group may have (GROUP_MAX_SIZE_REACHED beyond)",
		codec: intKey(func(c *Config) *int { return &c.GroupShare.MaxSize }, 1, 1000)},
	{Name: "group.share.assignors", Type: TypeList, Importance: Medium, Default: "simple",
		Doc: "share groups: the server-side assignor, exactly one: `simple` (or Kafka's class name)",
		codec: codec{
			set: func(s *setter, key, v string) error {
				n := 0
				for _, a := range strings.Split(v, ",") {
					switch a = strings.TrimSpace(a); a {
					case "":
					case "simple", "org.apache.kafka.coordinator.group.assignor.SimpleAssignor":
						n++
					default:
						return keyError(key, "%q is not a share group assignor: simple", a)
					}
				}
				if n != 1 {
					return keyError(key, "must contain exactly one assignor, but found %d", n)
				}
				return nil
			},
			get: func(*Config) string { return "simple" },
		}},
	{Name: "group.share.record.lock.duration.ms", Type: TypeInt, Importance: Medium, Default: "30000",
		Doc:   "share groups: how long a delivered record stays acquired by its consumer",
		codec: intKey(func(c *Config) *int { return &c.GroupShare.RecordLockDurationMs }, 1000, 3600000)},
	{Name: "group.share.min.record.lock.duration.ms", Type: TypeInt, Importance: Medium, Default: "15000",
		Doc:   "share groups: lower bound of a group's `share.record.lock.duration.ms`",
		codec: intKey(func(c *Config) *int { return &c.GroupShare.MinRecordLockDurationMs }, 1000, 30000)},
	{Name: "group.share.max.record.lock.duration.ms", Type: TypeInt, Importance: Medium, Default: "60000",
		Doc:   "share groups: upper bound of a group's `share.record.lock.duration.ms`",
		codec: intKey(func(c *Config) *int { return &c.GroupShare.MaxRecordLockDurationMs }, 30000, 3600000)},
	{Name: "group.share.delivery.count.limit", Type: TypeInt, Importance: Medium, Default: "5",
		Doc:   "share groups: deliveries of a record before it is archived",
		codec: intKey(func(c *Config) *int { return &c.GroupShare.DeliveryCountLimit }, 2, 10)},
	{Name: "group.share.partition.max.record.locks", Type: TypeInt, Importance: Medium, Default: "2000",
		Doc:   "share groups: most records in flight (acquired) per share-partition",
		codec: intKey(func(c *Config) *int { return &c.GroupShare.PartitionMaxRecordLocks }, 100, 10000)},
	{Name: "errors.deadletterqueue.auto.create.topics.enable", Type: TypeBoolean, Importance: Medium, Default: "false",
		Doc:   "share groups (KIP-1191): create a group's dead-letter topic when missing; otherwise dead letters to a missing topic are skipped with a warning",
		codec: boolKey(func(c *Config) *bool { return &c.GroupShare.DLQAutoCreateTopics })},
	{Name: "errors.deadletterqueue.topic.name.prefix", Type: TypeString, Importance: Medium, Default: "dlq.",
		Doc:   "share groups (KIP-1191): the prefix every group's `errors.deadletterqueue.topic.name` must start with",
		codec: stringKey(func(c *Config) *string { return &c.GroupShare.DLQTopicNamePrefix }, false)},
	{Name: "share.coordinator.state.topic.num.partitions", Type: TypeInt, Importance: High, Default: "50",
		Doc:   "share groups: `__share_group_state`' partitions (the share coordinator's; created at a group's first share partition)",
		codec: int32Key(func(c *Config) *int32 { return &c.GroupShare.StateTopicPartitions }, 1, 100000)},
	{Name: "share.coordinator.state.topic.replication.factor", Type: TypeShort, Importance: High, Default: "3",
		Doc:   "cluster mode: `__share_group_state` is not created while fewer brokers are live (as Kafka); single-node: 1",
		codec: int16Key(func(c *Config) *int16 { return &c.GroupShare.StateTopicReplication }, 1, math.MaxInt16)},
	{Name: "share.coordinator.state.topic.min.isr", Type: TypeShort, Importance: High, Default: "2",
		Doc:   "cluster mode: `__share_group_state`' `min.insync.replicas`",
		codec: intKey(func(c *Config) *int { return &c.GroupShare.StateTopicMinISR }, 1, math.MaxInt16)},
	{Name: "offsets.retention.minutes", Type: TypeInt, Importance: High, Default: "10080",
		Doc:   "committed offsets of empty groups expire after this",
		codec: durationKey(func(c *Config) *time.Duration { return &c.OffsetsRetention }, time.Minute, 1)},
	{Name: "offsets.topic.num.partitions", Type: TypeInt, Importance: High, Default: "50",
		Doc:   "`__consumer_offsets`' partitions",
		codec: int32Key(func(c *Config) *int32 { return &c.OffsetsTopicPartitions }, 1, 100000)},
	{Name: "offsets.topic.segment.bytes", Type: TypeInt, Importance: High, Default: "104857600",
		Doc:   "`__consumer_offsets`' `segment.bytes` (the topic is compacted)",
		codec: int32Key(func(c *Config) *int32 { return &c.OffsetsTopicSegmentBytes }, 1, math.MaxInt32)},
	{Name: "offsets.topic.replication.factor", Type: TypeShort, Importance: High, Default: "3",
		Doc:   "cluster mode: `__consumer_offsets`' replication factor",
		codec: int16Key(func(c *Config) *int16 { return &c.OffsetsTopicReplication }, 1, math.MaxInt16)},
	{Name: "producer.id.expiration.ms", Type: TypeInt, Importance: Low, Default: "86400000",
		Doc:   "an idempotent producer idle this long is forgotten by a partition (1 day)",
		codec: durationKey(func(c *Config) *time.Duration { return &c.ProducerIDExpiration }, time.Millisecond, 1)},

	// Transactions.
	{Name: "transaction.state.log.num.partitions", Type: TypeInt, Importance: High, Default: "50",
		Doc:   "`__transaction_state`' partitions (compacted; created at the first transactional client, in single-node mode too)",
		codec: int32Key(func(c *Config) *int32 { return &c.TransactionStatePartitions }, 1, 100000)},
	{Name: "transaction.state.log.segment.bytes", Type: TypeInt, Importance: High, Default: "104857600",
		Doc:   "`__transaction_state`' `segment.bytes`",
		codec: int32Key(func(c *Config) *int32 { return &c.TransactionStateSegmentBytes }, 1, math.MaxInt32)},
	{Name: "transaction.state.log.replication.factor", Type: TypeShort, Importance: High, Default: "3",
		Doc:   "cluster mode: `__transaction_state` is not created while fewer brokers are live (as Kafka); single-node: 1",
		codec: int16Key(func(c *Config) *int16 { return &c.TransactionStateReplication }, 1, math.MaxInt16)},
	{Name: "transaction.state.log.min.isr", Type: TypeInt, Importance: High, Default: "2",
		Doc:   "cluster mode: `__transaction_state`' `min.insync.replicas`",
		codec: intKey(func(c *Config) *int { return &c.TransactionStateMinISR }, 1, math.MaxInt16)},
	{Name: "transaction.max.timeout.ms", Type: TypeInt, Importance: High, Default: "900000",
		Doc:   "a larger `transaction.timeout.ms` is refused (INVALID_TRANSACTION_TIMEOUT)",
		codec: durationKey(func(c *Config) *time.Duration { return &c.TransactionMaxTimeout }, time.Millisecond, 1)},
	{Name: "transactional.id.expiration.ms", Type: TypeInt, Importance: High, Default: "604800000",
		Doc:   "a transactional id without a transaction, idle this long, is forgotten",
		codec: durationKey(func(c *Config) *time.Duration { return &c.TransactionalIDExpiration }, time.Millisecond, 1)},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: TypeInt, Importance: Low, Default: "10000",
		Doc:   "how often timed-out transactions are aborted (their producer fenced)",
		codec: durationKey(func(c *Config) *time.Duration { return &c.TransactionAbortTimedOutInterval }, time.Millisecond, 1)},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: TypeInt, Importance: Low, Default: "3600000",
		Doc:   "how often idle transactional ids are expired",
		codec: durationKey(func(c *Config) *time.Duration { return &c.TransactionRemoveExpiredInterval }, time.Millisecond, 1)},

	// Cluster mode.
	{Name: "zookeeper.connect", Type: TypeString, Importance: High, NoDefault: true,
		Doc:   "unset: single-node mode; set: cluster mode (see Cluster mode)",
		codec: stringKey(func(c *Config) *string { return &c.ZooKeeperConnect }, false)},
	{Name: "zookeeper.session.timeout.ms", Type: TypeInt, Importance: High, Default: "18000",
		Doc:   "how long a dead broker keeps its registration (failover time)",
		codec: durationKey(func(c *Config) *time.Duration { return &c.ZooKeeperSessionTimeout }, time.Millisecond, 1)},
	{Name: "zookeeper.set.acl", Type: TypeBoolean, Importance: High, Default: "false",
		Doc:   "create every znode with Kafka's secure ACLs: all rights for the brokers' identity (`zookeeper.auth.digest` or a TLS client certificate), read for everyone else except `/config/users`, `/config/brokers` and delegation tokens (see Security, ZooKeeper)",
		codec: boolKey(func(c *Config) *bool { return &c.ZooKeeperSetACL })},
	{Name: "zookeeper.auth.digest", Type: TypePassword, Importance: Medium, NoDefault: true, Sensitive: true,
		Doc:   "Sluice's own (Kafka uses a JAAS file): `user:password`, the identity the broker authenticates to ZooKeeper with (digest scheme); the same on every broker",
		codec: stringKey(func(c *Config) *string { return &c.ZooKeeperAuthDigest }, false)},
	{Name: "zookeeper.auth.digest.file", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc:   "Sluice's own: a file whose first line is `user:password`, instead of `zookeeper.auth.digest`",
		codec: stringKey(func(c *Config) *string { return &c.ZooKeeperAuthDigestFile }, false)},
	{Name: "zookeeper.ssl.client.enable", Type: TypeBoolean, Importance: Medium, Default: "false",
		Doc:   "connect to ZooKeeper over TLS (its `secureClientPort`)",
		codec: boolKey(func(c *Config) *bool { return &c.ZooKeeperSSLClientEnable })},
	{Name: "zookeeper.clientCnxnSocket", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc:   "accepted for compatibility with Kafka's server.properties (Kafka needs Netty for TLS); Sluice's client needs no choice",
		codec: codec{set: func(*setter, string, string) error { return nil }}},
	{Name: "zookeeper.ssl.keystore.location", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc:   "PEM file with the private key and certificate chain the broker presents to ZooKeeper (for `ssl.clientAuth=need`)",
		codec: stringKey(func(c *Config) *string { return &c.ZooKeeperSSLKeystoreLocation }, false)},
	{Name: "zookeeper.ssl.keystore.password", Type: TypePassword, Importance: Medium, NoDefault: true, Sensitive: true,
		Doc:   "decrypts the keystore's encrypted PKCS#8 private key, as ZooKeeper's PEM keystores use it",
		codec: stringKey(func(c *Config) *string { return &c.ZooKeeperSSLKeystorePassword }, false)},
	{Name: "zookeeper.ssl.keystore.type", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc:   "`PEM` (the only type read; unset means PEM)",
		codec: pemTypeKey(func(c *Config) *string { return &c.ZooKeeperSSLKeystoreType })},
	{Name: "zookeeper.ssl.truststore.location", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc:   "PEM file of the CAs ZooKeeper's certificate must chain to (unset: the system's)",
		codec: stringKey(func(c *Config) *string { return &c.ZooKeeperSSLTruststoreLocation }, false)},
	{Name: "zookeeper.ssl.truststore.password", Type: TypePassword, Importance: Medium, NoDefault: true, Sensitive: true,
		Doc:   "accepted and unused: a PEM truststore has no password (ZooKeeper ignores it too)",
		codec: stringKey(func(c *Config) *string { return &c.ZooKeeperSSLTruststorePassword }, false)},
	{Name: "zookeeper.ssl.truststore.type", Type: TypeString, Importance: Medium, NoDefault: true,
		Doc:   "`PEM` (the only type read; unset means PEM)",
		codec: pemTypeKey(func(c *Config) *string { return &c.ZooKeeperSSLTruststoreType })},
	{Name: "zookeeper.ssl.endpoint.identification.algorithm", Type: TypeString, Importance: Low, Default: "HTTPS",
		Doc: "`HTTPS`: ZooKeeper's certificate must name the host of `zookeeper.connect`; empty: the chain is still verified, the name is not",
		codec: codec{
			set: func(s *setter, key, v string) error {
				v = strings.TrimSpace(v)
				if v != "" && !strings.EqualFold(v, "HTTPS") {
					return keyError(key, "%q is not HTTPS or empty", v)
				}
				s.c.ZooKeeperSSLEndpointIdentification = strings.ToUpper(v)
				return nil
			},
			get: func(c *Config) string { return c.ZooKeeperSSLEndpointIdentification },
		}},
	{Name: "zookeeper.ssl.protocol", Type: TypeString, Importance: Low, Default: "TLSv1.2",
		Doc: "the TLS version offered to ZooKeeper when `zookeeper.ssl.enabled.protocols` is unset: `TLSv1.2`, `TLSv1.3` or `TLS` (both)",
		codec: codec{
			set: func(s *setter, key, v string) error {
				if _, _, err := zkProtocol(v); err != nil {
					return keyError(key, "%v", err)
				}
				s.c.ZooKeeperSSLProtocol = strings.TrimSpace(v)
				return nil
			},
			get: func(c *Config) string { return c.ZooKeeperSSLProtocol },
		}},
	{Name: "zookeeper.ssl.enabled.protocols", Type: TypeList, Importance: Low, NoDefault: true,
		Doc: "TLS versions offered to ZooKeeper (`TLSv1.2`, `TLSv1.3`); unset: `zookeeper.ssl.protocol`",
		codec: codec{
			set: func(s *setter, key, v string) error {
				if _, _, err := tlsconf.ParseProtocols(v); err != nil {
					return keyError(key, "%v", err)
				}
				s.c.ZooKeeperSSLEnabledProtocols = v
				return nil
			},
			get: func(c *Config) string { return c.ZooKeeperSSLEnabledProtocols },
		}},
	{Name: "zookeeper.ssl.cipher.suites", Type: TypeList, Importance: Low, NoDefault: true,
		Doc: "TLS 1.2 cipher suites offered to ZooKeeper, Java's names (unset: Go's defaults; TLS 1.3 suites all or none, as `ssl.cipher.suites`)",
		codec: codec{
			set: func(s *setter, key, v string) error {
				if _, _, err := tlsconf.ParseCipherSuites(v); err != nil {
					return keyError(key, "%v", err)
				}
				s.c.ZooKeeperSSLCipherSuites = v
				return nil
			},
			get: func(c *Config) string { return c.ZooKeeperSSLCipherSuites },
		}},
	{Name: "zookeeper.ssl.crl.enable", Type: TypeBoolean, Importance: Low, Default: "false",
		Doc: "only `false`: certificate revocation lists are not checked", codec: onlyFalseKey()},
	{Name: "zookeeper.ssl.ocsp.enable", Type: TypeBoolean, Importance: Low, Default: "false",
		Doc: "only `false`: OCSP is not checked", codec: onlyFalseKey()},
	{Name: "zookeeper.max.in.flight.requests", Type: TypeInt, Importance: High, Default: "10",
		Doc: "accepted for compatibility with Kafka's server.properties (an integer); Sluice sizes this itself", codec: ignoredKey()},
	{Name: "controlled.shutdown.enable", Type: TypeBoolean, Importance: Medium, Default: "true",
		Doc:   "on SIGTERM, move leadership away before stopping",
		codec: boolKey(func(c *Config) *bool { return &c.ControlledShutdownEnable })},
	{Name: "auto.leader.rebalance.enable", Type: TypeBoolean, Importance: High, Default: "true",
		Doc:   "the controller moves leadership back to each partition's preferred (first) replica once it is in sync again",
		codec: boolKey(func(c *Config) *bool { return &c.AutoLeaderRebalance })},
	{Name: "leader.imbalance.check.interval.seconds", Type: TypeLong, Importance: High, Default: "300",
		Doc:   "how often the controller checks the leaders' balance",
		codec: durationKey(func(c *Config) *time.Duration { return &c.LeaderImbalanceCheck }, time.Second, 1)},
	{Name: "leader.imbalance.per.broker.percentage", Type: TypeInt, Importance: High, Default: "10",
		Doc:   "leadership is moved back for brokers leading less than (100 - this)% of the partitions they prefer",
		codec: intKey(func(c *Config) *int { return &c.LeaderImbalancePercentage }, 0, 100)},
	{Name: "min.insync.replicas", Dynamic: ClusterWide, Type: TypeInt, Importance: High, Default: "1", Topic: "min.insync.replicas",
		Doc:   "topics' default `min.insync.replicas`: in-sync replicas an acks=all produce needs (NOT_ENOUGH_REPLICAS below it)",
		codec: intKey(func(c *Config) *int { return &c.MinInsyncReplicas }, 1, math.MaxInt16)},
	{Name: "replica.lag.time.max.ms", Type: TypeLong, Importance: High, Default: "30000",
		Doc:   "cluster mode: a follower that has not caught up for this long leaves the ISR",
		codec: durationKey(func(c *Config) *time.Duration { return &c.ReplicaLagTimeMax }, time.Millisecond, 1)},
	{Name: "unclean.leader.election.enable", Dynamic: ClusterWide, Type: TypeBoolean, Importance: High, Default: "false",
		Doc:   "cluster mode: a replica out of the ISR may become leader when no ISR member is live (losing records)",
		codec: boolKey(func(c *Config) *bool { return &c.UncleanLeaderElection })},
	{Name: "replica.fetch.max.bytes", Type: TypeInt, Importance: Medium, Default: "1048576",
		Doc:   "cluster mode: bytes per partition of a follower's fetch (the first batch is sent whole even when larger)",
		codec: int32Key(func(c *Config) *int32 { return &c.ReplicaFetchMaxBytes }, 1, math.MaxInt32)},
	{Name: "replica.fetch.response.max.bytes", Type: TypeInt, Importance: Medium, Default: "10485760",
		Doc:   "cluster mode: bytes per response of a follower's fetch, at most 134217728 (half the largest answer a follower reads)",
		codec: int32Key(func(c *Config) *int32 { return &c.ReplicaFetchResponseMaxBytes }, 1, ReplicaFetchResponseMaxBytesLimit)},
	{Name: "replica.fetch.min.bytes", Type: TypeInt, Importance: High, Default: "1",
		Doc:   "cluster mode: bytes a leader waits for before answering a follower's fetch",
		codec: int32Key(func(c *Config) *int32 { return &c.ReplicaFetchMinBytes }, 1, math.MaxInt32)},
	{Name: "replica.fetch.wait.max.ms", Type: TypeInt, Importance: Medium, Default: "500",
		Doc: "cluster mode: how long the leader holds a follower's fetch with less than the min bytes (at most `replica.lag.time.max.ms`)",
		codec: codec{
			set: func(s *setter, key, v string) error {
				// An INT in Kafka, and sent as the fetch's int32 MaxWaitMillis.
				n, err := parseInt32(key, v, 1, math.MaxInt32)
				s.c.ReplicaFetchWaitMax = time.Duration(n) * time.Millisecond
				return err
			},
			get: func(c *Config) string { return durationString(c.ReplicaFetchWaitMax, time.Millisecond) },
		}},
	{Name: "replica.fetch.backoff.ms", Type: TypeInt, Importance: Medium, Default: "1000",
		Doc:   "cluster mode: the longest pause of a partition's fetching after an error (the first retry comes after 10 ms, each next one waits twice as long, up to this)",
		codec: durationKey(func(c *Config) *time.Duration { return &c.ReplicaFetchBackoff }, time.Millisecond, 1)},

	{Name: "leader.replication.throttled.rate", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "9223372036854775807",
		Doc:   "as Kafka: bytes/s a leader sends to the replicas its topics' `leader.replication.throttled.replicas` name (measured over `replication.quota.window.num` × `replication.quota.window.size.seconds`); while above it, a follower's fetch gets no data for such a partition unless the follower is in the ISR. Dynamic (per broker or cluster-wide), applied at once",
		codec: int64Key(func(c *Config) *int64 { return &c.LeaderReplicationThrottledRate }, 0, math.MaxInt64)},
	{Name: "follower.replication.throttled.rate", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "9223372036854775807",
		Doc:   "as Kafka: bytes/s a follower fetches for the replicas its topics' `follower.replication.throttled.replicas` name; while above it, its fetcher leaves such partitions out of its fetches unless they are caught up with the leader's high watermark. Dynamic (per broker or cluster-wide), applied at once",
		codec: int64Key(func(c *Config) *int64 { return &c.FollowerReplicationThrottledRate }, 0, math.MaxInt64)},
	{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Dynamic: ClusterWide, Type: TypeLong, Importance: Medium, Default: "9223372036854775807",
		Doc:   "as Kafka: bytes/s the moves of replicas between log dirs (AlterReplicaLogDirs) copy, all moves together (Kafka's ReplicaAlterLogDirs quota). Dynamic (per broker or cluster-wide), applied at once to the moves in progress; 0 holds them back",
		codec: int64Key(func(c *Config) *int64 { return &c.ReplicaAlterLogDirsIOMaxBytesPerSecond }, 0, math.MaxInt64)},

	// Kafka keys accepted for compatibility with Kafka's server.properties;
	// Sluice sizes these itself. The value must still be an integer.
	{Name: "log.flush.scheduler.interval.ms", Type: TypeLong, Importance: High, Default: "9223372036854775807",
		Doc: "accepted for compatibility with Kafka's server.properties (an integer); Sluice sizes this itself", codec: ignoredKey()},
	{Name: "num.network.threads", Dynamic: ClusterWide, Type: TypeInt, Importance: High, Default: "3",
		Doc: "accepted for compatibility with Kafka's server.properties (an integer); Sluice sizes this itself", codec: ignoredKey()},
	{Name: "num.io.threads", Dynamic: ClusterWide, Type: TypeInt, Importance: High, Default: "8",
		Doc: "accepted for compatibility with Kafka's server.properties (an integer); Sluice sizes this itself", codec: ignoredKey()},
	{Name: "num.recovery.threads.per.data.dir", Dynamic: ClusterWide, Type: TypeInt, Importance: High, Default: "1",
		Doc: "accepted for compatibility with Kafka's server.properties (an integer); Sluice sizes this itself", codec: ignoredKey()},
	{Name: "socket.send.buffer.bytes", Type: TypeInt, Importance: High, Default: "102400",
		Doc: "accepted for compatibility with Kafka's server.properties (an integer); Sluice sizes this itself", codec: ignoredKey()},
	{Name: "socket.receive.buffer.bytes", Type: TypeInt, Importance: High, Default: "102400",
		Doc: "accepted for compatibility with Kafka's server.properties (an integer); Sluice sizes this itself", codec: ignoredKey()},
	{Name: "num.replica.fetchers", Dynamic: ClusterWide, Type: TypeInt, Importance: High, Default: "1",
		Doc: "accepted for compatibility with Kafka's server.properties (an integer); Sluice sizes this itself", codec: ignoredKey()},
	{Name: "zookeeper.connection.timeout.ms", Type: TypeInt, Importance: High, NoDefault: true,
		Doc: "accepted for compatibility with Kafka's server.properties (an integer); Sluice sizes this itself", codec: ignoredKey()},
}
