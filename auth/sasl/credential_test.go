package sasl

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
)

func TestNewCredential(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mech       string
		iterations int
		want       int
		err        error
	}{
		{"default", ScramSHA256, 0, 4096, nil},
		{"min", ScramSHA512, 4096, 4096, nil},
		{"max", ScramSHA256, 16384, 16384, nil},
		{"too few", ScramSHA256, 4095, 0, ErrInvalidCredential},
		{"too many", ScramSHA512, 16385, 0, ErrInvalidCredential},
		{"negative", ScramSHA512, -1, 0, ErrInvalidCredential},
		{"plain", Plain, 0, 0, ErrUnsupportedMechanism},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCredential(tc.mech, "pw", tc.iterations)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			size := hashFor(tc.mech)().Size()
			if c.Iterations != tc.want || len(c.Salt) != 32 || len(c.StoredKey) != size || len(c.ServerKey) != size || c.Mechanism != tc.mech {
				t.Fatalf("credential %d iterations, salt %d, keys %d/%d", c.Iterations, len(c.Salt), len(c.StoredKey), len(c.ServerKey))
			}
			c2, _ := NewCredential(tc.mech, "pw", tc.iterations)
			if string(c.Salt) == string(c2.Salt) {
				t.Fatal("two credentials share a salt")
			}
			d, err := DecodeCredential(tc.mech, EncodeCredential(c))
			if err != nil || !reflect.DeepEqual(d, c) {
				t.Fatalf("round trip: %v", err)
			}
		})
	}
}

const (
	b64_32 = "WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY="
	b64_16 = "W22ZaJ0SNY7soEsUEjb6gQ=="
)

func TestDecodeCredential(t *testing.T) {
	ok := "salt=" + b64_16 + ",stored_key=" + b64_32 + ",server_key=" + b64_32 + ",iterations=4096"
	for _, tc := range []struct {
		name, mech, s string
		err           error
	}{
		{"kafka order", ScramSHA256, ok, nil},
		{"any order", ScramSHA256, "iterations=8192,server_key=" + b64_32 + ",salt=" + b64_16 + ",stored_key=" + b64_32, nil},
		{"unpadded", ScramSHA256, "salt=" + strings.TrimRight(b64_16, "=") + ",stored_key=" + strings.TrimRight(b64_32, "=") + ",server_key=" + b64_32 + ",iterations=4096", nil},
		{"low iterations decode", ScramSHA256, strings.Replace(ok, "4096", "1", 1), nil},
		{"wrong mechanism size", ScramSHA512, ok, ErrInvalidCredential},
		{"not scram", Plain, ok, ErrUnsupportedMechanism},
		{"missing key", ScramSHA256, strings.Replace(ok, ",iterations=4096", "", 1), ErrInvalidCredential},
		{"duplicate key", ScramSHA256, ok + ",iterations=4096", ErrInvalidCredential},
		{"unknown key", ScramSHA256, ok + ",x=1", ErrInvalidCredential},
		{"trailing comma", ScramSHA256, ok + ",", ErrInvalidCredential},
		{"bad base64", ScramSHA256, strings.Replace(ok, "salt=W", "salt=!", 1), ErrInvalidCredential},
		{"empty salt", ScramSHA256, strings.Replace(ok, "salt="+b64_16, "salt=", 1), ErrInvalidCredential},
		{"zero iterations", ScramSHA256, strings.Replace(ok, "4096", "0", 1), ErrInvalidCredential},
		{"huge iterations", ScramSHA256, strings.Replace(ok, "4096", "99999999999", 1), ErrInvalidCredential},
		{"no equals", ScramSHA256, "salt", ErrInvalidCredential},
		{"empty", ScramSHA256, "", ErrInvalidCredential},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeCredential(tc.mech, tc.s)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				if strings.Contains(err.Error(), b64_32) {
					t.Fatalf("error %q quotes a key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Mechanism != tc.mech || len(c.Salt) != 16 {
				t.Fatalf("decoded %v", c)
			}
		})
	}
}

