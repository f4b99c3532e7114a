// Package server speaks the Kafka wire protocol: it accepts connections,
// reads size-prefixed request frames, decodes them with kmsg, runs one
// handler per API key and writes the responses back in request order. Most
// handlers have a file of their own named by key number (NN_name.go); keys
// that belong together share one: DescribeUserScramCredentials and
// AlterUserScramCredentials (50, 51) in 50_scram_credentials.go, the ACL
// APIs (29-31) in acls.go, and the consumer-group APIs are package group's,
// routed by groups.go. apis.go is the dispatch table.
//
// # Connections
//
// Each connection has three goroutines: a reader that reads and decodes
// frames, a handler that runs requests one at a time in arrival order (as a
// Kafka broker does per connection, so pipelined produce requests to one
// partition append in the order they were sent), and a writer that encodes
// responses and flushes them with a zerocopy.Writer (writev for framing,
// sendfile for file-backed fetch data). Reading runs ahead of handling by a
// couple of requests (maxQueuedRequests), writing behind it by up to
// maxQueuedResponses.
//
// # What closes a connection
//
// A size prefix that is negative, below the request header size, or above
// socket.request.max.bytes (checked before anything is allocated); a request
// that does not decode; an API key Sluice does not serve; a supported API at
// a version outside our range (except ApiVersions, answered in the v0 format
// with UNSUPPORTED_VERSION and our ranges, as KIP-511 requires); a panic in a
// handler (recovered and logged); connections.authentication.timeout.ms
// without a finished TLS handshake and SASL authentication (auth.go);
// connections.max.idle.ms without a request; a request not read whole
// within request.read.timeout.ms of its first byte; and, at accept, max.connections.per.ip (connlimit.go, which
// also holds max.connections and the queued.max.request.bytes pool of
// mempool.go). Kafka answers some unsupported versions with an error response;
// Sluice closes the connection instead, which every client treats as a
// retriable network error and which cannot be misparsed.
//
// # Error codes
//
// Handlers and the layers below return Go errors; the Kafka error code is
// chosen in one place, errorCode in errors.go, when the response is built.
package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/auth/loginlimit"
	"github.com/sluice/sluice/auth/sasl"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/group"
	"github.com/sluice/sluice/internal/kconn"
	"github.com/sluice/sluice/internal/lifecycle"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/quota"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/tiered"
	"github.com/sluice/sluice/txn"
)

// Options configure a Server.
type Options struct {
	Config config.Config
	Logger *slog.Logger // nil: slog.Default()
	// Meta and Store are owned by the caller, which closes them after the
	// Server's Close.
	Meta  *metastore.Store
	Store engine.Store
	// LogDirs are the log dirs (log.dirs) with their stores, owned by the
	// caller like Store; empty: Store alone, in the first of log.dirs
	// (see replica.Options.Dirs).
	LogDirs []replica.LogDir
	// RemoteStorage is the remote tier of tiered storage; nil: the
	// local-directory backend at rsm.config.dir (tiered.go).
	RemoteStorage tiered.RemoteStorageManager
	// RemoteLogMetadata is a cluster's topic-based remote log metadata
	// (__remote_log_metadata); nil on a single node, whose metadata is in
	// the metastore (tiered.go).
	RemoteLogMetadata *tiered.TopicMetadata
	// ClusterID is answered in Metadata and DescribeCluster.
	ClusterID string
	// AdvertisedHost and AdvertisedPort are the address clients are told to
	// connect to (Metadata, DescribeCluster): fixed for the server's life.
	AdvertisedHost string
	AdvertisedPort int32
	// Now returns the current time; tests replace it. nil: time.Now.
	Now func() time.Time
	// Cluster, when set, runs the server in cluster mode (see
	// clustermode.go): partitions come from the controller's LeaderAndIsr
	// requests instead of the metastore, topic administration goes through
	// ZooKeeper. The caller closes it after Close.
	Cluster *cluster.Node

	// InterBrokerSecurity secures this broker's connections to the others
	// (follower fetches): the inter-broker listener's TLS and SASL.
	InterBrokerSecurity kconn.Security

	// Authorizer, when set, checks every request (authorize.go); nil allows
	// everything. ACLs is where CreateAcls, DescribeAcls and DeleteAcls
	// keep them (nil: SECURITY_DISABLED).
	Authorizer Authorizer
	ACLs       acl.Store
	// Credentials keeps SCRAM credentials (Describe/AlterUserScramCredentials).
	Credentials sasl.CredentialStore

	// Metrics, when set, is where the server counts what it does (package
	// metrics); nil keeps no metrics.
	Metrics *metrics.Metrics

	// Listeners says how each named listener (as in listeners) authenticates
	// its connections; a listener not named here is PLAINTEXT.
	Listeners map[string]ListenerSecurity

	// FailedLogins bounds the failed SASL logins of each client address
	// (the broker shares it with the HTTP side); nil: one made from
	// max.failed.authentications.per.ip (auth.go).
	FailedLogins *loginlimit.Limiter

	// ReconfigureListeners, when set, applies a changed TLS keystore or
	// truststore location of a listener (a dynamic broker config,
	// brokerconfig.go) to the listeners the caller built: with validateOnly
	// it only checks that the new stores load and fit; its error refuses
	// the alter.
	ReconfigureListeners func(cfg *config.Config, validateOnly bool) error

	// ShareMembership, when set, is the share groups' membership side:
	// the server then serves ShareFetch and ShareAcknowledge
	// (share_session.go). nil: neither is served nor advertised.
	ShareMembership ShareMembership

	// Schemas is the schema registry's view that topics with
	// confluent.{key,value}.schema.validation are checked against
	// (schema_validate.go); nil: such records are refused.
	Schemas SchemaSubjects

	// controlPlane, when set, replaces the mode's control plane (tests of
	// the cluster-mode handlers without ZooKeeper: a plane that implements
	// interBroker and replica.Hooks makes the server a cluster member).
	controlPlane func(*Server) controlPlane
}

