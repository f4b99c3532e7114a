package metastore

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/sluice/sluice/auth/sasl"
)

func newCred(t *testing.T, mech, password string) sasl.Credential {
	t.Helper()
	c, err := sasl.NewCredential(mech, password, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestScramStore(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	cs := s.ScramCredentials()

	if _, ok, err := cs.Get("alice", sasl.ScramSHA256); ok || err != nil {
		t.Fatalf("empty store: ok %v err %v", ok, err)
	}
	alice256 := newCred(t, sasl.ScramSHA256, "a")
	alice512 := newCred(t, sasl.ScramSHA512, "a")
	// Names that are prefixes of each other or hold NUL bytes must not mix.
	users := map[string]sasl.Credential{"alice": alice256, "alice\x00": newCred(t, sasl.ScramSHA256, "b"), "al": newCred(t, sasl.ScramSHA512, "c")}
	for u, c := range users {
		if err := cs.Put(u, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.Put("alice", alice512); err != nil {
		t.Fatal(err)
	}
	for u, c := range users {
		got, ok, err := cs.Get(u, c.Mechanism)
		if err != nil || !ok || !reflect.DeepEqual(got, c) {
			t.Fatalf("Get(%q): ok %v err %v", u, ok, err)
		}
	}
	list, err := cs.List()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"alice": {sasl.ScramSHA256, sasl.ScramSHA512}, "alice\x00": {sasl.ScramSHA256}, "al": {sasl.ScramSHA512}}
	if !reflect.DeepEqual(list, want) {
		t.Fatalf("List = %q, want %q", list, want)
	}

	// Replace, then survive a reopen.
	alice256b := newCred(t, sasl.ScramSHA256, "new")
	if err := cs.Put("alice", alice256b); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cs.Get("alice", sasl.ScramSHA256); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	s = openTest(t, dir)
	cs = s.ScramCredentials()
	if got, ok, err := cs.Get("alice", sasl.ScramSHA256); err != nil || !ok || !reflect.DeepEqual(got, alice256b) {
		t.Fatalf("after reopen: ok %v err %v", ok, err)
	}

	// Delete one mechanism, then the other; deleting again is not found.
	if err := cs.Delete("alice", sasl.ScramSHA256); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := cs.Get("alice", sasl.ScramSHA256); ok {
		t.Fatal("deleted credential still there")
	}
	if _, ok, _ := cs.Get("alice", sasl.ScramSHA512); !ok {
		t.Fatal("Delete took the other mechanism too")
	}
	err = cs.Delete("alice", sasl.ScramSHA256)
	if !errors.Is(err, sasl.ErrCredentialNotFound) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
	if err := cs.Delete("alice", sasl.ScramSHA512); err != nil {
		t.Fatal(err)
	}
	list, _ = cs.List()
	if _, ok := list["alice"]; ok || len(list) != 2 {
		t.Fatalf("List after deletes = %q", list)
	}
}

func TestScramStoreRefuses(t *testing.T) {
	cs := openTest(t, t.TempDir()).ScramCredentials()
	good := newCred(t, sasl.ScramSHA256, "pw")
	short := good
	short.StoredKey = short.StoredKey[:16]
	plain := good
	plain.Mechanism = sasl.Plain
	for name, tc := range map[string]struct {
		user string
		c    sasl.Credential
		err  error
	}{
		"empty user":  {"", good, sasl.ErrInvalidCredential},
		"short key":   {"u", short, sasl.ErrInvalidCredential},
		"not scram":   {"u", plain, sasl.ErrUnsupportedMechanism},
		"zero record": {"u", sasl.Credential{Mechanism: sasl.ScramSHA512}, sasl.ErrInvalidCredential},
	} {
		if err := cs.Put(tc.user, tc.c); !errors.Is(err, tc.err) {
			t.Errorf("%s: err %v, want %v", name, err, tc.err)
		}
	}
	if l, _ := cs.List(); len(l) != 0 {
		t.Fatalf("refused puts stored %q", l)
	}
}

// TestScramStoreCorrupt: a damaged value is ErrCorrupt, not a credential
// and not "no such user".
func TestScramStoreCorrupt(t *testing.T) {
	s := openTest(t, t.TempDir())
	c := newCred(t, sasl.ScramSHA512, "pw")
	v := encodeScram(nil, c)
	for name, bad := range map[string][]byte{
		"version":   append([]byte{9}, v[1:]...),
		"truncated": v[:len(v)-1],
		"trailing":  append(slices.Clone(v), 0),
		"key size":  encodeScram(nil, newCred(t, sasl.ScramSHA256, "pw")), // a 256 value under 512
	} {
		if err := s.set(scramKey(nil, "u", sasl.ScramSHA512), bad); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.ScramCredentials().Get("u", sasl.ScramSHA512); ok || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ok %v err %v", name, ok, err)
		}
	}
}

// TestScramKeysIsolated: credentials do not show up in other scans and
// other records do not show up in List.
func TestScramKeysIsolated(t *testing.T) {
	s := openTest(t, t.TempDir())
	if err := s.PutCheckpoint("cp", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTopic(Topic{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.ScramCredentials().Put("t", newCred(t, sasl.ScramSHA256, "pw")); err != nil {
		t.Fatal(err)
	}
	topics, err := s.ListTopics()
	if err != nil || len(topics) != 1 {
		t.Fatalf("topics %v err %v", topics, err)
	}
	if l, err := s.ScramCredentials().List(); err != nil || len(l) != 1 {
		t.Fatalf("List %q err %v", l, err)
	}
}
