package cluster

// Client quotas in ZooKeeper, in Kafka's layout (AdminZkClient,
// ZkAdminManager.alterClientQuotas, ConfigEntityName):
//
//	/config/users/<user>                      {"version":1,"config":{"producer_byte_rate":"1048576"}}
//	/config/users/<user>/clients/<client-id>  the same, for the pair
//	/config/clients/<client-id>               the same, for a client id
//	/config/changes/config_change_<seq>       {"version":2,"entity_path":"users/<user>/clients/<client-id>"}
//
// <user> and <client-id> are sanitized as Kafka's Sanitizer does (see
// sanitizeUser), or <default> for the default entity. A user's config is
// shared with its SCRAM credentials (scram.go): every write here is a
// read-modify-write of the znode guarded by its version that keeps every
// other key, and goes in one multi with its notification. Values are
// strings, as Kafka writes them: a byte rate as a long ("1048576"), a
// percentage or mutation rate as Java's Double.toString ("200.0").

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/sluice/sluice/auth/sasl"
	"github.com/sluice/sluice/quota"
)

const configClientsPath = "/config/clients"

// QuotaStore keeps client quotas in ZooKeeper. Safe for concurrent use.
type QuotaStore struct{ n *Node }

// QuotaStore returns the cluster's client quota store.
func (n *Node) QuotaStore() *QuotaStore { return &QuotaStore{n} }

func quotaComponent(c quota.Component) string {
	if c.Default {
		return quota.DefaultName
	}
	return sanitizeUser(c.Name)
}

func parseQuotaComponent(name string) (quota.Component, error) {
	if name == quota.DefaultName {
		return quota.Default, nil
	}
	s, err := desanitizeUser(name)
	if err != nil || s == "" {
		return quota.Component{}, fmt.Errorf("%w: entity name %q is not URL-encoded", ErrCorruptZnode, name)
	}
	return quota.Named(s), nil
}

// quotaEntityPath is e's entity path below /config, as notifications
// name it.
func quotaEntityPath(e quota.Entity) string {
	switch {
	case e.User.Set && e.ClientID.Set:
		return "users/" + quotaComponent(e.User) + "/clients/" + quotaComponent(e.ClientID)
	case e.User.Set:
		return "users/" + quotaComponent(e.User)
	}
	return "clients/" + quotaComponent(e.ClientID)
}

// parseQuotaEntityPath is quotaEntityPath's inverse; ok is false for a
// path that names no quota entity (topics/..., brokers/...).
func parseQuotaEntityPath(p string) (quota.Entity, bool, error) {
	parts := strings.Split(p, "/")
	var e quota.Entity
	var err error
	switch {
	case len(parts) == 2 && parts[0] == "users" && parts[1] != "":
		e.User, err = parseQuotaComponent(parts[1])
	case len(parts) == 2 && parts[0] == "clients" && parts[1] != "":
		e.ClientID, err = parseQuotaComponent(parts[1])
	case len(parts) == 4 && parts[0] == "users" && parts[2] == "clients" && parts[1] != "" && parts[3] != "":
		if e.User, err = parseQuotaComponent(parts[1]); err == nil {
			e.ClientID, err = parseQuotaComponent(parts[3])
		}
	default:
		return e, false, nil
	}
	return e, err == nil, err
}

// javaDouble formats x as Java's Double.toString, which Kafka uses for
// DOUBLE quota values.
func javaDouble(x float64) string {
	if a := math.Abs(x); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(x, 'E', -1, 64) // 1.5E+07
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(n)
}

// quotaValues reads the quota keys of an entity config; other keys
// (SCRAM credentials) are ignored, and so is a quota value that does not
// parse as a positive number (logged by the caller's view: Kafka fails
// the whole config then; one bad key should not lift the others).
func quotaValues(cfg map[string]string) quota.Values {
	var v quota.Values
	for t, k := range quota.Keys {
		s, ok := cfg[k]
		if !ok {
			continue
		}
		if x, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && x > 0 && !math.IsInf(x, 0) {
			v[t] = x
		}
	}
	return v
}

