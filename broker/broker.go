// Package broker is Sluice's public entry point: Start opens the metastore
// in the first log dir and a store of the storage backend in each dir of
// log.dirs, loads the topics, listens on the configured listeners and
// serves the Kafka protocol until Close.
//
//	b, err := broker.Start(cfg, broker.Options{Logger: logger})
//	...
//	defer b.Close()
//	fmt.Println("listening on", b.Addr())
//
// Layout of each log dir (JBOD: several dirs, each with its own
// partitions; see replica/logdirs.go): the storage backend's files (for
// "segment", Kafka's <topic>-<partition> directories and per-dir
// checkpoints) and Kafka's meta.properties (broker.id, cluster.id; a dir
// naming another broker or cluster is refused). The first dir also holds
// the metastore, in __sluice_meta, and must be usable; a later dir that
// cannot be created, read or opened is offline from the start and the
// broker serves the others. The cluster id is kept in the metastore (checkpoint
// "cluster.id") and never changes: a single-node broker creates it once,
// a cluster member takes ZooKeeper's /cluster/id and refuses a dir kept for
// another cluster; cluster.id in the config, if set, must match it.
//
// Start pushes each component it starts onto one lifecycle.Stack, which
// Close, or a Start that fails, unwinds newest first. A new component (a
// quota manager, a tiered-storage uploader) is one entry, pushed where it
// starts with a comment saying what must close before it and after it.
package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sluice/sluice/auth/loginlimit"
	"github.com/sluice/sluice/auth/tlsconf"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/kconn"
	"github.com/sluice/sluice/internal/lifecycle"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/schemareg"
	"github.com/sluice/sluice/server"

	// The storage backends register themselves.
	_ "github.com/sluice/sluice/engine/memlog"
	_ "github.com/sluice/sluice/engine/pebblelog"
	_ "github.com/sluice/sluice/segment"
)

// MetaDirName is the metastore's directory inside the first log dir.
const MetaDirName = "__sluice_meta"

// backendDirPrefix names the subdirectory of a log dir holding the store
// of a storage backend other than the broker's (the topic config
// storage.backend): "<dir>/storage-<backend>". No partition dir
// ("<topic>-<n>") has such a name.
const backendDirPrefix = "storage-"

// openOtherBackends opens, in the log dir at path, the store of every
// backend other than the broker's whose subdirectory is there (topics of
// that backend had logs in the dir), and returns them with the opener of
// the others (replica.LogDir.Open), which opens each at most once. Every
// store it opens, now or later, is closed with the broker, before the
// dir's own store.
func (b *Broker) openOtherBackends(path string, eopts engine.Options) (map[string]engine.Store, func(string) (engine.Store, error), error) {
	var mu sync.Mutex
	opened := map[string]engine.Store{}
	openOne := func(name string) (engine.Store, error) {
		mu.Lock()
		defer mu.Unlock()
		if st := opened[name]; st != nil {
			return st, nil
		}
		if name == b.cfg.StorageBackend {
			return nil, fmt.Errorf("broker: storage backend %q is the log dir's own", name)
		}
		o := eopts
		o.Dir = filepath.Join(path, backendDirPrefix+name)
		o.OpenSegmentsMax = b.otherOpenFilesMax
		st, err := engine.Open(name, o)
		if err != nil {
			return nil, err
		}
		opened[name] = st
		return st, nil
	}
	closeAll := func() error {
		mu.Lock()
		defer mu.Unlock()
		var first error
		for name, st := range opened {
			if err := st.Close(); err != nil && first == nil {
				first = fmt.Errorf("broker: close the %q store of %s: %w", name, path, err)
			}
		}
		return first
	}
	if err := b.stack.Push("storage backends "+path, closeAll); err != nil {
		return nil, nil, err
	}
	others := map[string]engine.Store{}
	for _, name := range engine.Names() {
		if name == b.cfg.StorageBackend {
			continue
		}
		if _, err := os.Stat(filepath.Join(path, backendDirPrefix+name)); err != nil {
			continue
		}
		st, err := openOne(name)
		if err != nil {
			return nil, nil, fmt.Errorf("broker: open the %q store of %s: %w", name, path, err)
		}
		others[name] = st
	}
	return others, openOne, nil
}