// MaxPartitionsPerTopic bounds the partitions of one topic. Kafka has no
// such limit, but a request for two billion partitions should fail fast
// rather than exhaust memory and file descriptors.
const MaxPartitionsPerTopic = 100_000

// Server is a Kafka protocol server, single-node or a cluster member (see
// controlplane.go). Create it with New, feed it
// listeners with Serve, stop it with Shutdown and Close. Safe for concurrent
// use.
type Server struct {
	// schemas checks produced records of topics with schema validation
	// on (schema_validate.go).
	schemas schemaCheck
	// topicDefaults are the topic keys' broker defaults, formatted once
	// per effective config (configs.go): replaced when a dynamic broker
	// config changes one (brokerconfig.go), never modified.
	topicDefaults atomic.Pointer[topicDefaults]
	// cfg is the static config (server.properties, --set); dyn holds the
	// effective one, with the dynamic broker configs applied
	// (currentConfig, brokerconfig.go).
	cfg config.Config
	dyn dynamicConfigs
	// groupCfg holds the per-group configs (groupconfig.go).
	groupCfg groupConfigs
	log      *slog.Logger
	meta     *metastore.Store
	store    engine.Store
	now      func() time.Time
	nodeID   int32

	clusterID string
	advHost   string
	advPort   int32
	// self describes this broker as clients are told to reach it.
	self metadata.Broker

	// rm is the replica manager: the partitions this broker hosts, their
	// logs and the logs' periodic work (package replica).
	rm     *replica.Manager
	tiered *tiered.Manager // the remote log manager; nil: tiered storage off (tiered.go)
	groups *group.Coordinator
	// offsets is the __consumer_offsets coordinator under the group
	// coordinator, in both modes (offsets_topic_find.go).
	offsets *offsets.Coordinator
	// txn is the transaction coordinator (txn_coord.go); txnMarkers its
	// marker writer (txn_markers.go).
	txn        *txn.Coordinator
	txnMarkers *txnMarkerWriter
	pids       producerIDs
	// interBroker is Options.InterBrokerSecurity.
	interBroker kconn.Security
	// az checks requests against Options.Authorizer and keeps
	// Options.ACLs (authorize.go); creds is Options.Credentials.
	az    authorizer
	creds sasl.CredentialStore
	// listenerSec is Options.Listeners; reListeners is
	// Options.ReconfigureListeners.
	listenerSec map[string]ListenerSecurity
	reListeners func(cfg *config.Config, validateOnly bool) error
	// The control plane's parts (controlplane.go): localPlane's on a
	// single node, zkPlane's in a cluster. md is what handlers read, admin
	// administers topics, route finds coordinators; ib serves the
	// inter-broker requests, nil on a single node, whose dispatch table
	// (apis) then lacks them.
	md    metadataView
	admin topicAdmin
	route coordinatorRoute
	ib    interBroker
	apis  apiTable

	// sent counts how response bytes left, for Stats.
	sent sendCounters

	// metrics is Options.Metrics (nil: none kept), where New registers
	// the scrape-time collector (metrics.go).
	metrics *metrics.Metrics

	// panics counts panics recovered while decoding or handling requests:
	// each is a bug, logged with its stack; FuzzDispatch asserts it stays 0.
	panics atomic.Int64
	// precheckedCRC and precheckedRecords count the records fields of
	// Produce requests whose CRCs, and whose records, were checked as they
	// were read (crcscan.go), for tests.
	precheckedCRC, precheckedRecords atomic.Int64

	// fetchSessions holds the incremental fetch sessions (fetch_session.go).
	fetchSessions *fetchSessionCache
	// share is the share groups' data path (share_session.go).
	share *shareData

	// parked counts the fetches waiting in the purgatory now.
	parked atomic.Int64

	// quotas enforces client quotas, kept in quotaStore (quota.go).
	quotas     *quota.Manager
	quotaStore quotaStore
	// repl are the replication throttles (replquota.go).
	repl replQuotas
	// ipRates enforces the ip entities' connection_creation_rate, kept in
	// ipQuotaStore (ipquota.go).
	ipRates      *quota.IPRates
	ipQuotaStore ipQuotaStore

	// rules validates topic administration requests (19_create_topics.go);
	// lookup finds topics and partitions for the handlers (topics.go).
	rules  topicRules
	lookup topicLookup

	// closing is closed by Shutdown: listeners stop, readers stop reading,
	// long polls return what they have.
	closing   chan struct{}
	closeOnce sync.Once

	// authTimeouts logs connections closed by
	// connections.authentication.timeout.ms (auth.go).
	authTimeouts authTimeoutLog
	// failedLogins bounds failed SASL logins per client address (auth.go).
	failedLogins *loginlimit.Limiter
	// limits bounds the client port: request memory and connection
	// counts (connlimit.go); Serve initializes it.
	limits connLimits

	// life closes what New started, in reverse order (Close).
	life lifecycle.Stack

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	connWG    sync.WaitGroup
}

