package server

// Dynamic broker configs (KIP-226): AlterConfigs and
// IncrementalAlterConfigs on a BROKER resource change the keys package
// config marks dynamic, for this broker (resource name = its id) or as
// the cluster-wide default (resource name ""), without a restart.
//
// Storage: in a cluster, ZooKeeper's /config/brokers/<id> and
// /config/brokers/<default> with Kafka's change notifications (package
// cluster), followed by every broker's watch (brokerConfigLoop); on a
// single node, the metastore (checkpoint "config/brokers/<entity>", the
// same JSON). The broker reads both layers at start (New) and on every
// notification, and applies the result (reloadBrokerConfigs):
//
//   - the topic defaults (log.retention.ms, log.segment.bytes,
//     message.max.bytes, min.insync.replicas, log.cleanup.policy, ...):
//     every local topic's effective config is recomputed and applied to
//     its logs and partitions (replica.Manager.ReconfigureTopicsLocked),
//     as Kafka's DynamicLogConfig does;
//   - the log cleaner's keys: the cleaner restarts with them
//     (replica.Manager.ReconfigureCleaner), as Kafka's LogCleaner does;
//   - the connection limits (max.connections, max.connection.creation.rate,
//     max.connections.per.ip and their listener.name.<l>. forms): the
//     accept loop's limits (connLimits.reconfigure);
//   - unclean.leader.election.enable: the controller's elections (cluster);
//   - a TLS listener's keystore and truststore locations
//     (listener.name.<l>.ssl.keystore.location, per broker): the listener's
//     certificates, through Options.ReconfigureListeners, checked before
//     the alter is stored (the new stores must load and name the same
//     subject, as Kafka's SslFactory requires);
//   - the replication throttle rates (leader.replication.throttled.rate,
//     follower.replication.throttled.rate): the replication quotas
//     (replQuotas.reconfigure), enforced by Fetch and the fetchers;
//   - replica.alter.log.dirs.io.max.bytes.per.second: the copy rate of
//     the moves between log dirs, those in progress included
//     (replica.Manager.SetAlterLogDirsRate);
//   - the rest (thread counts Sluice sizes itself) are stored and
//     described.
//
// An invalid stored entry (written by another tool) is ignored with an
// error log, as Kafka ignores it; a stored set that breaks a relation
// between keys (message.max.bytes above socket.request.max.bytes) is not
// applied and the broker keeps its current config.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/metastore"
)

// entityConfigStore keeps the configs of one kind of config entity, by
// name: the dynamic broker configs of each broker id and of
// config.DefaultEntity, or the configs of each group. Maps returned are the
// caller's.
type entityConfigStore interface {
	// get returns name's configs; none stored is an empty map.
	get(name string) (map[string]string, error)
	// set replaces name's configs (validated by the caller) and, in a
	// cluster, tells every broker.
	set(ctx context.Context, name string, configs map[string]string) error
}

// zkEntityConfigs keeps them in ZooKeeper, through the cluster node's
// accessors of one entity type.
type zkEntityConfigs struct {
	load  func(name string) (map[string]string, error)
	store func(ctx context.Context, name string, configs map[string]string) error
}

func (z zkEntityConfigs) get(name string) (map[string]string, error) { return z.load(name) }

func (z zkEntityConfigs) set(ctx context.Context, name string, configs map[string]string) error {
	return z.store(ctx, name, configs)
}

// metaEntityConfigs keeps them in the metastore, each as the JSON of
// Kafka's config znode under dir ("config/brokers/", "config/groups/").
type metaEntityConfigs struct {
	meta *metastore.Store
	dir  string
}

// brokerConfigJSON is the stored form: {"version":1,"config":{...}}.
type brokerConfigJSON struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

func (m metaEntityConfigs) get(name string) (map[string]string, error) {
	b, err := m.meta.GetCheckpoint(m.dir + name)
	if errors.Is(err, metastore.ErrNotFound) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	var bc brokerConfigJSON
	if err := json.Unmarshal(b, &bc); err != nil {
		return nil, fmt.Errorf("server: stored config %s%s: %w", m.dir, name, err)
	}
	if bc.Config == nil {
		bc.Config = map[string]string{}
	}
	return bc.Config, nil
}

func (m metaEntityConfigs) set(_ context.Context, name string, configs map[string]string) error {
	if configs == nil {
		configs = map[string]string{}
	}
	b, err := json.Marshal(brokerConfigJSON{Version: 1, Config: configs})
	if err != nil {
		return err
	}
	return m.meta.PutCheckpoint(m.dir+name, b)
}