// clusterIDCheckpoint names the metastore checkpoint holding the cluster id.
const clusterIDCheckpoint = "cluster.id"

// Options are the broker's non-config dependencies.
type Options struct {
	Logger *slog.Logger // nil: slog.Default()
	// UI is the web console's files served at / by the HTTP side; nil
	// serves the console embedded in the binary (package console/ui).
	UI fs.FS
	// OpenStore opens the store of one log dir; nil: engine.Open with
	// storage.backend. Tests wrap a backend to inject I/O errors.
	OpenStore func(opts engine.Options) (engine.Store, error)
}

// Broker is a running broker: on its own, or with zookeeper.connect set a
// member of a cluster (node).
type Broker struct {
	cfg   config.Config
	log   *slog.Logger
	meta  *metastore.Store
	store engine.Store // the first log dir's
	// dirs are the log dirs with their stores (nil when offline from
	// the start), in log.dirs order; dirs[0].Store is store.
	dirs []replica.LogDir
	srv  *server.Server
	node *cluster.Node // cluster mode only (cluster.go)
	// tlsServers are the TLS listeners' certificate holders by listener
	// name, set while Start builds them (security.go), read-only after.
	tlsServers map[string]*tlsconf.Server
	lns        []net.Listener
	// schemaRegistry is the built-in schema registry (schemareg.go); nil
	// when schema.registry.listeners is empty.
	schemaRegistry *schemareg.Registry
	schemaSubjects schemaSubjects // the server's view of it (schemareg.go)
	http           httpState      // http.go
	// srvReady is srv once server.New has loaded the topics (log recovery
	// done); recoveringPartitions is how many partitions the metastore
	// lists, -1 until read. /readyz reads both (http.go).
	srvReady             atomic.Pointer[server.Server]
	recoveringPartitions atomic.Int64
	// openFilesMax is the open-file cache size of each log dir's store
	// of storage.backend: log.segment.open.files.max, or what the limits
	// allow when it is 0; otherOpenFilesMax that of a store of another
	// backend a topic opened there (checkLimits).
	openFilesMax, otherOpenFilesMax int
	// lnNames are the listener names of lns (config.SplitListener), in order.
	lnNames []string
	addr    string
	cid     string
	// failedLogins bounds failed logins per client address, shared by the
	// Kafka listeners' SASL and the HTTP side's basic auth.
	failedLogins *loginlimit.Limiter

	// stack is what Start started, oldest first: Close, or a Start that
	// fails, unwinds it newest first. Where Start pushes an entry it says
	// what must be closed before it and what after.
	stack lifecycle.Stack
	// bg is the goroutines that one entry stops and another, earlier one
	// waits for: the Serve loops (ended by the server's Close) and the
	// SCRAM credential watch (ended by its entry, but perhaps inside a
	// ZooKeeper call until the node closes). See "background goroutines".
	bg sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

// Start opens storage and starts serving. Each component it starts is an
// entry of one lifecycle.Stack; on error the entries started so far are
// closed again, newest first, and nothing is left open or running.
func Start(cfg config.Config, opts Options) (_ *Broker, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if len(cfg.LogDirs) == 0 || cfg.LogDirs[0] == "" {
		return nil, errors.New("broker: log.dirs is empty")
	}
	if len(cfg.Listeners) == 0 {
		return nil, errors.New("broker: listeners is empty")
	}
	dir := cfg.LogDirs[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: create log dir: %w", err)
	}
	b := &Broker{cfg: cfg, log: log, closed: make(chan struct{}),
		failedLogins: loginlimit.New(int(cfg.MaxFailedAuthenticationsPerIP), cfg.FailedAuthenticationsWindow)}
	b.recoveringPartitions.Store(-1)
	defer func() {
		if err != nil {
			if cerr := b.stack.Close(); cerr != nil {
				log.Warn("broker: start failed; closing", "err", cerr)
			}
		}
	}()
	// The HTTP side first: it serves /healthz and /readyz while storage
	// recovers (engine.Open, server.New). Its entry here is the last to
	// close, which matters only when Start fails: a running broker's HTTP
	// side is stopped first, by the entry pushed at the end of Start.
	if err := b.startHTTP(opts); err != nil {
		return nil, err
	}

	// The metastore, then the store: they close last (the store first, so
	// that its Close records a clean shutdown while the metastore is still
	// open), after everything that reads or writes them has stopped.
	if b.meta, err = metastore.Open(filepath.Join(dir, MetaDirName), metastore.Options{Logger: log}); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if err := b.stack.Push("metastore", b.meta.Close); err != nil {
		return nil, err
	}
	if cfg.SingleNode() {
		if metas, err := b.meta.ListTopics(); err == nil {
			n := 0
			for _, m := range metas {
				n += int(m.Partitions)
			}
			b.recoveringPartitions.Store(int64(n))
		}
	}
	props, err := readMetaProperties(dir, cfg.BrokerID)
	if err != nil {
		return nil, err
	}
	localCID, err := localClusterID(b.meta, props, cfg.ClusterIDOverride)
	if err != nil {
		return nil, err
	}
	b.openFilesMax, b.otherOpenFilesMax = checkLimits(cfg, log)
	if err := b.openLogDirs(opts, props, localCID); err != nil {
		return nil, err
	}

	// The Kafka listeners are bound before the node registers (it
	// advertises their bound ports) and serve only once the server is up.
	// These entries close them when Start fails before they serve; on
	// Close the server's Close has closed them already.
	for _, l := range cfg.Listeners {
		name, hostport, err := parseListener(l)
		if err == nil {
			err = servedProtocol(cfg, name)
		}
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", hostport)
		if err != nil {
			return nil, fmt.Errorf("broker: listen on %s: %w", l, err)
		}
		b.lns = append(b.lns, ln)
		b.lnNames = append(b.lnNames, name)
		if err := b.stack.Push("listener "+name, func() error { return closeListener(ln) }); err != nil {
			return nil, err
		}
	}
	// The goroutines on b.bg are waited for after the node has left the
	// cluster (the SCRAM watch may be inside a ZooKeeper call until then)
	// and before the store closes under the Serve loops.
	if err := b.stack.Push("background goroutines", func() error { b.bg.Wait(); return nil }); err != nil {
		return nil, err
	}
	client := b.clientListener()
	host, port, err := b.advertised(client)
	if err != nil {
		return nil, err
	}
	b.addr = b.lns[client].Addr().String()
	if cfg.InterBrokerListenerName == "" {
		cfg.InterBrokerListenerName = b.lnNames[client]
		b.cfg.InterBrokerListenerName = cfg.InterBrokerListenerName
	}
	var interBroker kconn.Security // followers' connections (cluster mode)
	if cfg.SingleNode() {
		b.cid = localCID
		if b.cid == "" {
			b.cid = cluster.NewClusterID()
		}
	} else {
		if interBroker, err = b.connSecurity(cfg.InterBrokerListenerName); err != nil {
			return nil, err
		}
		if err := b.joinCluster(host, port, localCID); err != nil {
			return nil, err
		}
		b.cid = b.node.ClusterID()
	}
	if err = adoptClusterID(b.meta, dir, props, cfg.BrokerID, b.cid); err != nil {
		return nil, err
	}
	for _, d := range b.dirs[1:] {
		if d.Store == nil {
			continue
		}
		if p, err := readMetaProperties(d.Path, cfg.BrokerID); err == nil && p == nil {
			if err := writeMetaProperties(d.Path, cfg.BrokerID, b.cid); err != nil {
				log.Error("broker: write meta.properties", "dir", d.Path, "err", err)
			}
		}
	}

	// Listener security and the authorizer (security.go) push their
	// watches: they stop after the server has closed, before the node.
	creds, err := b.credentials()
	if err != nil {
		return nil, err
	}
	secs := map[string]server.ListenerSecurity{}
	for i, name := range b.lnNames {
		ln, sec, err := b.securedListener(b.lns[i], name, creds)
		if err == nil {
			sec.Host, sec.Port, err = b.advertised(i)
		}
		if err != nil {
			return nil, err
		}
		b.lns[i], secs[name] = ln, sec
	}
	authz, acls, err := b.authorizer()
	if err != nil {
		return nil, err
	}
	rlmm, err := b.remoteLogMetadata() // tiered.go
	if err != nil {
		return nil, err
	}
	b.srv, err = server.New(server.Options{
		Schemas:           &b.schemaSubjects, // schemareg.go
		RemoteLogMetadata: rlmm,
		Config:            cfg, Logger: log, Meta: b.meta, Store: b.store, LogDirs: b.dirs,
		ClusterID: b.cid, AdvertisedHost: host, AdvertisedPort: port,
		Cluster: b.node, Listeners: secs, Authorizer: authz, ACLs: acls, Credentials: creds,
		ReconfigureListeners: b.reconfigureListeners,
		InterBrokerSecurity:  interBroker, Metrics: b.http.metrics, FailedLogins: b.failedLogins,
	})
	if err != nil {
		return nil, err
	}
	// The server closes after the controlled shutdown and before the
	// security watches, the node and the storage it uses: its Close stops
	// the Kafka listeners, answers the requests already read and closes
	// every partition.
	if err := b.stack.Push("server", b.srv.Close); err != nil {
		return nil, err
	}
	if err := b.attachHTTP(authz, creds); err != nil {
		return nil, err
	}
	for i, ln := range b.lns {
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			if err := b.srv.ServeListener(ln, b.lnNames[i]); err != nil {
				log.Error("broker: serve", "addr", ln.Addr().String(), "err", err)
			}
		}()
	}
	b.srvReady.Store(b.srv)                                     // the Kafka listeners serve: /readyz looks further
	if err := b.startSchemaRegistry(authz, creds); err != nil { // schemareg.go
		return nil, err
	}
	if b.node != nil {
		// Before the server closes, while its listeners still answer the
		// controller: the controller moves this broker's leadership away
		// and tells it so. Pushed only now that the listeners serve.
		if err := b.stack.Push("controlled shutdown", func() error { b.controlledShutdown(); return nil }); err != nil {
			return nil, err
		}
	}
	if b.http.srv != nil {
		// Close stops the HTTP side first: no HTTP request (/readyz
		// reading the server, the console's Kafka client) is then in
		// flight while the broker shuts down under it. The "http" entry
		// at the bottom of the stack finds it stopped.
		if err := b.stack.Push("http (stopped first)", b.stopHTTP); err != nil {
			return nil, err
		}
	}
	log.Info("broker: started", "broker.id", cfg.BrokerID, "cluster.id", b.cid, "addr", b.addr,
		"advertised", net.JoinHostPort(host, strconv.Itoa(int(port))), "storage.backend", cfg.StorageBackend, "log.dirs", cfg.LogDirs)
	return b, nil
}