// New starts the server's components in order on a lifecycle stack: the
// replica manager (on a single node it loads every topic of the metastore
// and opens its partitions), the control plane, the group and transaction
// coordinators, the logs' periodic work and the metrics collector. On
// error what started is closed again, in reverse order; Close does the
// same.
func New(opts Options) (*Server, error) {
	if opts.Meta == nil || opts.Store == nil {
		return nil, errors.New("server: Options.Meta and Options.Store are required")
	}
	s := &Server{
		failedLogins:  opts.FailedLogins,
		cfg:           opts.Config,
		log:           opts.Logger,
		meta:          opts.Meta,
		store:         opts.Store,
		now:           opts.Now,
		nodeID:        opts.Config.BrokerID,
		clusterID:     opts.ClusterID,
		advHost:       opts.AdvertisedHost,
		advPort:       opts.AdvertisedPort,
		listenerSec:   opts.Listeners,
		reListeners:   opts.ReconfigureListeners,
		interBroker:   opts.InterBrokerSecurity,
		creds:         opts.Credentials,
		metrics:       opts.Metrics,
		fetchSessions: newFetchSessionCache(int(opts.Config.FetchSessionCacheSlots)),
		closing:       make(chan struct{}),
		listeners:     map[net.Listener]struct{}{},
		conns:         map[*conn]struct{}{},
	}
	if s.failedLogins == nil {
		s.failedLogins = loginlimit.New(int(s.cfg.MaxFailedAuthenticationsPerIP), s.cfg.FailedAuthenticationsWindow)
	}
	s.self = metadata.Broker{ID: s.nodeID, Host: s.advHost, Port: s.advPort, Rack: s.cfg.RackID}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.pids.meta = s.meta
	// The dynamic broker configs apply before any partition opens.
	var bcStore entityConfigStore = metaEntityConfigs{s.meta, "config/brokers/"}
	var unclean func(bool)
	if opts.Cluster != nil {
		bcStore, unclean = zkEntityConfigs{opts.Cluster.BrokerConfig, opts.Cluster.SetBrokerConfig}, opts.Cluster.SetUncleanLeaderElection
	}
	s.repl = newReplQuotas(&s.cfg, s.nodeID, s.now)
	s.initDynamicConfigs(bcStore, unclean)
	s.groupCfg.store = metaEntityConfigs{s.meta, "config/groups/"}
	if opts.Cluster != nil {
		s.groupCfg.store = zkEntityConfigs{opts.Cluster.GroupConfig, opts.Cluster.SetGroupConfig}
	}
	// The __consumer_offsets coordinator exists before the control plane:
	// a cluster's LeaderAndIsr hooks load and unload its partitions.
	s.offsets = newOffsetsCoord(s)
	s.az = authorizer{
		authz: opts.Authorizer, acls: opts.ACLs, controlListener: opts.Config.ControlPlaneListenerName,
		topicNames: func() []string { return s.md.topicNames() },
	}
	// On error, what started so far is closed again, in reverse order.
	fail := func(err error) (*Server, error) {
		s.life.Close()
		return nil, err
	}
	var cp controlPlane
	var zp *zkPlane
	switch {
	case opts.controlPlane != nil:
		cp = opts.controlPlane(s)
	case opts.Cluster != nil:
		zp = newZKPlane(s, opts.Cluster)
		cp = zp
	default:
		cp = localPlane{s}
	}
	s.md, s.admin, s.route = cp, cp, cp
	// A cluster's plane serves the inter-broker requests and hears of the
	// replicas' lives.
	hooks, _ := cp.(replica.Hooks)
	if ib, ok := cp.(interBroker); ok && hooks != nil {
		s.ib = ib
	}
	s.apis = apisFor(s.ib != nil, opts.Config.ServesConsumerProtocol(), opts.Config.ServesShareGroups())
	// Share groups (group.share.enable): the membership side is the group
	// coordinator (76/77), the data side ShareFetch/ShareAcknowledge
	// (78/79), served together, as kgo.ShareGroup needs all four.
	// Options.ShareMembership replaces the coordinator in tests.
	s.schemas.reg = opts.Schemas
	membership := opts.ShareMembership
	if membership == nil && opts.Config.ServesShareGroups() {
		membership = coordinatorShareMembership{s}
	}
	s.share = newShareData(membership)
	// The share coordinator exists before the control plane starts, whose
	// LeaderAndIsr loads its partitions (share_state.go).
	s.share.coord, s.share.persister = newShareCoord(s), newSharePersister(s)
	if membership != nil {
		s.apis = withSharePersister(withShareData(s.apis)) // 83_initialize_share_group_state.go
	}
	s.rm = replica.New(replica.Options{
		Config: *s.currentConfig(),
		Meta:   s.meta,
		Store:  s.store,
		Dirs:   opts.LogDirs,
		// A failed log dir is logged by the manager; in a cluster the
		// controller is told (Kafka's /log_dir_event_notification).
		OnLogDirFailure: s.logDirFailed(opts.Cluster),
		NodeID:          s.nodeID,
		Logger:          s.log,
		Now:             s.now,
		Metrics:         s.metrics,
		TopicConfig: func(name string, overrides map[string]string) replica.TopicConfig {
			tc := s.effectiveConfig(internalOverrides(name, overrides))
			return replica.TopicConfig{Log: tc.log, LogAppendTime: tc.logAppendTime, MaxMessage: tc.maxMessage, MinISR: tc.minISR, Rules: tc.rules,
				KeySchemaValidation: tc.keySchema, ValueSchemaValidation: tc.valueSchema,
				KeySubjectStrategy: tc.keyStrategy, ValueSubjectStrategy: tc.valueStrategy, Backend: overrides[storageBackendKey]}
		},
		CheckConfig: checkTopicConfigs,
		// Tiered topics' retention is the remote log manager's.
		OwnsRetention: func(t *replica.Topic) bool { return s.tiered != nil && s.tiered.OwnsRetention(t) },
		Hooks:         hooks, // nil on a single node
		// A cluster's replicas restart at their committed high
		// watermark; a single node leads all and commits at once.
		CheckpointHighWatermarks: zp != nil,
	})
	s.life.Push("partitions", s.rm.Close)
	tm, err := s.newTiered(opts.RemoteStorage, opts.RemoteLogMetadata)
	if err != nil {
		return fail(fmt.Errorf("server: tiered storage: %w", err))
	}
	s.tiered = tm
	s.lookup = topicLookup{rm: s.rm, md: s.md, nodeID: s.nodeID}
	s.rules = topicRules{
		cfg: &s.cfg, md: s.md, rm: s.rm, maxPartitions: MaxPartitionsPerTopic,
		relations: s.checkTopicConfigRelations, txnSpec: s.txnTopicSpec, shareSpec: s.shareStateTopicSpec,
	}
	if s.ib == nil {
		if err := s.rm.Load(); err != nil {
			return fail(err)
		}
	}
	// The group coordinator closes after the control plane, whose
	// __consumer_offsets loads call into it.
	s.life.Push("group coordinator", func() error {
		if s.groups == nil {
			return nil
		}
		return s.groups.Close()
	})
	if zp != nil {
		zp.start()
	}
	s.life.Push("control plane", func() error { cp.close(); return nil })
	// The offsets coordinator's loads stop after the transaction
	// coordinator (whose markers reach __consumer_offsets) and before the
	// control plane and the group coordinator they call into.
	s.life.Push("offsets coordinator", func() error { s.offsets.Close(); return nil })
	c := opts.Config
	groups, err := group.New(group.Options{
		Store:                 s.meta,
		InitialRebalanceDelay: c.GroupInitialRebalanceDelay,
		MinSessionTimeout:     c.GroupMinSessionTimeout,
		MaxSessionTimeout:     c.GroupMaxSessionTimeout,
		OffsetsRetention:      c.OffsetsRetention,
		Now:                   opts.Now,
		Logger:                s.log,
		NodeID:                s.nodeID,
		Host:                  s.advHost,
		Port:                  s.advPort,
		Owns:                  s.offsets.Owns,
		Persist:               s.offsets.Persist,
		PersistGroup:          s.offsets.PersistGroup,
		PersistTxn:            s.offsets.PersistTxn,
		Loading:               s.offsets.Loading,
		PartitionFor:          s.offsetsPartitionFor,

		PersistConsumer:           s.offsets.PersistConsumer,
		Topics:                    groupTopics{md: s.md},
		ConsumerHeartbeatInterval: c.GroupConsumerHeartbeatInterval,
		ConsumerSessionTimeout:    c.GroupConsumerSessionTimeout,
		ConsumerMaxSize:           c.GroupConsumerMaxSize,
		ConsumerAssignors:         c.GroupConsumerAssignors,
		ConsumerMigrationPolicy:   c.GroupConsumerMigrationPolicy,
		ConsumerGroupTimeouts:     s.consumerGroupTimeouts, // groupconfig.go

		PersistShare:      s.offsets.PersistShare,
		ShareGroupConfigs: s.shareGroupConfig, // 76_share_group_heartbeat.go
		ShareMaxSize:      c.GroupShare.MaxSize,
		ShareMemberGone:   s.shareMemberGone,       // share_session.go
		ShareDeleteState:  s.shareDeleteGroupState, // share_state.go
	})
	if err != nil {
		return fail(fmt.Errorf("server: group coordinator: %w", err))
	}
	s.groups = groups
	s.txn = newTxnCoord(s)
	s.life.Push("transaction coordinator", func() error { s.txn.Close(); s.txnMarkers.close(); return nil })
	s.openLocalTxnPartitions()
	if c := s.share.coord; c != nil {
		s.life.Push("share coordinator", func() error { c.Close(); s.share.persister.close(); return nil })
		s.openLocalShareStatePartitions()
	}
	if err := s.openLocalOffsets(); err != nil {
		return fail(err)
	}
	if err := s.life.Start("log upkeep", s.rm.Start); err != nil {
		return fail(fmt.Errorf("server: %w", err))
	}
	if s.tiered != nil {
		if err := s.life.Start("remote log manager", s.tiered.Start); err != nil {
			return fail(fmt.Errorf("server: %w", err))
		}
	}
	if err := s.startQuotas(opts.Cluster); err != nil {
		return fail(fmt.Errorf("server: client quotas: %w", err))
	}
	if err := s.startIPQuotas(opts.Cluster); err != nil {
		return fail(fmt.Errorf("server: ip quotas: %w", err))
	}
	if zp != nil {
		if err := s.registerReplQuotaMetrics(); err != nil {
			return fail(err)
		}
	}
	if err := s.life.Start("metrics", (&stateCollector{s: s}).register); err != nil {
		return fail(err)
	}
	return s, nil
}

