package cluster

// SCRAM credentials in ZooKeeper, in Kafka's layout (ZkAdminManager,
// AdminZkClient):
//
//	/config/users/<sanitized user>   {"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}
//	/config/changes/config_change_<seq>   {"version":2,"entity_path":"users/<sanitized user>"}
//
// The user config may hold other keys (Kafka's user quotas); a credential
// change keeps them. Deleting a user's last credential leaves the znode, as
// Kafka does. The config write and its notification go in one ZooKeeper
// multi, so no broker can miss a change. <sanitized user> is Kafka's
// Sanitizer: URL-encoding with %20 for a space and %2A for '*'.
//
// Every broker keeps a cache of the credentials it has read, valid while
// ScramStore.Watch runs: a notification drops the user's entry, a resync
// (first listing, broken watch) drops all. So a credential created through
// any broker is used by every broker within a notification's delay. Users
// found to have no credential are cached too, the same way (bounded: see
// maxUnknownBytes), so authenticating as an unknown user costs no more
// than as a known one: no ZooKeeper read each time, nothing for a client
// to time or to flood ZooKeeper with.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/sluice/sluice/auth/sasl"
)

const configUsersPath = "/config/users"

func userConfigPath(user string) string { return configUsersPath + "/" + sanitizeUser(user) }

