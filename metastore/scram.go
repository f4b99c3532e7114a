package metastore

// SCRAM credentials of a single-node broker (ZooKeeper's /config/users in
// cluster mode is cluster.ScramStore). One key per (user, mechanism), so
// one mechanism changes without reading the other:
//
//	key:    0x07 esc(user) esc(mechanism)
//	value:  u8 ver=1 | bytes salt | bytes stored key | bytes server key | i32 iterations
//
// bytes = u32 length + bytes (codec.go), big endian. Part of the on-disk
// format: do not change; evolve with a new version byte. A value that is
// truncated, has trailing bytes, an unknown version, an empty salt or keys
// that are not one hash of the mechanism long is ErrCorrupt.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sluice/sluice/auth/sasl"
)

// scramV1 is the version byte of a credential value. Part of the on-disk
// format: do not change.
const scramV1 byte = 1

func scramKey(dst []byte, user, mechanism string) []byte {
	return appendName(appendName(append(dst, kindScram), user), mechanism)
}

// decodeScramKey splits a credential key into user and mechanism.
func decodeScramKey(key []byte) (user, mechanism string, err error) {
	if len(key) == 0 || key[0] != kindScram {
		return "", "", corruptf(key, "not a SCRAM credential key")
	}
	user, rest, ok := decodeName(key[1:])
	if ok {
		mechanism, rest, ok = decodeName(rest)
	}
	if !ok || len(rest) != 0 {
		return "", "", corruptf(key, "bad SCRAM credential key")
	}
	return user, mechanism, nil
}

func encodeScram(dst []byte, c sasl.Credential) []byte {
	dst = append(dst, scramV1)
	dst = appendBytes(dst, c.Salt)
	dst = appendBytes(dst, c.StoredKey)
	dst = appendBytes(dst, c.ServerKey)
	return appendU32(dst, uint32(int32(c.Iterations)))
}

// decodeScram decodes a value written by encodeScram for mechanism; damaged
// input returns an error wrapping ErrCorrupt that names key (never the
// keys' bytes).
func decodeScram(key, v []byte, mechanism string) (sasl.Credential, error) {
	d := decoder{b: v}
	if ver := d.u8(); ver != scramV1 {
		return sasl.Credential{}, corruptf(key, "SCRAM credential value version %d", firstByte(v))
	}
	c := sasl.Credential{Mechanism: mechanism}
	c.Salt = d.bytes()
	c.StoredKey = d.bytes()
	c.ServerKey = d.bytes()
	c.Iterations = int(d.i32())
	if !d.done() {
		return sasl.Credential{}, corruptf(key, "SCRAM credential value of %d bytes is truncated or has trailing bytes", len(v))
	}
	if err := sasl.CheckPut("-", c); err != nil {
		return sasl.Credential{}, corruptf(key, "%v", err)
	}
	return c, nil
}

// ScramStore is the metastore's sasl.CredentialStore. Every write is
// synced before it returns; it is safe for concurrent use, and calls after
// the Store's Close return ErrClosed.
type ScramStore struct{ s *Store }

var _ sasl.CredentialStore = ScramStore{}

// ScramCredentials returns the store's SCRAM credentials.
func (s *Store) ScramCredentials() ScramStore { return ScramStore{s} }

// Get returns user's credential for mechanism; ok is false when there is
// none. A damaged value returns an error wrapping ErrCorrupt.
func (m ScramStore) Get(user, mechanism string) (sasl.Credential, bool, error) {
	key := scramKey(nil, user, mechanism)
	var c sasl.Credential
	err := m.s.get(key, func(v []byte) (err error) {
		c, err = decodeScram(key, v, mechanism)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return sasl.Credential{}, false, nil
	}
	return c, err == nil, err
}

// Put stores c for user (see sasl.CredentialStore.Put for what it refuses).
func (m ScramStore) Put(user string, c sasl.Credential) error {
	if err := sasl.CheckPut(user, c); err != nil {
		return err
	}
	return m.s.set(scramKey(nil, user, c.Mechanism), encodeScram(nil, c))
}

// Delete removes user's credential for mechanism; when there is none the
// error wraps both sasl.ErrCredentialNotFound and ErrNotFound.
func (m ScramStore) Delete(user, mechanism string) error {
	err := m.s.deleteExisting(scramKey(nil, user, mechanism))
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %s for user %q: %w", sasl.ErrCredentialNotFound, mechanism, user, err)
	}
	return err
}

// List returns every user with a credential and their mechanisms, sorted.
// A damaged key fails the call with an error wrapping ErrCorrupt; values
// are not decoded.
func (m ScramStore) List() (map[string][]string, error) {
	out := map[string][]string{}
	err := m.s.scan([]byte{kindScram}, []byte{kindScram + 1}, func(k, _ []byte) error {
		user, mech, err := decodeScramKey(k)
		if err != nil {
			return err
		}
		out[user] = append(out[user], mech) // keys sort by mechanism within a user
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, ms := range out {
		if !slices.IsSorted(ms) {
			slices.Sort(ms)
		}
	}
	return out, nil
}