// Serve accepts connections on ln until ln is closed or Shutdown is called,
// and returns nil in those cases. It closes ln before returning. ln is the
// client listener (see ServeListener).
func (s *Server) Serve(ln net.Listener) error { return s.ServeListener(ln, "") }

// ServeListener is Serve for the listener named listener (as in
// listeners, e.g. "PLAINTEXT"): when it is control.plane.listener.name,
// its connections may send the controller's requests, and no other
// listener's may.
func (s *Server) ServeListener(ln net.Listener, listener string) error {
	s.limits.init(s.currentConfig(), s.log)
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		ln.Close()
		return nil
	default:
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return nil
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Temporary errors (EMFILE and the like): back off and retry, as
			// net/http does, instead of spinning or giving up.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff *= 2; backoff > time.Second {
				backoff = time.Second
			}
			s.log.Warn("server: accept failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-s.closing:
				return nil
			}
			continue
		}
		backoff = 0
		// As Kafka's acceptor: hold the accepted connection back to
		// max.connection.creation.rate and, at max.connections (the
		// broker's or this listener's), until one closes; meanwhile this
		// listener accepts nothing and new connections wait in the listen
		// backlog. Counting after accept, not before, keeps an idle
		// listener from holding a slot no connection uses.
		q := s.limits.reserve(listener, s.closing)
		if q == nil {
			nc.Close()
			return nil
		}
		if !s.startConn(nc, listener, q) {
			nc.Close()
			return nil
		}
	}
}