// ListenerAddrs returns the host:port each listener is bound to, by
// listener name.
func (b *Broker) ListenerAddrs() map[string]string {
	out := make(map[string]string, len(b.lns))
	for i, ln := range b.lns {
		out[b.lnNames[i]] = ln.Addr().String()
	}
	return out
}

// Addr returns the host:port the first listener is bound to (with the real
// port when the config asked for port 0).
func (b *Broker) Addr() string { return b.addr }

// Stats reports how response bytes left the broker (sendfile, copied,
// written); see server.Stats.
func (b *Broker) Stats() server.Stats { return b.srv.Stats() }

// ClusterID returns the broker's cluster id.
func (b *Broker) ClusterID() string { return b.cid }

// Close shuts down gracefully, unwinding what Start started newest first:
// the HTTP side, the controlled shutdown (cluster mode), the server (stop
// accepting, answer the requests already read, stop the replica manager's
// retention, cleaner and checkpoint loops, close every partition), the security watches, the cluster node, the
// background goroutines, then the store (which records a clean shutdown)
// and the metastore. Every step runs even when one fails; the errors are
// joined. Safe to call more than once and concurrently; later calls wait
// for the first and return its result.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		if err := b.stack.Close(); err != nil {
			b.closeErr = fmt.Errorf("broker: %w", err)
			b.log.Error("broker: close", "err", b.closeErr)
		} else {
			b.log.Info("broker: stopped")
		}
		close(b.closed)
	})
	<-b.closed
	return b.closeErr
}