// dynamicConfigs is the broker's dynamic config state.
type dynamicConfigs struct {
	// mu serializes reloads and the alters' read-modify-write of a layer.
	mu    sync.Mutex
	store entityConfigStore
	// cur is the effective config: the static one with the dynamic
	// layers applied. Never nil after New; replaced, never modified.
	cur atomic.Pointer[config.Config]
	// unclean, when set, hands unclean.leader.election.enable to the
	// controller (cluster mode).
	unclean func(bool)
	// rawDef and rawOwn are the layers last read, as stored (cur's may
	// lack entries WithDynamic skipped): a reload finding the same ones
	// does nothing. REQUIRES: mu held.
	rawDef, rawOwn map[string]string
}

// currentConfig returns the broker's effective config. Read-only.
func (s *Server) currentConfig() *config.Config { return s.dyn.cur.Load() }

// initDynamicConfigs reads the stored layers and applies them, before the
// replica manager opens any partition (New). A store that cannot be read
// leaves the static config, logged.
func (s *Server) initDynamicConfigs(store entityConfigStore, unclean func(bool)) {
	s.dyn.store, s.dyn.unclean = store, unclean
	c := s.cfg
	s.dyn.cur.Store(&c)
	s.topicDefaults.Store(newTopicDefaults(&c))
	s.reloadBrokerConfigs()
}

// reloadBrokerConfigs reads both layers from the store and applies what
// changed. Safe for concurrent use.
func (s *Server) reloadBrokerConfigs() {
	s.dyn.mu.Lock()
	defer s.dyn.mu.Unlock()
	def, err := s.dyn.store.get(config.DefaultEntity)
	if err != nil {
		s.log.Error("server: read dynamic broker configs; keeping the current ones", "entity", config.DefaultEntity, "err", err)
		return
	}
	own, err := s.dyn.store.get(strconv.Itoa(int(s.nodeID)))
	if err != nil {
		s.log.Error("server: read dynamic broker configs; keeping the current ones", "entity", s.nodeID, "err", err)
		return
	}
	s.applyBrokerConfigsLocked(def, own)
}

// applyBrokerConfigsLocked makes the static config with layers def and
// own the effective one and reconfigures what depends on a key that
// changed. REQUIRES: s.dyn.mu held; not s.rm.Lock.
func (s *Server) applyBrokerConfigsLocked(def, own map[string]string) {
	old := s.currentConfig()
	if s.dyn.rawDef != nil && maps.Equal(def, s.dyn.rawDef) && maps.Equal(own, s.dyn.rawOwn) {
		return
	}
	s.dyn.rawDef, s.dyn.rawOwn = maps.Clone(def), maps.Clone(own)
	if s.dyn.rawDef == nil {
		s.dyn.rawDef = map[string]string{}
	}
	if oldDef, oldOwn := old.DynamicLayers(); len(def)+len(own)+len(oldDef)+len(oldOwn) == 0 {
		return // none stored, none applied: the static config stands
	}
	nc, err := s.cfg.WithDynamic(def, own)
	if err != nil {
		s.log.Error("server: dynamic broker configs ignored", "err", err)
	}
	if err := nc.Validate(); err != nil {
		s.log.Error("server: dynamic broker configs not applied; keeping the current ones", "err", err)
		return
	}
	s.dyn.cur.Store(&nc)
	oldTD, newTD := s.topicDefaults.Load(), newTopicDefaults(&nc)
	s.topicDefaults.Store(newTD)
	if s.rm != nil && topicDefaultsChanged(oldTD, newTD, old, &nc) {
		s.rm.Lock()
		err := s.rm.ReconfigureTopicsLocked()
		s.rm.Unlock()
		if err != nil {
			s.log.Error("server: apply new topic defaults", "err", err)
		}
	}
	if s.rm != nil {
		if err := s.rm.ReconfigureCleaner(&nc); err != nil {
			s.log.Error("server: restart the log cleaner with new configs", "err", err)
		}
	}
	if s.reListeners != nil && listenerStoresChanged(old, &nc) {
		if err := s.reListeners(&nc, false); err != nil {
			s.log.Error("server: new listener certificates not applied; keeping the current ones", "err", err)
		}
	}
	if connLimitsChanged(old, &nc) {
		s.limits.reconfigure(&nc, s.log)
	}
	s.repl.reconfigure(&nc)
	if s.rm != nil {
		s.rm.SetAlterLogDirsRate(nc.ReplicaAlterLogDirsIOMaxBytesPerSecond)
	}
	if s.dyn.unclean != nil {
		s.dyn.unclean(nc.UncleanLeaderElection)
	}
	d, o := nc.DynamicLayers()
	s.log.Info("server: applied dynamic broker configs", "default", redacted(d), "broker", redacted(o))
}

