package metastore

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/quota"
)

// TestClientQuotasStore: quotas of every entity kind are kept, listed,
// replaced and deleted, and survive a reopen.
func TestClientQuotasStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "meta")
	s, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var v1, v2 quota.Values
	v1[quota.Produce], v1[quota.Request] = 1024, 12.5
	v2[quota.ControllerMutation] = 0.5
	want := map[quota.Entity]quota.Values{
		{User: quota.Named("a\x00b")}:                      v1,
		{User: quota.Default}:                              v2,
		{ClientID: quota.Named("*")}:                       v1,
		{User: quota.Named("u"), ClientID: quota.Default}:  v2,
		{User: quota.Default, ClientID: quota.Named("=c")}: v1,
	}
	for e, v := range want {
		if err := s.SetClientQuota(e, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetClientQuota(quota.Entity{User: quota.Named("gone")}, v1); err != nil {
		t.Fatal(err)
	}
	if err := s.SetClientQuota(quota.Entity{User: quota.Named("gone")}, quota.Values{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetClientQuota(quota.Entity{User: quota.Named("never")}, quota.Values{}); err != nil {
		t.Fatalf("deleting what is not there: %v", err)
	}
	s.Close()
	s, err = Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.ClientQuotas()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for e, v := range want {
		if got[e] != v {
			t.Errorf("%v: %v, want %v", e, got[e], v)
		}
		if one, err := s.ClientQuota(e); err != nil || one != v {
			t.Errorf("ClientQuota(%v) = %v, %v", e, one, err)
		}
	}
}

// FuzzDecodeQuota checks the client quota value and key decoders.
// Invariants: neither panics; every failure wraps ErrCorrupt; a decoded
// value holds only positive quotas and re-encodes to bytes that decode to
// the same values; a decoded key re-encodes to the input byte for byte.
func FuzzDecodeQuota(f *testing.F) {
	var v quota.Values
	v[quota.Fetch] = 99
	f.Add(encodeQuota(nil, v))
	f.Add(encodeQuota(nil, quota.Values{}))
	f.Add(quotaKey(nil, quota.Entity{User: quota.Named("u\x00"), ClientID: quota.Default}))
	f.Add([]byte{quotaV1, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	key := []byte("k")
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeQuota(key, b)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeQuota error %v does not wrap ErrCorrupt", err)
		}
		if err == nil {
			for _, x := range v {
				if x < 0 {
					t.Fatalf("negative quota %v", x)
				}
			}
			again, err := decodeQuota(key, encodeQuota(nil, v))
			if err != nil || again != v {
				t.Fatalf("re-decode: %v %v, want %v", again, err, v)
			}
		}
		e, err := decodeQuotaKey(b)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeQuotaKey error %v does not wrap ErrCorrupt", err)
		}
		if err == nil {
			if re := quotaKey(nil, e); !bytes.Equal(re, b) {
				t.Fatalf("quota key re-encodes to %x, input %x", re, b)
			}
		}
	})
}