// Shutdown stops accepting connections, stops reading new requests, answers
// the requests already read (long polls return at once with what they
// have), and waits until every connection is closed. It is idempotent.
func (s *Server) Shutdown() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		close(s.closing)
		for ln := range s.listeners {
			ln.Close()
		}
		for c := range s.conns {
			c.stopReading()
		}
		s.mu.Unlock()
	})
	s.connWG.Wait()
}

// Close shuts the server down (see Shutdown) and closes what New started,
// in reverse order, the partitions last. The metastore and the engine
// store stay open: they belong to the caller.
func (s *Server) Close() error {
	s.Shutdown()
	return s.life.Close()
}

// startConn registers and starts a connection, which holds the slot Serve
// reserved for it on q; false when shutting down. A connection from an
// address at its max.connections.per.ip is closed at once.
func (s *Server) startConn(nc net.Conn, listener string, q *listenerQuota) bool {
	ip := remoteIP(nc)
	if d := s.limits.throttleIP(ip, q); d > 0 {
		// Kafka's ConnectionThrottledException: held, then closed
		// unserved (DelayedCloseSocket).
		s.limits.unreserve(q)
		s.log.Debug("server: delaying the close of a connection over its ip's connection_creation_rate", "remote", nc.RemoteAddr().String(), "throttle", d)
		time.AfterFunc(d, func() { nc.Close() })
		return true
	}
	if ok, max := s.limits.addIP(ip); !ok {
		s.limits.unreserve(q)
		s.log.Info("server: rejected connection: address already has the configured maximum of connections", "remote", nc.RemoteAddr().String(), "max.connections.per.ip", max)
		nc.Close()
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closing:
		s.limits.closed(ip)
		s.limits.listenerClosed(q)
		return false
	default:
	}
	c := newConn(s, nc)
	c.ip, c.listener, c.quota = ip, listener, q
	sec, ok := s.listenerSec[listener]
	if !ok {
		sec = ListenerSecurity{Protocol: "PLAINTEXT"}
	}
	c.lst = s.metrics.Listener(listenerLabel(listener, sec))
	c.lst.Opened()
	c.initAuth(sec)
	c.startAuthTimer()
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	c.start()
	return true
}