// topicDefaultsChanged reports whether what a topic's effective config
// is made of (effectiveConfig) differs between a and b: a topic key's
// broker value, or the index keys every log takes from the broker.
func topicDefaultsChanged(oldTD, newTD *topicDefaults, a, b *config.Config) bool {
	if a.LogIndexIntervalBytes != b.LogIndexIntervalBytes || a.LogIndexSizeMaxBytes != b.LogIndexSizeMaxBytes {
		return true
	}
	for k, v := range *newTD {
		if (*oldTD)[k].v != v.v {
			return true
		}
	}
	return false
}

// redacted returns m with sensitive values hidden, for logs.
func redacted(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if bk, ok := config.Lookup(k); ok && bk.Sensitive {
			v = "[hidden]"
		}
		out[k] = v
	}
	return out
}

// connLimitsChanged reports whether a connection limit differs between a
// and b.
func connLimitsChanged(a, b *config.Config) bool {
	if a.MaxConnections != b.MaxConnections || a.MaxConnectionCreationRate != b.MaxConnectionCreationRate || a.MaxConnectionsPerIP != b.MaxConnectionsPerIP {
		return true
	}
	for _, l := range a.Listeners {
		name, _, _ := config.SplitListener(l)
		for _, key := range []string{"max.connections", "max.connection.creation.rate"} {
			an, aok := a.ListenerLimit(name, key)
			bn, bok := b.ListenerLimit(name, key)
			if an != bn || aok != bok {
				return true
			}
		}
	}
	return false
}

// namesListenerStore reports whether props sets a listener's keystore or
// truststore location (the per-broker dynamic keys).
func namesListenerStore(props map[string]string) bool {
	for name := range props {
		if config.DynamicScope(name) == config.PerBroker {
			return true
		}
	}
	return false
}

// listenerStoresChanged reports whether a listener's keystore or
// truststore location differs between a and b.
func listenerStoresChanged(a, b *config.Config) bool {
	for _, l := range a.Listeners {
		name, _, _ := config.SplitListener(l)
		for _, key := range []string{"ssl.keystore.location", "ssl.truststore.location"} {
			av, _ := a.ListenerProperty(name, key)
			bv, _ := b.ListenerProperty(name, key)
			if av != bv {
				return true
			}
		}
	}
	return false
}

// reconfigure applies cfg's connection limits (a dynamic broker config
// changed one) to new accepts; connections already open stay open, as in
// Kafka. A raised limit wakes the accepts waiting for a slot. Before the
// first Serve it initializes the limits from cfg (Serve's init then
// finds them made).
func (l *connLimits) reconfigure(cfg *config.Config, log *slog.Logger) {
	l.init(cfg, log) // once: after it, every field below is read under l.mu
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg = cfg
	l.maxTotal = int(cfg.MaxConnections)
	l.rate = newRateLimit(cfg.MaxConnectionCreationRate)
	l.maxPerIP = int(cfg.MaxConnectionsPerIP)
	for name, q := range l.listeners {
		q.max = math.MaxInt32
		if n, ok := cfg.ListenerLimit(name, "max.connections"); ok {
			q.max = int(n)
		}
		q.rate = nil
		if n, ok := cfg.ListenerLimit(name, "max.connection.creation.rate"); ok {
			q.rate = newRateLimit(n)
		}
	}
	l.freeLocked()
	log.Info("server: connection limits reconfigured", "max.connections", cfg.MaxConnections,
		"max.connection.creation.rate", cfg.MaxConnectionCreationRate, "max.connections.per.ip", cfg.MaxConnectionsPerIP)
}

// brokerConfigLoop applies the dynamic broker config changes notified
// through ZooKeeper until close (cluster mode).
func (zp *zkPlane) brokerConfigLoop() {
	defer zp.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-zp.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	self := strconv.Itoa(int(zp.s.nodeID))
	zp.node.WatchBrokerConfigChanges(ctx, func(entity string) {
		if entity == self || entity == config.DefaultEntity {
			zp.s.reloadBrokerConfigs()
		}
	}, zp.s.reloadBrokerConfigs)
}

// brokerEntity checks the name of a BROKER resource being altered: "" is
// the cluster-wide default, else it must be this broker's id, as Kafka's
// ConfigAdminManager.validateResourceNameIsCurrentNodeId answers
// (INVALID_REQUEST). perBroker is false for the default.
func (s *Server) brokerEntity(name string) (entity string, perBroker bool, err error) {
	if name == "" {
		return config.DefaultEntity, false, nil
	}
	id, perr := strconv.ParseInt(name, 10, 32)
	if perr != nil {
		return "", false, fmt.Errorf("%w: Node id must be an integer, but it is: %s", errInvalidRequest, name)
	}
	if int32(id) != s.nodeID {
		return "", false, fmt.Errorf("%w: Unexpected broker id, expected %d, but received %s", errInvalidRequest, s.nodeID, name)
	}
	return name, true, nil
}

