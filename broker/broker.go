// Package broker is Sluice's public entry point: Start opens the metastore
// and the storage backend in the first log dir, loads the topics, listens
// on the configured listeners and serves the Kafka protocol until Close.
//
//	b, err := broker.Start(cfg, broker.Options{Logger: logger})
//	...
//	defer b.Close()
//	fmt.Println("listening on", b.Addr())
//
// Layout of the first log dir: the storage backend's files (for "segment",
// Kafka's <topic>-<partition> directories), the metastore in __sluice_meta,
// and Kafka's meta.properties (broker.id, cluster.id; a dir naming another
// broker is refused). The cluster id is kept in the metastore (checkpoint
// "cluster.id") and never changes: a single-node broker creates it once,
// a cluster member takes ZooKeeper's /cluster/id and refuses a dir kept for
// another cluster; cluster.id in the config, if set, must match it.
package broker

import (
	"cmp"
	"context"
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

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/kconn"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/server"

	// The storage backends register themselves.
	_ "github.com/sluice/sluice/engine/memlog"
	_ "github.com/sluice/sluice/engine/pebblelog"
	_ "github.com/sluice/sluice/segment"
)

// MetaDirName is the metastore's directory inside the first log dir.
const MetaDirName = "__sluice_meta"

// clusterIDCheckpoint names the metastore checkpoint holding the cluster id.
const clusterIDCheckpoint = "cluster.id"

// Options are the broker's non-config dependencies.
type Options struct {
	Logger *slog.Logger // nil: slog.Default()
	// UI is the web console's files served at / by the HTTP side; nil
	// serves the console embedded in the binary (package console/ui).
	UI fs.FS
}

