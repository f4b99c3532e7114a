package metastore

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/acl/acltest"
)

func TestACLStore(t *testing.T) {
	acltest.Run(t, func(t *testing.T) acl.Store { return NewACLStore(openTest(t, t.TempDir())) })
}

// TestACLStoreReopen: ACLs survive a restart, names with 0x00 bytes
// included, and do not collide with other records.
func TestACLStoreReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []acl.Binding{
		{Pattern: acl.ResourcePattern{Type: acl.ResourceGroup, Name: "g\x00x", PatternType: acl.PatternLiteral},
			Entry: acl.Entry{Principal: "User:a", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow}},
		{Pattern: acl.ResourcePattern{Type: acl.ResourceGroup, Name: "g", PatternType: acl.PatternPrefixed},
			Entry: acl.Entry{Principal: "User:b", Host: "10.0.0.1", Operation: acl.OpDelete, Permission: acl.PermissionDeny}},
	}
	if err := NewACLStore(s).Add(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTopic(Topic{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	got, err := NewACLStore(s).All(ctx)
	acl.SortBindings(want)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("after reopen: %v, %v; want %v", got, err, want)
	}
	if ts, err := s.ListTopics(); err != nil || len(ts) != 1 {
		t.Fatalf("topics: %v, %v", ts, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewACLStore(s).All(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("All after Close: %v", err)
	}
	if err := NewACLStore(s).Add(ctx, want); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
}

// TestACLStoreCorrupt: a damaged ACL value fails All with ErrCorrupt.
func TestACLStoreCorrupt(t *testing.T) {
	s := openTest(t, t.TempDir())
	p := acl.ResourcePattern{Type: acl.ResourceTopic, Name: "t", PatternType: acl.PatternLiteral}
	if err := s.set(aclKey(nil, p), []byte{aclV1, 0, 0, 0, 9}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewACLStore(s).All(context.Background()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("All = %v, want ErrCorrupt", err)
	}
}

// FuzzDecodeACLValue checks the ACL value and key decoders (format.go).
// Invariants: neither panics; every failure wraps ErrCorrupt; a decoded
// value never has more entries than the input holds at 10 bytes each;
// decoding is exact, so re-encoding a decoded value or key gives the input
// back byte for byte.
func FuzzDecodeACLValue(f *testing.F) {
	f.Add(encodeACLs(nil, []acl.Entry{{Principal: "User:a", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow}}))
	f.Add(encodeACLs(nil, nil))
	f.Add(aclKey(nil, acl.ResourcePattern{Type: acl.ResourceTopic, Name: "a\x00b", PatternType: acl.PatternPrefixed}))
	f.Add([]byte{aclV1, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	key := []byte("k")
	f.Fuzz(func(t *testing.T, v []byte) {
		es, err := decodeACLs(key, v)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeACLs error %v does not wrap ErrCorrupt", err)
		}
		if err == nil {
			if len(es)*10 > len(v) {
				t.Fatalf("%d entries from %d bytes", len(es), len(v))
			}
			if re := encodeACLs(nil, es); !bytes.Equal(re, v) {
				t.Fatalf("acls re-encode to %x, input %x", re, v)
			}
		}
		p, err := decodeACLKey(v)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeACLKey error %v does not wrap ErrCorrupt", err)
		}
		if err == nil {
			if re := aclKey(nil, p); !bytes.Equal(re, v) {
				t.Fatalf("acl key re-encodes to %x, input %x", re, v)
			}
		}
	})
}