// alterBrokerConfigs serves one BROKER resource of AlterConfigs or
// IncrementalAlterConfigs: next turns the stored layer (a copy, never
// nil) into the new one, which is checked as Kafka's ConfigAdminManager
// does (INVALID_REQUEST with Kafka's message), then against the relations
// between keys with the other layer, and unless validateOnly stored and
// applied. REQUIRES: not s.rm.Lock.
func (s *Server) alterBrokerConfigs(name string, validateOnly bool, next func(cur map[string]string) (map[string]string, error)) error {
	entity, perBroker, err := s.brokerEntity(name)
	if err != nil {
		return err
	}
	s.dyn.mu.Lock()
	defer s.dyn.mu.Unlock()
	cur, err := s.dyn.store.get(entity)
	if err != nil {
		return err
	}
	props, err := next(maps.Clone(cur))
	if err != nil {
		return err
	}
	if err := config.CheckDynamic(props, perBroker); err != nil {
		return fmt.Errorf("%w: %s", errInvalidRequest, err.Error())
	}
	def, own := s.currentConfig().DynamicLayers()
	if perBroker {
		own = props
	} else {
		def = props
	}
	nc, _ := s.cfg.WithDynamic(def, own)
	if err := nc.Validate(); err != nil {
		return fmt.Errorf("%w: %s", errInvalidRequest, strings.TrimPrefix(err.Error(), config.ErrConfig.Error()+": "))
	}
	if err := config.CheckReconfiguration(s.currentConfig(), &nc); err != nil {
		return fmt.Errorf("%w: Invalid dynamic configuration: %v", errInvalidRequest, err)
	}
	if s.reListeners != nil && listenerStoresChanged(s.currentConfig(), &nc) {
		// Kafka's processReconfiguration: the new stores must load.
		if err := s.reListeners(&nc, true); err != nil {
			return fmt.Errorf("%w: Invalid dynamic configuration: %v", errInvalidRequest, err)
		}
	}
	if validateOnly {
		return nil
	}
	if perBroker && s.reListeners != nil && namesListenerStore(props) && !listenerStoresChanged(s.currentConfig(), &nc) {
		// The same keystore or truststore path again: Kafka's
		// reloadUpdatedFilesWithoutConfigChange reloads files rewritten in
		// place (certificate rotation without a new path).
		if err := s.reListeners(&nc, false); err != nil {
			return fmt.Errorf("%w: Invalid dynamic configuration: %v", errInvalidRequest, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), configWriteTimeout)
	defer cancel()
	if err := s.dyn.store.set(ctx, entity, props); err != nil {
		return err
	}
	// Applied at once here; other brokers apply it on the notification
	// (this one's watch then finds nothing new).
	s.applyBrokerConfigsLocked(def, own)
	return nil
}

// checkConfigNames refuses a resource naming a config twice, or with a
// null value where one is needed (Kafka's ConfigAdminManager.preprocess,
// INVALID_REQUEST): nullOK says which entries may be null.
func checkConfigNames(names []string, null []bool, nullOK func(i int) bool) error {
	seen := make(map[string]bool, len(names))
	var nulls []string
	for i, n := range names {
		if seen[n] {
			return fmt.Errorf("%w: Error due to duplicate config keys", errInvalidRequest)
		}
		seen[n] = true
		if null[i] && !nullOK(i) {
			nulls = append(nulls, n)
		}
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: Null value not supported for : %s", errInvalidRequest, strings.Join(nulls, ", "))
	}
	return nil
}

// brokerListOp applies an APPEND or SUBTRACT operation to a broker list
// key in props, from its value there or its default (Kafka's
// prepareIncrementalConfigs). Unknown and non-list keys are INVALID_CONFIG.
func brokerListOp(props map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	k, ok := config.Lookup(c.Name)
	if !ok {
		return fmt.Errorf("%w: Unknown config name: %s", errInvalidConfig, c.Name)
	}
	if k.Type != config.TypeList {
		verb := "append"
		if c.Op == opSubtract {
			verb = "subtract"
		}
		return fmt.Errorf("%w: Config value %s is not allowed for config key: %s", errInvalidConfig, verb, c.Name)
	}
	cur, ok := props[c.Name]
	if !ok && !k.NoDefault {
		cur = k.Default
	}
	items := splitList(cur)
	for _, v := range splitList(*c.Value) {
		i := slices.Index(items, v)
		switch {
		case c.Op == opAppend && i < 0:
			items = append(items, v)
		case c.Op == opSubtract && i >= 0:
			items = slices.Delete(items, i, i+1)
		}
	}
	props[c.Name] = strings.Join(items, ",")
	return nil
}
