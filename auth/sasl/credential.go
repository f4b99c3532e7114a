package sasl

// SCRAM credentials and the two forms Kafka stores them in.
//
// The credential string (Kafka's ScramCredentialUtils), one per mechanism,
// base64 in the standard alphabet with padding:
//
//	salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<decimal>
//
// The ZooKeeper entity config /config/users/<sanitized user> (Kafka's
// ConfigEntityZNode), whose config maps each SCRAM mechanism name to its
// credential string beside any other user config (quotas such as
// producer_byte_rate, which must survive a credential change):
//
//	{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}
//
// Both are part of Kafka's format: do not change.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/xdg-go/scram"
)

// Iteration bounds, Kafka's (ScramMechanism and ZkAdminManager): a
// credential is created with DefaultIterations unless asked otherwise, never
// with fewer than MinIterations or more than MaxIterations, and a server
// refuses to authenticate against one with fewer than MinIterations.
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 4096
	// saltLen is the length of the salts NewCredential makes.
	saltLen = 32
)

// ErrInvalidCredential marks a credential string, user config or argument
// that does not make a valid SCRAM credential.
var ErrInvalidCredential = errors.New("sasl: invalid SCRAM credential")

// Credential is what a server stores to authenticate one user with one
// SCRAM mechanism (RFC 5802 section 3): never the password, but StoredKey
// and ServerKey are as sensitive as a password hash. Slices are owned by the
// Credential; functions of this package copy what they keep.
type Credential struct {
	Mechanism  string // ScramSHA256 or ScramSHA512
	Salt       []byte
	StoredKey  []byte // H(HMAC(SaltedPassword, "Client Key"))
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
	Iterations int
}

// String describes c without its keys, so a Credential is safe to log.
func (c Credential) String() string {
	return fmt.Sprintf("%s credential (%d iterations)", c.Mechanism, c.Iterations)
}

// GoString keeps %#v from printing the keys too.
func (c Credential) GoString() string { return c.String() }

// NewCredential derives the credential of password for mechanism with a new
// random 32-byte salt. iterations 0 means DefaultIterations; otherwise it
// must lie in [MinIterations, MaxIterations]. Errors:
// ErrUnsupportedMechanism, ErrInvalidCredential.
func NewCredential(mechanism, password string, iterations int) (Credential, error) {
	if iterations == 0 {
		iterations = DefaultIterations
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, fmt.Errorf("sasl: salt: %w", err)
	}
	return newCredential(mechanism, password, salt, iterations)
}

// newCredential derives the credential with xdg-go/scram (PBKDF2, then the
// RFC 5802 keys), from the password's UTF-8 bytes as Kafka does.
func newCredential(mechanism, password string, salt []byte, iterations int) (Credential, error) {
	if !isScram(mechanism) {
		return Credential{}, fmt.Errorf("%w: %q is not a SCRAM mechanism", ErrUnsupportedMechanism, mechanism)
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("%w: %d iterations, want %d to %d", ErrInvalidCredential, iterations, MinIterations, MaxIterations)
	}
	if len(salt) == 0 {
		return Credential{}, fmt.Errorf("%w: empty salt", ErrInvalidCredential)
	}
	cl, err := hashFor(mechanism).NewClientUnprepped("", password, "")
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %s", ErrInvalidCredential, mechanism)
	}
	sc, err := cl.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	if err != nil {
		return Credential{}, fmt.Errorf("%w: key derivation failed", ErrInvalidCredential)
	}
	return Credential{
		Mechanism:  mechanism,
		Salt:       bytes.Clone(salt),
		StoredKey:  sc.StoredKey,
		ServerKey:  sc.ServerKey,
		Iterations: iterations,
	}, nil
}

