package server

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRecyclableRequestsHoldNoBytes: a request whose frame goes back to
// its class pool when the handler returns (recyclable) must not decode
// into fields that alias the frame. kmsg's ReadFrom copies strings; a
// []byte field would alias it (kmsg.Tags do, and no handler reads them).
// Produce's records alias it by design: the append is done when its
// handler returns. This fails if a kmsg upgrade adds a []byte field to
// Fetch, or a key becomes recyclable without a look at its fields.
func TestRecyclableRequestsHoldNoBytes(t *testing.T) {
	allowed := map[int16]map[string]bool{
		apiKeyProduce: {"ProduceRequestTopicPartition.Records": true},
		apiKeyFetch:   {},
	}
	for key := int16(0); key < 100; key++ {
		if !recyclable(key) {
			continue
		}
		ok, known := allowed[key]
		if !known {
			t.Errorf("key %d is recyclable: list the []byte fields its handler may keep here, after checking it keeps none past its return", key)
			continue
		}
		req := kmsg.RequestForKey(key)
		var found []string
		var walk func(typ reflect.Type, seen map[reflect.Type]bool)
		walk = func(typ reflect.Type, seen map[reflect.Type]bool) {
			for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice && typ.Elem().Kind() != reflect.Uint8 {
				typ = typ.Elem()
			}
			if typ.Kind() != reflect.Struct || seen[typ] || typ == reflect.TypeOf(kmsg.Tags{}) {
				return
			}
			seen[typ] = true
			for i := 0; i < typ.NumField(); i++ {
				f := typ.Field(i)
				if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Uint8 {
					if name := typ.Name() + "." + f.Name; !ok[name] {
						found = append(found, name)
					}
					continue
				}
				walk(f.Type, seen)
			}
		}
		walk(reflect.TypeOf(req), map[reflect.Type]bool{})
		if len(found) > 0 {
			t.Errorf("recyclable key %d decodes into []byte fields that alias its frame: %v", key, found)
		}
	}
}