// withQuotaValues returns cfg with its quota keys replaced by v's.
func withQuotaValues(cfg map[string]string, v quota.Values) map[string]string {
	for t, k := range quota.Keys {
		switch x := v[t]; {
		case x <= 0:
			delete(cfg, k)
		case t == int(quota.Produce) || t == int(quota.Fetch):
			cfg[k] = strconv.FormatInt(int64(x), 10)
		default:
			cfg[k] = javaDouble(x)
		}
	}
	return cfg
}

// readEntityConfig returns the config in znode p and its version; a
// missing znode is an empty config with version -1, and so is a znode
// with no data (Kafka creates the parents of /config/users/<u>/clients/<c>
// empty).
func (q *QuotaStore) readEntityConfig(p string) (map[string]string, int32, error) {
	data, st, err := q.n.zk.get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, -1, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: read %s: %w", p, err)
	}
	if len(data) == 0 {
		return map[string]string{}, st.Version, nil
	}
	cfg, err := sasl.DecodeUserConfig(data) // the entity config format of every /config znode
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %w", ErrCorruptZnode, p, err)
	}
	return cfg, st.Version, nil
}

// Get returns e's quotas (empty: none).
func (q *QuotaStore) Get(e quota.Entity) (quota.Values, error) {
	cfg, _, err := q.readEntityConfig("/config/" + quotaEntityPath(e))
	if err != nil {
		return quota.Values{}, err
	}
	return quotaValues(cfg), nil
}