// CredentialFromSaltedPassword makes the credential of an
// AlterUserScramCredentials upsertion (KIP-554), which carries the salt and
// SaltedPassword = PBKDF2(password, salt, iterations) instead of the
// password: ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey =
// H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key") (RFC 5802
// section 3; xdg-go/scram offers no entry point below the password).
// iterations must lie in [MinIterations, MaxIterations] and the salted
// password be one hash long. Errors: ErrUnsupportedMechanism,
// ErrInvalidCredential.
func CredentialFromSaltedPassword(mechanism string, salt, saltedPassword []byte, iterations int) (Credential, error) {
	if !isScram(mechanism) {
		return Credential{}, fmt.Errorf("%w: %q is not a SCRAM mechanism", ErrUnsupportedMechanism, mechanism)
	}
	h := hashFor(mechanism)
	switch {
	case iterations < MinIterations || iterations > MaxIterations:
		return Credential{}, fmt.Errorf("%w: %d iterations, want %d to %d", ErrInvalidCredential, iterations, MinIterations, MaxIterations)
	case len(salt) == 0:
		return Credential{}, fmt.Errorf("%w: empty salt", ErrInvalidCredential)
	case len(saltedPassword) != h().Size():
		return Credential{}, fmt.Errorf("%w: salted password of %d bytes, want %d", ErrInvalidCredential, len(saltedPassword), h().Size())
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(saltedPassword, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return Credential{
		Mechanism:  mechanism,
		Salt:       bytes.Clone(salt),
		StoredKey:  stored.Sum(nil),
		ServerKey:  mac(saltedPassword, "Server Key"),
		Iterations: iterations,
	}, nil
}

// Credential string keys, Kafka's ScramCredentialUtils.
const (
	keySalt       = "salt"
	keyStoredKey  = "stored_key"
	keyServerKey  = "server_key"
	keyIterations = "iterations"
)

// EncodeCredential returns c in Kafka's credential string form. It does not
// validate c.
func EncodeCredential(c Credential) string {
	enc := base64.StdEncoding
	return keySalt + "=" + enc.EncodeToString(c.Salt) +
		"," + keyStoredKey + "=" + enc.EncodeToString(c.StoredKey) +
		"," + keyServerKey + "=" + enc.EncodeToString(c.ServerKey) +
		"," + keyIterations + "=" + strconv.Itoa(c.Iterations)
}

// DecodeCredential parses Kafka's credential string form for mechanism.
// The four keys may come in any order, each exactly once; base64 may omit
// its padding (Java's decoder accepts that). The salt must not be empty,
// the keys must be one hash long and iterations positive; fewer than
// MinIterations decodes (Kafka may hold such a credential) but no Session
// authenticates against it. Errors: ErrUnsupportedMechanism,
// ErrInvalidCredential (the error never quotes the keys).
func DecodeCredential(mechanism, s string) (Credential, error) {
	if !isScram(mechanism) {
		return Credential{}, fmt.Errorf("%w: %q is not a SCRAM mechanism", ErrUnsupportedMechanism, mechanism)
	}
	c := Credential{Mechanism: mechanism}
	seen := map[string]bool{}
	for _, tok := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" {
			return Credential{}, fmt.Errorf("%w: %s: field without a key=value", ErrInvalidCredential, mechanism)
		}
		if seen[k] {
			return Credential{}, fmt.Errorf("%w: %s: %q twice", ErrInvalidCredential, mechanism, k)
		}
		seen[k] = true
		var err error
		switch k {
		case keySalt:
			c.Salt, err = decodeB64(v)
		case keyStoredKey:
			c.StoredKey, err = decodeB64(v)
		case keyServerKey:
			c.ServerKey, err = decodeB64(v)
		case keyIterations:
			c.Iterations, err = strconv.Atoi(v)
			if err == nil && (c.Iterations <= 0 || int64(c.Iterations) > 1<<31-1) {
				err = errors.New("out of range")
			}
		default:
			return Credential{}, fmt.Errorf("%w: %s: unknown field %q", ErrInvalidCredential, mechanism, k)
		}
		if err != nil {
			return Credential{}, fmt.Errorf("%w: %s: bad %s", ErrInvalidCredential, mechanism, k)
		}
	}
	size := hashFor(mechanism)().Size()
	switch {
	case len(seen) != 4:
		return Credential{}, fmt.Errorf("%w: %s: want salt, stored_key, server_key and iterations", ErrInvalidCredential, mechanism)
	case len(c.Salt) == 0:
		return Credential{}, fmt.Errorf("%w: %s: empty salt", ErrInvalidCredential, mechanism)
	case len(c.StoredKey) != size || len(c.ServerKey) != size:
		return Credential{}, fmt.Errorf("%w: %s: keys of %d and %d bytes, want %d",
			ErrInvalidCredential, mechanism, len(c.StoredKey), len(c.ServerKey), size)
	}
	return c, nil
}

func decodeB64(v string) ([]byte, error) {
	if strings.HasSuffix(v, "=") || len(v)%4 == 0 {
		return base64.StdEncoding.Strict().DecodeString(v)
	}
	return base64.RawStdEncoding.Strict().DecodeString(v)
}

// userZnodeVersion is the version of the /config/users/<user> JSON.
// Part of Kafka's format: do not change.
const userZnodeVersion = 1

type userZnode struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

// EncodeUserConfig returns the /config/users/<user> znode holding config
// (mechanism names to credential strings, plus any other user config).
func EncodeUserConfig(config map[string]string) []byte {
	if config == nil {
		config = map[string]string{}
	}
	b, _ := json.Marshal(userZnode{Version: userZnodeVersion, Config: config}) // cannot fail: strings only
	return b
}

// DecodeUserConfig parses a /config/users/<user> znode and returns its
// config, never nil. A znode without "config" decodes as empty. Errors wrap
// ErrInvalidCredential: not JSON, a version other than 1, a non-string value.
func DecodeUserConfig(data []byte) (map[string]string, error) {
	var z userZnode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("%w: user config: %v", ErrInvalidCredential, jsonErrorWithoutValue(err))
	}
	if z.Version != userZnodeVersion {
		return nil, fmt.Errorf("%w: user config version %d, want %d", ErrInvalidCredential, z.Version, userZnodeVersion)
	}
	if z.Config == nil {
		z.Config = map[string]string{}
	}
	return z.Config, nil
}

// jsonErrorWithoutValue keeps json's error classes but drops the quoted
// input some of them carry (a credential string is sensitive).
func jsonErrorWithoutValue(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return "field " + te.Field + " has the wrong type"
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	return "not a JSON object"
}

// UserCredentials returns the SCRAM credentials in a user config (the
// entries whose key is a SCRAM mechanism name); other keys are ignored.
// Errors: a SCRAM entry that does not decode (ErrInvalidCredential).
func UserCredentials(config map[string]string) (map[string]Credential, error) {
	out := map[string]Credential{}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		s, ok := config[m]
		if !ok {
			continue
		}
		c, err := DecodeCredential(m, s)
		if err != nil {
			return nil, err
		}
		out[m] = c
	}
	return out, nil
}

// WithCredential returns a copy of config with c stored under its
// mechanism, other entries kept.
func WithCredential(config map[string]string, c Credential) map[string]string {
	out := maps.Clone(config)
	if out == nil {
		out = map[string]string{}
	}
	out[c.Mechanism] = EncodeCredential(c)
	return out
}