// sanitizeUser is Kafka's Sanitizer.sanitize: Java's URLEncoder (keeps
// A-Z a-z 0-9 . - * _, encodes the UTF-8 bytes of the rest as uppercase
// %XX, a space as '+'), then '*' as %2A and '+' as %20.
func sanitizeUser(user string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(user); i++ {
		c := user[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// desanitizeUser is Kafka's Sanitizer.desanitize (Java's URLDecoder: '+'
// is a space, %XX a byte).
func desanitizeUser(name string) (string, error) { return url.QueryUnescape(name) }

// ScramStore is the cluster's sasl.CredentialStore. Safe for concurrent
// use. Create one per Node with NewScramStore and run Watch for its life.
type ScramStore struct {
	n *Node

	mu sync.Mutex
	// caching is true while Watch runs and has resynced at least once;
	// only then is the cache used.
	caching bool
	// gen counts invalidations: a read from ZooKeeper that began before
	// one is not cached, since it may be older than the change.
	gen uint64
	// cache holds users who have at least one credential.
	cache map[string]map[string]sasl.Credential
	// unknown holds users read with no credential (no znode, or one
	// without SCRAM keys). Its names are client-chosen, so it is bounded:
	// unknownBytes is the sum of unknownCost of its names, at most
	// maxUnknownBytes.
	unknown      map[string]struct{}
	unknownBytes int
}

// maxUnknownBytes bounds the memory of ScramStore.unknown. Past it, an
// arbitrary entry is dropped for each new one, so a client sending
// random names keeps the set at this size.
const maxUnknownBytes = 1 << 20

// unknownCost is what the entry of user in ScramStore.unknown counts
// against maxUnknownBytes: its name and roughly a map entry's overhead.
func unknownCost(user string) int { return len(user) + 64 }

var _ sasl.CredentialStore = (*ScramStore)(nil)

// NewScramStore returns the SCRAM credential store of the cluster n
// belongs to. Until Watch runs, every Get reads ZooKeeper.
func NewScramStore(n *Node) *ScramStore {
	return &ScramStore{n: n, cache: map[string]map[string]sasl.Credential{}, unknown: map[string]struct{}{}}
}

// Watch follows user config change notifications (WatchUserConfigChanges)
// and keeps the cache valid, until ctx ends or the node closes. It blocks:
// run it on its own goroutine, once.
func (s *ScramStore) Watch(ctx context.Context) {
	s.n.WatchUserConfigChanges(ctx, s.invalidate, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.clearLocked()
		s.caching = true
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
	s.caching = false
}

// clearLocked drops every cached user, known or not. REQUIRES: s.mu held.
func (s *ScramStore) clearLocked() {
	s.gen++
	clear(s.cache)
	clear(s.unknown)
	s.unknownBytes = 0
}

// invalidate drops user's cache entry, known or not.
func (s *ScramStore) invalidate(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	delete(s.cache, user)
	s.forgetUnknownLocked(user)
}

// forgetUnknownLocked drops user from s.unknown. REQUIRES: s.mu held.
func (s *ScramStore) forgetUnknownLocked(user string) {
	if _, ok := s.unknown[user]; ok {
		delete(s.unknown, user)
		s.unknownBytes -= unknownCost(user)
	}
}

// cacheLocked records what a read of user found: creds, or no credential
// at all. REQUIRES: s.mu held, s.caching.
func (s *ScramStore) cacheLocked(user string, creds map[string]sasl.Credential) {
	if len(creds) > 0 {
		s.forgetUnknownLocked(user)
		s.cache[user] = creds
		return
	}
	delete(s.cache, user)
	cost := unknownCost(user)
	if _, ok := s.unknown[user]; ok || cost > maxUnknownBytes {
		return
	}
	for u := range s.unknown {
		if s.unknownBytes+cost <= maxUnknownBytes {
			break
		}
		s.forgetUnknownLocked(u)
	}
	s.unknown[user] = struct{}{}
	s.unknownBytes += cost
}

// Get returns user's credential for mechanism: from the cache while Watch
// runs (a user without credentials included), else from
// /config/users/<user>. Errors: ZooKeeper's, and a znode or credential
// that does not decode (wraps ErrCorruptZnode; not cached).
func (s *ScramStore) Get(user, mechanism string) (sasl.Credential, bool, error) {
	s.mu.Lock()
	if s.caching {
		if creds, ok := s.cache[user]; ok {
			c, ok := creds[mechanism]
			s.mu.Unlock()
			return cloneCredential(c), ok, nil
		}
		if _, ok := s.unknown[user]; ok {
			s.mu.Unlock()
			return sasl.Credential{}, false, nil
		}
	}
	gen := s.gen
	s.mu.Unlock()

	cfg, _, err := s.readConfig(userConfigPath(user))
	if err != nil {
		return sasl.Credential{}, false, err
	}
	creds, err := sasl.UserCredentials(cfg)
	if err != nil {
		return sasl.Credential{}, false, fmt.Errorf("%w: %s: %w", ErrCorruptZnode, userConfigPath(user), err)
	}
	s.mu.Lock()
	if s.caching && s.gen == gen {
		s.cacheLocked(user, creds)
	}
	s.mu.Unlock()
	c, ok := creds[mechanism]
	return cloneCredential(c), ok, nil
}

// readConfig returns the user config in znode p and the znode's version;
// a missing znode is an empty config with version -1.
func (s *ScramStore) readConfig(p string) (map[string]string, int32, error) {
	data, st, err := s.n.zk.get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, -1, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: read %s: %w", p, err)
	}
	if len(data) == 0 { // a parent Kafka created for /config/users/<u>/clients/<c>
		return map[string]string{}, st.Version, nil
	}
	cfg, err := sasl.DecodeUserConfig(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %w", ErrCorruptZnode, p, err)
	}
	return cfg, st.Version, nil
}

// Put stores c for user in /config/users/<user>, keeping the other keys
// there, and notifies every broker (see sasl.CredentialStore.Put for what
// it refuses).
func (s *ScramStore) Put(user string, c sasl.Credential) error {
	if err := sasl.CheckPut(user, c); err != nil {
		return err
	}
	return s.update(user, func(cfg map[string]string) (map[string]string, error) {
		return sasl.WithCredential(cfg, c), nil
	})
}

// Delete removes user's credential for mechanism and notifies every
// broker; when there is none the error wraps sasl.ErrCredentialNotFound.
func (s *ScramStore) Delete(user, mechanism string) error {
	if user == "" {
		return fmt.Errorf("%w: empty user name", sasl.ErrCredentialNotFound)
	}
	return s.update(user, func(cfg map[string]string) (map[string]string, error) {
		if _, ok := cfg[mechanism]; !ok {
			return nil, fmt.Errorf("%w: %s for user %q", sasl.ErrCredentialNotFound, mechanism, user)
		}
		delete(cfg, mechanism)
		return cfg, nil
	})
}

// update rewrites user's config with change and writes the change
// notification in the same multi, retrying when another writer got there
// first (the znode's version guards the read-modify-write).
func (s *ScramStore) update(user string, change func(map[string]string) (map[string]string, error)) error {
	p := userConfigPath(user)
	note := []byte(`{"version":2,"entity_path":"users/` + sanitizeUser(user) + `"}`)
	notify := &zk.CreateRequest{Path: configChangesPath + "/" + configChangePrefix, Data: note, Flags: zk.FlagSequence}
	for attempt := 0; ; attempt++ {
		if err := s.n.ctx.Err(); err != nil {
			return ErrClosed
		}
		cfg, version, err := s.readConfig(p)
		if err != nil {
			return err
		}
		cfg, err = change(cfg)
		if err != nil {
			return err
		}
		data := sasl.EncodeUserConfig(cfg)
		var write any = &zk.SetDataRequest{Path: p, Data: data, Version: version}
		if version < 0 {
			if err := s.n.zk.ensurePath(configUsersPath); err != nil {
				return fmt.Errorf("cluster: create %s: %w", configUsersPath, err)
			}
			write = &zk.CreateRequest{Path: p, Data: data}
		}
		n := *notify // multi rewrites paths in place
		_, err = s.n.zk.multi(write, &n)
		if err == nil {
			s.invalidate(user)
			return nil
		}
		if (errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode)) && attempt < 10 {
			continue // raced with another writer: read again
		}
		return fmt.Errorf("cluster: write %s: %w", p, err)
	}
}

// List returns every user whose config holds a SCRAM credential, with
// those mechanisms sorted. Values are not decoded. A znode that is not a
// user config fails the call (ErrCorruptZnode).
func (s *ScramStore) List() (map[string][]string, error) {
	names, err := s.n.zk.children(configUsersPath)
	if errors.Is(err, zk.ErrNoNode) {
		return map[string][]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: list %s: %w", configUsersPath, err)
	}
	out := map[string][]string{}
	for _, name := range names {
		user, err := desanitizeUser(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s/%s: not URL-encoded", ErrCorruptZnode, configUsersPath, name)
		}
		cfg, _, err := s.readConfig(configUsersPath + "/" + name)
		if err != nil {
			return nil, err
		}
		for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
			if _, ok := cfg[m]; ok {
				out[user] = append(out[user], m)
			}
		}
	}
	return out, nil
}

func cloneCredential(c sasl.Credential) sasl.Credential {
	c.Salt = slices.Clone(c.Salt)
	c.StoredKey = slices.Clone(c.StoredKey)
	c.ServerKey = slices.Clone(c.ServerKey)
	return c
}
