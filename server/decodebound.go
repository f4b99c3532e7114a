package server

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

//go:generate go run ./internal/decodegen

// Decode budget: what a request frame may decode into.
//
// kmsg checks an array's count against the bytes left times its
// element's smallest encoding before it allocates the array, so a frame
// cannot announce more elements than it holds. But an element is larger
// in memory than on the wire: an empty compact string is one byte and a
// 16-byte string header; a Fetch v12 topic is three bytes (empty name,
// empty partitions, no tags) and a 72-byte FetchRequestTopic; an unknown
// tagged field is three bytes and about 160 bytes of map. Measured over
// every array of every served API and version (decode_bounds_test.go),
// a frame decoded into up to 26.7 times its size through arrays
// (StopReplica v3 topics), 52 times through unknown tags; a 100 MiB frame
// (socket.request.max.bytes) into 5 GiB that no memory pool counts.
//
// So before kmsg decodes a frame, decodeBudget walks its bytes with the
// request's wire shape (requestShapes, generated from kmsg's decoders by
// internal/decodegen) and adds up what kmsg will allocate: each array's
// count times its element's Go size, each string's bytes, each unknown
// tag. A frame whose total would pass maxDecodedPerByte times its size
// plus decodeBudgetSlack is refused before anything is allocated, and the
// connection is closed as for any request that cannot be parsed (Kafka
// closes the connection on an InvalidRequestException). The walk
// allocates nothing and costs about 35 ns per Produce partition, 55 per
// Fetch partition (BenchmarkDecodeBudget: 3.5 and 5.4 us for 100), next
// to a decode that allocates them. Real requests stay far below the
// bound: their elements carry names, ids and records, a handful of bytes
// of wire per Go word.
const (
	maxDecodedPerByte = 8
	decodeBudgetSlack = 64 << 10 // any small frame, whatever its shape
	// unknownTagCost bounds what kmsg's Tags.Set costs per unknown tagged
	// field, map growth included (measured: 157 bytes per tag over 16,000
	// tags), and unknownTagsBase a struct's first one (the map itself).
	unknownTagCost  = 160
	unknownTagsBase = 320
)

// errDecodeBudget is why a frame was refused by decodeBudget.
var errDecodeBudget = errors.New("server: request would decode into more memory than its size allows")

// dKind is how a field is encoded.
type dKind uint8

const (
	dInt8  dKind = iota // int8, bool
	dInt16              // int16, uint16
	dInt32
	dInt64 // int64, float64
	dUUID
	dString        // int16 length, compact in flexible versions
	dStringStd     // int16 length in every version
	dNullString    // as dString, -1 (compact 0) is null: a *string
	dNullStringStd // as dNullString, never compact
	dBytes         // int32 length, compact in flexible versions; aliases the frame
	dBytesStd
	dNullBytes
	dNullBytesStd
	dArray      // int32 count, compact in flexible versions
	dArrayStd   // int32 count in every version
	dStruct     // a struct value inline: shape
	dNullStruct // int8 -1 for null, else a new(T) of size bytes: shape
)

// dField is one field of a struct's wire shape.
type dField struct {
	kind       dKind
	minV, maxV int16 // versions that have the field
	tag        int32 // >= 0: a tagged field of that key; -1: in line
	elem       dKind // arrays: the element's kind
	shape      *dShape
	size       uintptr // arrays: an element's Go size; dNullStruct: the struct's
}

// dShape is a struct's fields in wire order (tagged ones anywhere).
type dShape = []dField

// requestShape is a request's wire shape.
type requestShape struct {
	flexible int16 // first flexible version; -1: none
	size     uintptr
	shape    *dShape
}

// decodeBudget returns errDecodeBudget, with what was found, when body
// (the request body after its header, of a frame of frameLen bytes)
// would decode into more than the budget for frameLen. A body the walk
// cannot parse is left to kmsg, which refuses it: the walk charges every
// allocation kmsg makes before the point where both fail.
func decodeBudget(key, version int16, body []byte, frameLen int) error {
	limit := int64(maxDecodedPerByte)*int64(frameLen) + decodeBudgetSlack
	if used := decodedSize(key, version, body, limit); used > limit {
		return fmt.Errorf("%w: %s v%d, %d-byte frame, over %d bytes decoded (limit %d)",
			errDecodeBudget, kmsg.NameForKey(key), version, frameLen, used, limit)
	}
	return nil
}