// Broker is a running broker: on its own, or with zookeeper.connect set a
// member of a cluster (node).
type Broker struct {
	cfg   config.Config
	log   *slog.Logger
	meta  *metastore.Store
	store engine.Store
	srv   *server.Server
	node  *cluster.Node // cluster mode only (cluster.go)
	lns   []net.Listener
	http  httpState // http.go
	// srvReady is srv once server.New has loaded the topics (log recovery
	// done); recoveringPartitions is how many partitions the metastore
	// lists, -1 until read. /readyz reads both (http.go).
	srvReady             atomic.Pointer[server.Server]
	recoveringPartitions atomic.Int64
	// secCancel stops the watch of SCRAM credentials; aclCancel stops the
	// authorizer following its store; aclStore is the cluster ACL store,
	// nil in single-node mode. stopSecurity uses all three.
	secCancel context.CancelFunc
	aclCancel func()
	aclStore  *cluster.ACLStore
	// lnNames are the listener names of lns (config.SplitListener), in order.
	lnNames []string
	addr    string
	cid     string

	stopRetention chan struct{}
	bg            sync.WaitGroup // Serve loops, the retention loop, the SCRAM watch

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

// Start opens storage and starts serving. On error everything opened so far
// is closed again.
func Start(cfg config.Config, opts Options) (b *Broker, err error) {
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
	if len(cfg.LogDirs) > 1 {
		log.Warn("broker: only the first log dir is used", "log.dirs", cfg.LogDirs)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: create log dir: %w", err)
	}
	b = &Broker{cfg: cfg, log: log, stopRetention: make(chan struct{}), closed: make(chan struct{})}
	b.recoveringPartitions.Store(-1)
	opened := b // b is nil on the error returns below
	defer func() {
		if err != nil {
			opened.stopHTTP()
			opened.closeStores()
		}
	}()
	// The HTTP side serves /healthz and /readyz while storage recovers.
	if err := b.startHTTP(opts); err != nil {
		return nil, err
	}

	if b.meta, err = metastore.Open(filepath.Join(dir, MetaDirName), metastore.Options{Logger: log}); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
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
	checkLimits(cfg, log)
	if b.store, err = engine.Open(cfg.StorageBackend, engine.Options{Dir: dir, Logger: log, FlushInterval: cfg.LogFlushInterval,
		OpenSegmentsMax: cfg.LogSegmentOpenFilesMax, RecoveryCheckpointInterval: recoveryCheckpointInterval(cfg),
		DeleteDelay: cfg.LogSegmentDeleteDelay}); err != nil {
		return nil, fmt.Errorf("broker: open storage: %w", err)
	}

	for _, l := range cfg.Listeners {
		name, hostport, err := parseListener(l)
		if err == nil {
			err = servedProtocol(cfg, name)
		}
		if err != nil {
			b.closeListeners()
			return nil, err
		}
		ln, err := net.Listen("tcp", hostport)
		if err != nil {
			b.closeListeners()
			return nil, fmt.Errorf("broker: listen on %s: %w", l, err)
		}
		b.lns = append(b.lns, ln)
		b.lnNames = append(b.lnNames, name)
	}
	client := b.clientListener()
	host, port, err := b.advertised(client)
	if err != nil {
		b.closeListeners()
		return nil, err
	}
	b.addr = b.lns[client].Addr().String()
	if cfg.InterBrokerListenerName == "" {
		cfg.InterBrokerListenerName = b.lnNames[client]
		b.cfg.InterBrokerListenerName = cfg.InterBrokerListenerName
	}
	var interBroker kconn.Security // followers' connections (cluster mode)
	if !cfg.SingleNode() {
		if interBroker, err = b.connSecurity(cfg.InterBrokerListenerName); err != nil {
			b.closeListeners()
			return nil, err
		}
	}

	if cfg.SingleNode() {
		b.cid = localCID
		if b.cid == "" {
			b.cid = cluster.NewClusterID()
		}
	} else {
		// The cluster's id is /cluster/id; startNode refuses a data dir
		// that belongs to another cluster.
		var eps []cluster.Endpoint
		for i, name := range b.lnNames {
			h, p, err := b.advertised(i)
			if err != nil {
				b.closeListeners()
				return nil, err
			}
			eps = append(eps, cluster.Endpoint{Listener: name, Host: h, Port: p, Protocol: cfg.ListenerProtocol(name)})
		}
		// The controller's requests and ControlledShutdown travel on the
		// control-plane listener, else on the inter-broker one.
		ctlSec, err := b.connSecurity(cmp.Or(cfg.ControlPlaneListenerName, cfg.InterBrokerListenerName))
		if err != nil {
			b.closeListeners()
			return nil, err
		}
		if b.node, err = startNode(cfg, host, port, eps, ctlSec, localCID, log); err != nil {
			b.closeListeners()
			if errors.Is(err, cluster.ErrInconsistentClusterID) {
				// Kafka refuses too (InconsistentClusterIdException). Data
				// dirs written in cluster mode before /cluster/id was kept
				// hold a per-broker id and land here once.
				return nil, fmt.Errorf("broker: %w (log dir %s belongs to that other cluster: empty it to join this one, or point zookeeper.connect at its own ZooKeeper)", err, dir)
			}
			return nil, fmt.Errorf("broker: %w", err)
		}
		b.cid = b.node.ClusterID()
	}
	if err = adoptClusterID(b.meta, dir, props, cfg.BrokerID, b.cid); err != nil {
		b.closeNode()
		b.closeListeners()
		return nil, err
	}
	secCtx, secCancel := context.WithCancel(context.Background())
	b.secCancel = secCancel
	creds := b.credentials(secCtx)
	secs := map[string]server.ListenerSecurity{}
	for i, name := range b.lnNames {
		ln, sec, err := b.securedListener(b.lns[i], name, creds)
		if err == nil {
			sec.Host, sec.Port, err = b.advertised(i)
		}
		if err != nil {
			b.abortSecurity()
			return nil, err
		}
		b.lns[i], secs[name] = ln, sec
	}
	authz, acls, err := b.authorizer(secCtx)
	if err != nil {
		b.abortSecurity()
		return nil, err
	}
	b.srv, err = server.New(server.Options{
		Config: cfg, Logger: log, Meta: b.meta, Store: b.store,
		ClusterID: b.cid, AdvertisedHost: host, AdvertisedPort: port,
		Cluster: b.node, Listeners: secs, Authorizer: authz, ACLs: acls, Credentials: creds,
		InterBrokerSecurity: interBroker, Metrics: b.http.metrics,
	})
	if err != nil {
		b.abortSecurity()
		return nil, err
	}
	if err := b.attachHTTP(authz, creds); err != nil {
		b.srv.Close()
		b.abortSecurity()
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
	b.srvReady.Store(b.srv) // the Kafka listeners serve: /readyz looks further
	log.Info("broker: started", "broker.id", cfg.BrokerID, "cluster.id", b.cid, "addr", b.addr,
		"advertised", net.JoinHostPort(host, strconv.Itoa(int(port))), "storage.backend", cfg.StorageBackend, "log.dir", dir)
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

// Close shuts down gracefully: stop accepting, answer the requests already
// read, close every partition and then the store (which records a clean
// shutdown) and the metastore. Safe to call more than once; later calls
// return the first result.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.stopHTTP()
		close(b.stopRetention)
		b.controlledShutdown()
		var errs []error
		if err := b.srv.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := b.stopSecurity(); err != nil {
			errs = append(errs, err)
		}
		b.closeNode()
		b.bg.Wait()
		if err := b.closeStores(); err != nil {
			errs = append(errs, err)
		}
		b.closeErr = errors.Join(errs...)
		if b.closeErr != nil {
			b.log.Error("broker: close", "err", b.closeErr)
		} else {
			b.log.Info("broker: stopped")
		}
		close(b.closed)
	})
	<-b.closed
	return b.closeErr
}

// abortSecurity undoes Start from the security setup on: before any
// Serve loop runs, so b.bg holds only the SCRAM watch.
func (b *Broker) abortSecurity() {
	if err := b.stopSecurity(); err != nil {
		b.log.Warn("broker: start failed; closing", "err", err)
	}
	b.closeNode()
	b.bg.Wait()
	b.closeListeners()
}

// Wait blocks until Close has finished.
func (b *Broker) Wait() { <-b.closed }

func (b *Broker) closeStores() error {
	var errs []error
	if b.store != nil {
		if err := b.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("broker: close storage: %w", err))
		}
	}
	if b.meta != nil {
		if err := b.meta.Close(); err != nil {
			errs = append(errs, fmt.Errorf("broker: close metastore: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (b *Broker) closeListeners() {
	for _, ln := range b.lns {
		ln.Close()
	}
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