// Wait blocks until Close has finished.
func (b *Broker) Wait() { <-b.closed }

// closeListener closes ln; one closed already (by the server's Close) is
// no error.
func closeListener(ln net.Listener) error {
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// localClusterID is the cluster id this broker's data already belongs to:
// the metastore's, else meta.properties', else cluster.id from the config;
// "" for a new broker. They must agree where present.
func localClusterID(meta *metastore.Store, props map[string]string, override string) (string, error) {
	stored := ""
	switch v, err := meta.GetCheckpoint(clusterIDCheckpoint); {
	case err == nil:
		stored = string(v)
	case !errors.Is(err, metastore.ErrNotFound):
		return "", fmt.Errorf("broker: load cluster id: %w", err)
	}
	id := stored
	if p := props["cluster.id"]; p != "" {
		if id != "" && p != id {
			return "", fmt.Errorf("broker: %s says cluster.id=%s but the metastore says %s", metaPropertiesFile, p, id)
		}
		id = p
	}
	if override != "" {
		if id != "" && override != id {
			return "", fmt.Errorf("broker: cluster.id %q does not match the stored cluster id %q", override, id)
		}
		id = override
	}
	return id, nil
}

// adoptClusterID records id, the cluster this broker now belongs to, in the
// metastore and in meta.properties where they lack it.
func adoptClusterID(meta *metastore.Store, dir string, props map[string]string, brokerID int32, id string) error {
	switch _, err := meta.GetCheckpoint(clusterIDCheckpoint); {
	case errors.Is(err, metastore.ErrNotFound):
		if err := meta.PutCheckpoint(clusterIDCheckpoint, []byte(id)); err != nil {
			return fmt.Errorf("broker: store cluster id: %w", err)
		}
	case err != nil:
		return fmt.Errorf("broker: load cluster id: %w", err)
	}
	if props == nil {
		return writeMetaProperties(dir, brokerID, id)
	}
	return nil
}

// parseListener turns "NAME://host:port" into the listener name (upper
// case) and "host:port". Which names are allowed (PLAINTEXT ones only, so
// far) is config.Validate's to check.
func parseListener(l string) (string, string, error) {
	name, hostport, err := config.SplitListener(l)
	if err != nil {
		return "", "", fmt.Errorf("broker: %w", err)
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		return "", "", fmt.Errorf("broker: listener %q: %w", l, err)
	}
	return name, hostport, nil
}

// servedProtocol checks that listener name maps to a security protocol
// Sluice serves (PLAINTEXT, so far). With no map (a Config not made by
// config.Default), the name is the protocol, as in Kafka's default map.
func servedProtocol(cfg config.Config, name string) error {
	proto, ok := cfg.ListenerSecurityProtocolMap[name]
	if cfg.ListenerSecurityProtocolMap == nil {
		proto, ok = name, true
	}
	switch {
	case !ok:
		return fmt.Errorf("broker: listener %s is not in listener.security.protocol.map", name)
	case proto != "PLAINTEXT" && proto != "SSL" && proto != "SASL_PLAINTEXT" && proto != "SASL_SSL":
		return fmt.Errorf("broker: listener %s: unknown security protocol %s", name, proto)
	}
	return nil
}

// clientListener is the index of the listener clients and other brokers
// use: the first one that is not control.plane.listener.name.
func (b *Broker) clientListener() int {
	for i, n := range b.lnNames {
		if n != b.cfg.ControlPlaneListenerName {
			return i
		}
	}
	return 0
}

// advertised returns the address other hosts are told to use for listener
// i: its entry in advertised.listeners if there is one (for the client
// listener, else the first entry), else the listener with its port
// replaced by the bound port and an empty or wildcard host replaced by the
// machine's host name (as Kafka does).
func (b *Broker) advertised(i int) (string, int32, error) {
	adv := ""
	for _, l := range b.cfg.AdvertisedListeners {
		if name, _, _ := parseListener(l); name == b.lnNames[i] {
			adv = l
		}
	}
	if adv == "" && i == b.clientListener() && len(b.cfg.AdvertisedListeners) > 0 {
		adv = b.cfg.AdvertisedListeners[0]
	}
	if adv != "" {
		_, hp, err := parseListener(adv)
		if err != nil {
			return "", 0, err
		}
		host, ps, _ := net.SplitHostPort(hp)
		port, err := strconv.ParseInt(ps, 10, 32)
		if err != nil || port <= 0 {
			return "", 0, fmt.Errorf("broker: advertised listener %q: bad port", adv)
		}
		if host == "" {
			host = defaultHost()
		}
		return host, int32(port), nil
	}
	_, hp, _ := parseListener(b.cfg.Listeners[i])
	host, _, _ := net.SplitHostPort(hp)
	bound := b.lns[i].Addr().(*net.TCPAddr)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = defaultHost()
	}
	return host, int32(bound.Port), nil
}