// List returns every entity with at least one quota.
func (q *QuotaStore) List() (map[quota.Entity]quota.Values, error) {
	out := map[quota.Entity]quota.Values{}
	add := func(e quota.Entity, p string) error {
		cfg, _, err := q.readEntityConfig(p)
		if err != nil {
			return err
		}
		if v := quotaValues(cfg); !v.Empty() {
			out[e] = v
		}
		return nil
	}
	children := func(p string) ([]string, error) {
		names, err := q.n.zk.children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: list %s: %w", p, err)
		}
		return names, nil
	}
	clients, err := children(configClientsPath)
	if err != nil {
		return nil, err
	}
	for _, name := range clients {
		c, err := parseQuotaComponent(name)
		if err != nil {
			return nil, err
		}
		if err := add(quota.Entity{ClientID: c}, configClientsPath+"/"+name); err != nil {
			return nil, err
		}
	}
	users, err := children(configUsersPath)
	if err != nil {
		return nil, err
	}
	for _, name := range users {
		u, err := parseQuotaComponent(name)
		if err != nil {
			return nil, err
		}
		up := configUsersPath + "/" + name
		if err := add(quota.Entity{User: u}, up); err != nil {
			return nil, err
		}
		pairs, err := children(up + "/clients")
		if err != nil {
			return nil, err
		}
		for _, cname := range pairs {
			c, err := parseQuotaComponent(cname)
			if err != nil {
				return nil, err
			}
			if err := add(quota.Entity{User: u, ClientID: c}, up+"/clients/"+cname); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Alter rewrites e's quotas with change (given the current ones), keeping
// every other key of the znode, and notifies every broker in the same
// multi; it retries when another writer (a SCRAM change, another broker)
// got there first. A missing znode is created, and for a (user, client
// id) pair so are /config/users/<user> (an empty config) and its
// clients/ child.
func (q *QuotaStore) Alter(e quota.Entity, change func(quota.Values) (quota.Values, error)) error {
	if !e.Valid() {
		return fmt.Errorf("cluster: empty quota entity")
	}
	return q.alterEntityConfig(quotaEntityPath(e), func(cfg map[string]string) (map[string]string, error) {
		v, err := change(quotaValues(cfg))
		if err != nil {
			return nil, err
		}
		return withQuotaValues(cfg, v), nil
	}, func() error { return q.ensureParents(e) })
}

// alterEntityConfig rewrites the config znode /config/<ep> with change
// (given its current keys, an empty map for a missing znode; it may
// modify and return them) and notifies every broker of ep in the same
// multi; it retries when another writer (a SCRAM change, another broker)
// got there first. A missing znode is created after ensureParents has
// created what it needs above it.
func (q *QuotaStore) alterEntityConfig(ep string, change func(map[string]string) (map[string]string, error), ensureParents func() error) error {
	p := "/config/" + ep
	note := []byte(`{"version":2,"entity_path":"` + ep + `"}`)
	for attempt := 0; ; attempt++ {
		if err := q.n.ctx.Err(); err != nil {
			return ErrClosed
		}
		cfg, version, err := q.readEntityConfig(p)
		if err != nil {
			return err
		}
		if cfg, err = change(cfg); err != nil {
			return err
		}
		data := sasl.EncodeUserConfig(cfg)
		var ops []any
		if version < 0 {
			if err := ensureParents(); err != nil {
				return err
			}
			ops = append(ops, &zk.CreateRequest{Path: p, Data: data})
		} else {
			ops = append(ops, &zk.SetDataRequest{Path: p, Data: data, Version: version})
		}
		ops = append(ops, &zk.CreateRequest{Path: configChangesPath + "/" + configChangePrefix, Data: note, Flags: zk.FlagSequence})
		_, err = q.n.zk.multi(ops...)
		if err == nil {
			return nil
		}
		if (errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode)) && attempt < 10 {
			continue // raced with another writer: read again
		}
		return fmt.Errorf("cluster: write %s: %w", p, err)
	}
}

// ensureParents creates what e's znode needs above it. The parent user
// config of a pair gets a valid empty config, so readers of
// /config/users (SCRAM) never meet an empty znode of ours.
func (q *QuotaStore) ensureParents(e quota.Entity) error {
	z := q.n.zk
	if !e.User.Set {
		return z.ensurePath(configClientsPath)
	}
	if err := z.ensurePath(configUsersPath); err != nil {
		return fmt.Errorf("cluster: create %s: %w", configUsersPath, err)
	}
	if !e.ClientID.Set {
		return nil
	}
	up := configUsersPath + "/" + quotaComponent(e.User)
	if _, err := z.create(up, sasl.EncodeUserConfig(nil), 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("cluster: create %s: %w", up, err)
	}
	if err := z.ensurePath(up + "/clients"); err != nil {
		return fmt.Errorf("cluster: create %s/clients: %w", up, err)
	}
	return nil
}

// WatchQuotaChanges calls fn with the entity of every config change
// notification that names a user, a client id or a pair, in sequence
// order, until ctx ends or the node closes; resync (may be nil) after the
// first listing and whenever the watch may have missed a change, as
// WatchTopicConfigChanges. fn should re-read the entity (Get). It blocks:
// run it on its own goroutine.
func (n *Node) WatchQuotaChanges(ctx context.Context, fn func(quota.Entity), resync func()) {
	w := changeWatch{
		dir:         configChangesPath,
		prefix:      configChangePrefix,
		last:        -1,
		resyncFirst: true,
		handle: func(znode string, data []byte) error {
			var cn configChangeNote
			if err := jsonUnmarshal(data, &cn); err != nil {
				n.log.Warn("cluster: bad config change notification", "znode", znode, "err", err)
				return nil
			}
			e, ok, err := parseQuotaEntityPath(cn.EntityPath)
			if err != nil {
				n.log.Warn("cluster: config change names a bad quota entity", "znode", znode, "entity_path", cn.EntityPath, "err", err)
				return nil
			}
			if ok {
				fn(e)
			}
			return nil
		},
	}
	if resync != nil {
		w.resync = func() error { resync(); return nil }
	}
	n.watchChanges(ctx, w)
}

// ip quota entities (KIP-612), in Kafka's layout:
//
//	/config/ips/<ip>                     {"version":1,"config":{"connection_creation_rate":"10"}}
//	/config/ips/<default>                the same, for every address without its own
//	/config/changes/config_change_<seq>  {"version":2,"entity_path":"ips/<ip>"}
//
// <ip> is sanitized as the other entity names (an IPv6 address's colons
// become %3A). The value is an INT, written as Kafka writes it.

const configIPsPath = "/config/ips"

func ipComponent(name string) string {
	if name == quota.DefaultName {
		return name
	}
	return sanitizeUser(name)
}

// ipValue reads connection_creation_rate from an entity config (0: none or
// not a positive number).
func ipValue(cfg map[string]string) float64 {
	x, err := strconv.ParseFloat(strings.TrimSpace(cfg[quota.IPKey]), 64)
	if err != nil || !(x > 0) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// GetIP returns the connection_creation_rate of ip entity name (an
// address or quota.DefaultName; 0: none).
func (q *QuotaStore) GetIP(name string) (float64, error) {
	cfg, _, err := q.readEntityConfig(configIPsPath + "/" + ipComponent(name))
	if err != nil {
		return 0, err
	}
	return ipValue(cfg), nil
}

// ListIPs returns every ip entity with a connection_creation_rate, by name
// (quota.DefaultName for the default).
func (q *QuotaStore) ListIPs() (map[string]float64, error) {
	names, err := q.n.zk.children(configIPsPath)
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]float64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: list %s: %w", configIPsPath, err)
	}
	out := map[string]float64{}
	for _, zn := range names {
		name := zn
		if zn != quota.DefaultName {
			if name, err = desanitizeUser(zn); err != nil || name == "" {
				return nil, fmt.Errorf("%w: %s/%s: entity name is not URL-encoded", ErrCorruptZnode, configIPsPath, zn)
			}
		}
		cfg, _, err := q.readEntityConfig(configIPsPath + "/" + zn)
		if err != nil {
			return nil, err
		}
		if v := ipValue(cfg); v > 0 {
			out[name] = v
		}
	}
	return out, nil
}