// decodedSize returns about how many bytes kmsg allocates decoding body
// as a request of key at version (never less), or a number above limit
// as soon as it passes limit. 0: no shape for key.
func decodedSize(key, version int16, body []byte, limit int64) int64 {
	rs, ok := requestShapes[key]
	if !ok {
		return 0
	}
	w := budgetWalk{
		b:       kbin.Reader{Src: body},
		version: version,
		flex:    rs.flexible >= 0 && version >= rs.flexible,
		limit:   limit,
		used:    int64(rs.size),
	}
	w.shape(rs.shape)
	return w.used
}

// budgetWalk is one walk of a frame: b's sticky error ends it, as does
// used passing limit.
type budgetWalk struct {
	b       kbin.Reader
	version int16
	flex    bool
	limit   int64
	used    int64
}

// over reports whether the walk should stop: the budget is spent or
// the bytes do not parse.
func (w *budgetWalk) over() bool { return w.used > w.limit || !w.b.Ok() }

// charge adds n bytes of heap: Go's size classes round an allocation up
// by at most an eighth (and small ones to 8 bytes).
func (w *budgetWalk) charge(n int64) {
	if n > 0 {
		w.used += n + n/8 + 8
	}
}

func (w *budgetWalk) shape(s *dShape) {
	tagged := false
	for i := range *s {
		f := &(*s)[i]
		if f.tag >= 0 {
			tagged = true
			continue
		}
		if w.version < f.minV || w.version > f.maxV {
			continue
		}
		w.field(f.kind, f)
		if w.over() {
			return
		}
	}
	if w.flex {
		w.tags(s, tagged)
	}
}

// tags walks a tag section: known tags by their field, in a reader of
// their own bytes as kmsg does, unknown ones charged as map entries.
func (w *budgetWalk) tags(s *dShape, known bool) {
	n := w.b.Uvarint()
	unknown := int64(0)
	for ; n > 0 && !w.over(); n-- {
		key := w.b.Uvarint()
		span := w.b.Span(int(w.b.Uvarint()))
		var f *dField
		for i := range *s {
			if known && (*s)[i].tag == int32(key) {
				f = &(*s)[i]
				break
			}
		}
		if f == nil {
			unknown++
			w.used += unknownTagCost
			continue
		}
		outer := w.b
		w.b = kbin.Reader{Src: span}
		w.field(f.kind, f)
		ok := w.b.Ok()
		w.b = outer
		if !ok {
			return // kmsg fails here too
		}
	}
	if unknown > 0 {
		w.used += unknownTagsBase
	}
}

// field walks one value of kind k (f: its field, for arrays and structs).
func (w *budgetWalk) field(k dKind, f *dField) {
	b := &w.b
	switch k {
	case dInt8:
		b.Int8()
	case dInt16:
		b.Int16()
	case dInt32:
		b.Int32()
	case dInt64:
		b.Int64()
	case dUUID:
		b.Span(16)
	case dString, dStringStd, dNullString, dNullStringStd:
		l := w.length(k == dString || k == dNullString, false)
		if l < 0 {
			return
		}
		if k == dNullString || k == dNullStringStd {
			w.charge(16) // the *string
		}
		if b.Span(int(l)) != nil {
			w.charge(l)
		}
	case dBytes, dBytesStd, dNullBytes, dNullBytesStd:
		if l := w.length(k == dBytes || k == dNullBytes, true); l > 0 {
			b.Span(int(l)) // aliases the frame
		}
	case dStruct:
		w.shape(f.shape)
	case dNullStruct:
		if b.Int8() != -1 {
			w.charge(int64(f.size))
			w.shape(f.shape)
		}
	case dArray, dArrayStd:
		n := w.length(k == dArray, true)
		if n <= 0 {
			return
		}
		if n > int64(len(b.Src)) { // kmsg refuses it before allocating
			b.Span(len(b.Src) + 1)
			return
		}
		w.charge(n * int64(f.size))
		for ; n > 0 && !w.over(); n-- {
			w.field(f.elem, f)
		}
	}
}

// length reads a string, bytes or array length: compact (an unsigned
// varint of length+1) in flexible versions when compact, else int16 for
// strings and int32 for bytes and arrays (wide). -1 is null.
func (w *budgetWalk) length(compact, wide bool) int64 {
	switch {
	case compact && w.flex:
		return int64(w.b.Uvarint()) - 1
	case wide:
		return int64(w.b.Int32())
	default:
		return int64(w.b.Int16())
	}
}