func defaultHost() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// openLogDirs opens a store in each dir of log.dirs, in order, and pushes
// its close. The first dir's store must open (it is b.store, next to the
// metastore); a later dir that cannot be created, whose meta.properties
// cannot be read, or whose store does not open is offline from the start
// (logged; the replica manager serves the others, as Kafka's LogManager
// does with the dirs that fail createAndValidateLogDirs). A dir whose
// meta.properties names another broker or cluster is refused.
func (b *Broker) openLogDirs(opts Options, firstProps map[string]string, localCID string) error {
	open := opts.OpenStore
	if open == nil {
		open = func(o engine.Options) (engine.Store, error) { return engine.Open(b.cfg.StorageBackend, o) }
	}
	for i, dir := range b.cfg.LogDirs {
		path := dir
		if abs, err := filepath.Abs(dir); err == nil {
			path = abs
		}
		d := replica.LogDir{Path: path}
		offline := func(err error) error {
			if i == 0 {
				return err
			}
			b.log.Error("broker: log dir offline; serving the others", "dir", path, "err", err)
			d.Err = err
			b.dirs = append(b.dirs, d)
			return nil
		}
		if i > 0 {
			if err := os.MkdirAll(path, 0o755); err != nil {
				if err := offline(fmt.Errorf("broker: create log dir: %w", err)); err != nil {
					return err
				}
				continue
			}
			props, err := readMetaProperties(path, b.cfg.BrokerID)
			if err != nil && !errors.Is(err, errWrongBroker) {
				if err := offline(err); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			if c := props["cluster.id"]; c != "" && firstProps["cluster.id"] != "" && c != firstProps["cluster.id"] || c != "" && localCID != "" && c != localCID {
				return fmt.Errorf("broker: %s says cluster.id=%s, another cluster than the first log dir's", filepath.Join(path, metaPropertiesFile), c)
			}
		}
		// No FlushInterval and a negative RecoveryCheckpointInterval: the
		// replica manager runs those timers (engine.Maintainer).
		eopts := engine.Options{Dir: path, Logger: b.log,
			OpenSegmentsMax: b.openFilesMax, RecoveryCheckpointInterval: -1,
			DeleteDelay: b.cfg.LogSegmentDeleteDelay, TailCacheBytes: b.cfg.LogSegmentTailCacheBytes}
		if eopts.TailCacheBytes == 0 {
			eopts.TailCacheBytes = -1 // off; the engine's 0 is its default
		}
		st, err := open(eopts)
		if err == nil {
			d.Backend = b.cfg.StorageBackend
			d.Others, d.Open, err = b.openOtherBackends(path, eopts)
			if err != nil {
				st.Close()
			}
		}
		if err != nil {
			if err := offline(fmt.Errorf("broker: open storage: %w", err)); err != nil {
				return err
			}
			continue
		}
		if err := b.stack.Push("storage "+path, st.Close); err != nil {
			st.Close()
			return err
		}
		d.Store = st
		b.dirs = append(b.dirs, d)
		if i == 0 {
			b.store = st
		}
	}
	return nil
}