// AlterIP rewrites the connection_creation_rate of ip entity name with
// change (given the current one; 0 removes it), keeping any other key of
// the znode, and notifies every broker in the same multi, as Alter.
func (q *QuotaStore) AlterIP(name string, change func(float64) (float64, error)) error {
	if name == "" {
		return fmt.Errorf("cluster: empty ip quota entity")
	}
	return q.alterEntityConfig("ips/"+ipComponent(name), func(cfg map[string]string) (map[string]string, error) {
		v, err := change(ipValue(cfg))
		if err != nil {
			return nil, err
		}
		if v > 0 {
			cfg[quota.IPKey] = strconv.FormatInt(int64(v), 10)
		} else {
			delete(cfg, quota.IPKey)
		}
		return cfg, nil
	}, func() error {
		if err := q.n.zk.ensurePath(configIPsPath); err != nil {
			return fmt.Errorf("cluster: create %s: %w", configIPsPath, err)
		}
		return nil
	})
}

// WatchIPQuotaChanges calls fn with the ip entity name (an address or
// quota.DefaultName) of every config change notification naming
// ips/<ip>, in sequence order, until ctx ends or the node closes; resync
// as WatchQuotaChanges. fn should re-read the entity (GetIP). It blocks.
func (n *Node) WatchIPQuotaChanges(ctx context.Context, fn func(name string), resync func()) {
	w := changeWatch{
		dir:         configChangesPath,
		prefix:      configChangePrefix,
		last:        -1,
		resyncFirst: true,
		handle: func(znode string, data []byte) error {
			var cn configChangeNote
			if err := jsonUnmarshal(data, &cn); err != nil {
				return nil // WatchQuotaChanges logs it
			}
			zn, ok := strings.CutPrefix(cn.EntityPath, "ips/")
			if !ok || zn == "" || strings.Contains(zn, "/") {
				return nil
			}
			name := zn
			if zn != quota.DefaultName {
				var err error
				if name, err = desanitizeUser(zn); err != nil || name == "" {
					n.log.Warn("cluster: config change names a bad ip entity", "znode", znode, "entity_path", cn.EntityPath)
					return nil
				}
			}
			fn(name)
			return nil
		},
	}
	if resync != nil {
		w.resync = func() error { resync(); return nil }
	}
	n.watchChanges(ctx, w)
}
