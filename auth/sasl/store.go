package sasl

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// CredentialLookup finds a user's SCRAM credential; it is the read half of
// CredentialStore, all an Authenticator needs.
type CredentialLookup interface {
	// Get returns the credential of user for mechanism. ok is false, with
	// a nil error, when the user has none for that mechanism; an error
	// means the store could not answer (the login fails and is logged).
	// The returned slices belong to the caller.
	Get(user, mechanism string) (c Credential, ok bool, err error)
}

// CredentialStore keeps SCRAM credentials, at most one per (user,
// mechanism): the metastore's on a single node, ZooKeeper's
// /config/users in cluster mode. Implementations are safe for concurrent
// use. A change made through one store is visible to its own Get at once;
// a ZooKeeper store on another broker sees it within seconds.
type CredentialStore interface {
	CredentialLookup
	// Put stores c for user under c.Mechanism, replacing any credential
	// of that mechanism. It refuses (ErrInvalidCredential) an empty user
	// and (ErrUnsupportedMechanism) a mechanism that is not SCRAM.
	Put(user string, c Credential) error
	// Delete removes user's credential for mechanism. Deleting one that
	// does not exist returns an error wrapping ErrCredentialNotFound
	// (Kafka answers RESOURCE_NOT_FOUND).
	Delete(user, mechanism string) error
	// List returns every user with at least one credential and the
	// mechanisms they have, each list sorted. The map belongs to the
	// caller.
	List() (map[string][]string, error)
}

// ErrCredentialNotFound is wrapped by CredentialStore.Delete when there is
// nothing to delete.
var ErrCredentialNotFound = errors.New("sasl: no such SCRAM credential")

// CheckPut validates the arguments of CredentialStore.Put; stores call it
// first so every implementation refuses the same things.
func CheckPut(user string, c Credential) error {
	if user == "" {
		return fmt.Errorf("%w: empty user name", ErrInvalidCredential)
	}
	if !isScram(c.Mechanism) {
		return fmt.Errorf("%w: %q is not a SCRAM mechanism", ErrUnsupportedMechanism, c.Mechanism)
	}
	if len(c.Salt) == 0 || c.Iterations <= 0 {
		return fmt.Errorf("%w: %s: empty salt or no iterations", ErrInvalidCredential, c.Mechanism)
	}
	if size := hashFor(c.Mechanism)().Size(); len(c.StoredKey) != size || len(c.ServerKey) != size {
		return fmt.Errorf("%w: %s: keys of %d and %d bytes, want %d", ErrInvalidCredential, c.Mechanism, len(c.StoredKey), len(c.ServerKey), size)
	}
	return nil
}

// MemoryStore is a CredentialStore in memory, for tests and ephemeral
// brokers. The zero value is empty and ready to use.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]map[string]Credential // user -> mechanism -> credential
}

var _ CredentialStore = (*MemoryStore)(nil)

func (s *MemoryStore) Get(user, mechanism string) (Credential, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[user][mechanism]
	return cloneCredential(c), ok, nil
}

func (s *MemoryStore) Put(user string, c Credential) error {
	if err := CheckPut(user, c); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[string]Credential{}
	}
	if s.m[user] == nil {
		s.m[user] = map[string]Credential{}
	}
	s.m[user][c.Mechanism] = cloneCredential(c)
	return nil
}

func (s *MemoryStore) Delete(user, mechanism string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[user][mechanism]; !ok {
		return fmt.Errorf("%w: %s for user %q", ErrCredentialNotFound, mechanism, user)
	}
	delete(s.m[user], mechanism)
	if len(s.m[user]) == 0 {
		delete(s.m, user)
	}
	return nil
}

func (s *MemoryStore) List() (map[string][]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]string, len(s.m))
	for u, ms := range s.m {
		for m := range ms {
			out[u] = append(out[u], m)
		}
		slices.Sort(out[u])
	}
	return out, nil
}

func cloneCredential(c Credential) Credential {
	c.Salt = slices.Clone(c.Salt)
	c.StoredKey = slices.Clone(c.StoredKey)
	c.ServerKey = slices.Clone(c.ServerKey)
	return c
}
