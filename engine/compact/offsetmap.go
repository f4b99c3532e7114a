package compact

import (
	"hash/maphash"
	"math/bits"
	"runtime"
)

// HashSize is the bytes of key hash an OffsetMap keeps per key: two
// independent 64-bit maphash values, as many bytes as Kafka's MD5.
const HashSize = 16

// BytesPerEntry is the memory one OffsetMap slot takes: the key hash and an
// 8-byte offset (Kafka's SkimpyOffsetMap.bytesPerEntry with MD5).
const BytesPerEntry = HashSize + 8

// DefaultLoadFactor is Kafka's log.cleaner.io.buffer.load.factor: the
// fraction of slots an OffsetMap fills before Full reports true. Past it,
// open addressing probes too long for the few more keys it would take.
const DefaultLoadFactor = 0.9

// directProbes is how many hash-derived positions a lookup tries before
// it falls back to a linear scan from the last one, as Kafka's positionOf
// switches to linear probing once the hash bytes are used up. The linear
// tail makes every probe sequence reach every slot, whatever the table
// size (slots need not be a power of two or a prime).
const directProbes = 8

// slot is one entry: h1, h2 the key hash; off the offset plus one, so that
// the zero slot is empty (offsets are >= 0).
type slot struct {
	h1, h2 uint64
	off    int64
}

// OffsetMap maps the hash of a record key to the highest offset seen for
// that key, in a fixed table sized by a memory bound: Kafka's
// SkimpyOffsetMap, the dedupe buffer of the log cleaner's first pass.
// Memory does not grow with the number of keys; when the table reaches
// its load factor, Full reports true, the first pass stops there, and the
// rest of the dirty log is cleaned by a later pass.
//
// Keys are not stored, only a 128-bit hash of each (two independent
// 64-bit maphash values with per-map random seeds). Two keys whose hashes
// collide share one entry, and the cleaner would then drop the older of
// their latest records: silent loss of a value. Kafka accepts the same
// trade-off with MD5 (128 bits): for n keys in one pass the chance of any
// collision is about n²/2^129, 1e-23 for a million keys and 1e-19 for 10^8,
// far below the chance of an undetected disk error. A 64-bit hash would
// save a third of the memory but raise that to n²/2^65 (3e-8 at a million
// keys, 3e-4 at 10^8): not acceptable for data that is never re-derived.
// The seeds change on Clear (Kafka's "change the salt"), so an unlucky pair
// of keys does not collide in every pass. maphash rather than MD5: the map
// never leaves the process, so the hash needs no stable definition, and
// maphash hashes a key several times faster.
//
// The table is probed by open addressing: directProbes positions derived
// from the hash, then linearly. Put and Get do not allocate.
//
// An OffsetMap is not safe for concurrent use: each cleaner thread owns one
// (Kafka divides log.cleaner.dedupe.buffer.size among the threads).
type OffsetMap struct {
	table      []slot // len(table) == Slots(); fixed at NewOffsetMap
	mem        []byte // the mapping table lives in (newTable); nil: on the Go heap
	entries    int    // occupied slots; Invariant: entries <= maxEntries
	maxEntries int    // Full() once entries reaches it
	latest     int64  // the highest offset the map covers; -1 when none
	seed1      maphash.Seed
	seed2      maphash.Seed
}

// NewOffsetMap returns a map that uses memory bytes for its table
// (log.cleaner.dedupe.buffer.size divided by the cleaner threads): memory
// / BytesPerEntry slots, of which DefaultLoadFactor are filled. It panics
// if that leaves no room for even one key, as Kafka refuses to start a
// cleaner that could never make progress.
func NewOffsetMap(memory int) *OffsetMap {
	return NewOffsetMapLoad(memory, DefaultLoadFactor)
}

