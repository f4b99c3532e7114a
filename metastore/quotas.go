package metastore

// Client quotas of a single-node broker (ZooKeeper's /config/users and
// /config/clients in cluster mode: cluster/quotas.go). One key per entity:
//
//	key:    0x0C esc(user part) esc(client id part)
//	part:   "" absent | "*" the default | "=" name
//	value:  u8 ver=1 | count n, n x (str key, u64 IEEE-754 bits of the value)
//
// Keys are Kafka's config names (producer_byte_rate, ...) so a key this
// release does not know survives a rewrite by it. Part of the on-disk
// format: do not change; evolve with a new version byte. A value that is
// truncated, has trailing bytes or an unknown version is ErrCorrupt.

import (
	"errors"
	"math"

	"github.com/sluice/sluice/quota"
)

const quotaV1 byte = 1

func quotaPart(c quota.Component) string {
	switch {
	case !c.Set:
		return ""
	case c.Default:
		return "*"
	}
	return "=" + c.Name
}

func parseQuotaPart(s string) (quota.Component, bool) {
	switch {
	case s == "":
		return quota.Component{}, true
	case s == "*":
		return quota.Default, true
	case len(s) > 1 && s[0] == '=':
		return quota.Named(s[1:]), true
	}
	return quota.Component{}, false
}

func quotaKey(dst []byte, e quota.Entity) []byte {
	return appendName(appendName(append(dst, kindQuota), quotaPart(e.User)), quotaPart(e.ClientID))
}

func decodeQuotaKey(key []byte) (quota.Entity, error) {
	if len(key) == 0 || key[0] != kindQuota {
		return quota.Entity{}, corruptf(key, "not a client quota key")
	}
	u, rest, ok := decodeName(key[1:])
	var c string
	if ok {
		c, rest, ok = decodeName(rest)
	}
	var e quota.Entity
	if ok && len(rest) == 0 {
		var ok1, ok2 bool
		e.User, ok1 = parseQuotaPart(u)
		e.ClientID, ok2 = parseQuotaPart(c)
		ok = ok1 && ok2 && e.Valid()
	}
	if !ok || len(rest) != 0 {
		return quota.Entity{}, corruptf(key, "bad client quota key")
	}
	return e, nil
}

func encodeQuota(dst []byte, v quota.Values) []byte {
	keys := v.SortedKeys()
	dst = append(dst, quotaV1)
	dst = appendU32(dst, uint32(len(keys)))
	for _, k := range keys {
		t, _ := quota.TypeOf(k)
		dst = appendStr(dst, k)
		dst = appendI64(dst, int64(math.Float64bits(v[t])))
	}
	return dst
}

func decodeQuota(key, b []byte) (quota.Values, error) {
	d := decoder{b: b}
	var v quota.Values
	if ver := d.u8(); ver != quotaV1 {
		return v, corruptf(key, "client quota value version %d", firstByte(b))
	}
	n := d.count(12)
	for i := 0; i < n; i++ {
		k := d.str()
		x := math.Float64frombits(uint64(d.i64()))
		if t, ok := quota.TypeOf(k); ok && x > 0 {
			v[t] = x
		}
	}
	if !d.done() {
		return quota.Values{}, corruptf(key, "client quota value of %d bytes is truncated or has trailing bytes", len(b))
	}
	return v, nil
}

// ClientQuota returns the quotas of e (empty: none).
func (s *Store) ClientQuota(e quota.Entity) (quota.Values, error) {
	key := quotaKey(nil, e)
	var v quota.Values
	err := s.get(key, func(b []byte) (err error) {
		v, err = decodeQuota(key, b)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return quota.Values{}, nil
	}
	return v, err
}

// SetClientQuota makes v the quotas of e, synced; empty v deletes them.
// Callers serialize read-modify-writes of one entity themselves.
func (s *Store) SetClientQuota(e quota.Entity, v quota.Values) error {
	key := quotaKey(nil, e)
	if v.Empty() {
		if err := s.deleteExisting(key); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		return nil
	}
	return s.set(key, encodeQuota(nil, v))
}

// ClientQuotas returns every entity with a quota. A damaged key or value
// fails the call with an error wrapping ErrCorrupt.
func (s *Store) ClientQuotas() (map[quota.Entity]quota.Values, error) {
	out := map[quota.Entity]quota.Values{}
	err := s.scan([]byte{kindQuota}, []byte{kindQuota + 1}, func(k, b []byte) error {
		e, err := decodeQuotaKey(k)
		if err != nil {
			return err
		}
		v, err := decodeQuota(k, b)
		if err != nil {
			return err
		}
		if !v.Empty() {
			out[e] = v
		}
		return nil
	})
	return out, err
}