func TestUserConfig(t *testing.T) {
	c := mustCredential(t, ScramSHA512, "pw", 0)
	// Kafka's znode with a quota beside the credential: the quota survives.
	cfg, err := DecodeUserConfig([]byte(`{"version":1,"config":{"producer_byte_rate":"1024"}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg = WithCredential(cfg, c)
	data := EncodeUserConfig(cfg)
	back, err := DecodeUserConfig(data)
	if err != nil || !maps.Equal(back, cfg) || back["producer_byte_rate"] != "1024" {
		t.Fatalf("round trip %s: %v", data, err)
	}
	creds, err := UserCredentials(back)
	if err != nil || len(creds) != 1 || !reflect.DeepEqual(creds[ScramSHA512], c) {
		t.Fatalf("credentials %v: %v", creds, err)
	}
	if !strings.HasPrefix(string(data), `{"version":1,"config":{`) {
		t.Fatalf("znode %s", data)
	}
	for name, bad := range map[string]string{
		"version 2":    `{"version":2,"config":{}}`,
		"no version":   `{"config":{}}`,
		"number value": `{"version":1,"config":{"SCRAM-SHA-256":5}}`,
		"not json":     `salt=`,
		"array":        `[]`,
	} {
		if _, err := DecodeUserConfig([]byte(bad)); !errors.Is(err, ErrInvalidCredential) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if _, err := UserCredentials(map[string]string{ScramSHA256: "salt=" + b64_16}); !errors.Is(err, ErrInvalidCredential) {
		t.Fatalf("bad credential in config: %v", err)
	}
	empty, err := DecodeUserConfig([]byte(`{"version":1}`))
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("no config: %v %v", empty, err)
	}
}

// FuzzDecodeCredential feeds arbitrary text to DecodeCredential (both SCRAM
// mechanisms) and arbitrary bytes to DecodeUserConfig and UserCredentials.
// Invariants: nothing panics; every failure wraps ErrInvalidCredential;
// a decoded credential is valid for its mechanism (non-empty salt,
// keys one hash long, iterations > 0) and re-encodes to a string that
// decodes to the same credential, whose encoding is then stable; a decoded
// user config re-encodes and decodes to the same map.
func FuzzDecodeCredential(f *testing.F) {
	ok := "salt=" + b64_16 + ",stored_key=" + b64_32 + ",server_key=" + b64_32 + ",iterations=4096"
	f.Add([]byte(ok))
	f.Add([]byte(`{"version":1,"config":{"SCRAM-SHA-256":"` + ok + `","producer_byte_rate":"10"}}`))
	f.Add([]byte(`{"version":1,"config":{}}`))
	f.Add([]byte("salt=,stored_key=,server_key=,iterations=-1"))
	f.Add([]byte("iterations=4096,iterations=4096"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mech := range []string{ScramSHA256, ScramSHA512} {
			c, err := DecodeCredential(mech, string(data))
			if err != nil {
				if !errors.Is(err, ErrInvalidCredential) {
					t.Fatalf("%s: error %v does not wrap ErrInvalidCredential", mech, err)
				}
				continue
			}
			if err := CheckPut("u", c); err != nil {
				t.Fatalf("%s: decoded an invalid credential: %v", mech, err)
			}
			enc := EncodeCredential(c)
			c2, err := DecodeCredential(mech, enc)
			if err != nil || !reflect.DeepEqual(c2, c) || EncodeCredential(c2) != enc {
				t.Fatalf("%s: re-parse of %q unstable: %v", mech, enc, err)
			}
		}
		cfg, err := DecodeUserConfig(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidCredential) {
				t.Fatalf("user config: error %v does not wrap ErrInvalidCredential", err)
			}
			return
		}
		back, err := DecodeUserConfig(EncodeUserConfig(cfg))
		if err != nil || !maps.Equal(back, cfg) {
			t.Fatalf("user config re-parse unstable: %v", err)
		}
		if _, err := UserCredentials(cfg); err != nil && !errors.Is(err, ErrInvalidCredential) {
			t.Fatalf("user credentials: error %v does not wrap ErrInvalidCredential", err)
		}
	})
}