// NewOffsetMapLoad is NewOffsetMap with a load factor in (0, 1].
func NewOffsetMapLoad(memory int, loadFactor float64) *OffsetMap {
	slots := memory / BytesPerEntry
	maxEntries := int(float64(slots) * loadFactor)
	if loadFactor <= 0 || loadFactor > 1 || maxEntries < 1 {
		panic("compact: offset map too small to hold even one key: raise log.cleaner.dedupe.buffer.size")
	}
	m := &OffsetMap{maxEntries: maxEntries}
	m.table, m.mem = newTable(slots)
	releaseWith(m, m.mem)
	m.reset()
	return m
}

// Slots is the number of entries the table has room for.
func (m *OffsetMap) Slots() int { return len(m.table) }

// Len is the number of distinct key hashes in the map.
func (m *OffsetMap) Len() int { return m.entries }

// Full reports that the map has reached its load factor: Put refuses new
// keys from now on (it still updates keys already present).
func (m *OffsetMap) Full() bool { return m.entries >= m.maxEntries }

// Latest is the highest offset the map covers: every keyed record at or
// below it (from the start the map was built from) has its key's latest
// offset in the map. Records past it are kept by Filter. -1 when the map is
// empty.
func (m *OffsetMap) Latest() int64 { return m.latest }

// SetLatest moves the covered range forward to offset, as Kafka's
// updateLatestOffset does over an offset gap at a segment boundary. It
// never moves it back.
func (m *OffsetMap) SetLatest(offset int64) {
	if offset > m.latest {
		m.latest = offset
	}
}

// Clear empties the map for the next cleaning pass and draws new hash
// seeds.
func (m *OffsetMap) Clear() {
	clearTable(m.table, m.mem)
	runtime.KeepAlive(m) // see Get
	m.reset()
}

func (m *OffsetMap) reset() {
	m.entries, m.latest = 0, -1
	m.seed1, m.seed2 = maphash.MakeSeed(), maphash.MakeSeed()
}

// hash returns the two 64-bit halves of key's hash.
func (m *OffsetMap) hash(key []byte) (uint64, uint64) {
	return maphash.Bytes(m.seed1, key), maphash.Bytes(m.seed2, key)
}

// position is the slot index of probe attempt i for hash (h1, h2).
// Attempts below directProbes are spread by h2 (double hashing); later
// ones walk linearly from the last of those.
func (m *OffsetMap) position(h1, h2 uint64, i int) int {
	n := uint64(len(m.table))
	if i < directProbes {
		x := h1 + uint64(i)*(h2|1)
		hi, _ := bits.Mul64(x, n) // x scaled into [0, n) without a division
		return int(hi)
	}
	p := m.position(h1, h2, directProbes-1)
	return int((uint64(p) + uint64(i-directProbes+1)) % n)
}

// Put records offset as the latest offset of key and reports whether it
// did: a key not yet in the map is refused (false) once Full. An offset
// lower than the one stored for the key replaces it all the same; the
// cleaner feeds offsets in increasing order. Put advances Latest to offset.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	h1, h2 := m.hash(key)
	for i := 0; i < len(m.table)+directProbes; i++ {
		s := &m.table[m.position(h1, h2, i)]
		if s.off == 0 {
			if m.entries >= m.maxEntries {
				return false
			}
			*s = slot{h1: h1, h2: h2, off: offset + 1}
			m.entries++
			m.SetLatest(offset)
			return true
		}
		if s.h1 == h1 && s.h2 == h2 {
			s.off = offset + 1
			m.SetLatest(offset)
			return true
		}
	}
	return false // unreachable: maxEntries < slots leaves an empty slot
}

// Get returns the latest offset recorded for key; ok is false when the key
// is not in the map.
func (m *OffsetMap) Get(key []byte) (offset int64, ok bool) {
	// m must outlive the reads of s: a mapped table is unmapped once m is
	// unreachable (releaseWith).
	defer runtime.KeepAlive(m)
	h1, h2 := m.hash(key)
	for i := 0; i < len(m.table)+directProbes; i++ {
		s := &m.table[m.position(h1, h2, i)]
		if s.off == 0 {
			return -1, false
		}
		if s.h1 == h1 && s.h2 == h2 {
			return s.off - 1, true
		}
	}
	return -1, false
}
