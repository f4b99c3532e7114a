package server

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/zerocopy"
)

// TestLocalMetadataEncoding: a single node's Metadata answer, whose
// topics localMetadata writes from the registry, is byte for byte what
// kmsg writes for the same answer built as kmsg structs, at every version
// served, for all topics and for a list naming existing, unknown and
// internal topics and one by id; and the size hint is never below the
// answer's size and at most a few bytes per topic above it.
func TestLocalMetadataEncoding(t *testing.T) {
	s := newTestServer(t, nil, Options{ClusterID: "size", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092})
	s.rm.Lock()
	var ids [][16]byte
	for i, parts := range []int32{1, 3, 100, 200} {
		spec := topicSpec{name: fmt.Sprintf("size-%d-%s", i, "abcdefghij"[:i*3]), partitions: parts, rf: 1}
		tp, err := s.createTopicLocked(spec)
		if err != nil {
			s.rm.Unlock()
			t.Fatal(err)
		}
		ids = append(ids, tp.ID)
	}
	if _, err := s.createTopicLocked(topicSpec{name: offsets.Topic, partitions: 2, rf: 1}); err != nil {
		s.rm.Unlock()
		t.Fatal(err)
	}
	s.rm.Unlock()
	named := func(v int16) []kmsg.MetadataRequestTopic {
		var ts []kmsg.MetadataRequestTopic
		for _, n := range []string{"size-2-abcdef", "no-such-topic", offsets.Topic, "size-0-"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = &n
			ts = append(ts, rt)
		}
		if v >= 12 {
			rt := kmsg.NewMetadataRequestTopic()
			rt.TopicID = ids[1]
			ts = append(ts, rt)
		}
		return ts
	}
	for v := int16(0); v <= apis[apiKeyMetadata].max; v++ {
		for _, which := range []string{"all", "named"} {
			t.Run(fmt.Sprintf("v=%d/topics=%s", v, which), func(t *testing.T) {
				req := kmsg.NewPtrMetadataRequest()
				req.SetVersion(v)
				req.Topics = nil
				if which == "named" {
					req.Topics = named(v)
				}
				out, err := handleMetadata(s, &reqCtx{version: v}, req)
				if err != nil {
					t.Fatal(err)
				}
				if out.encode == nil {
					t.Fatal("answered by kmsg, not written from the topics")
				}
				var buf bytes.Buffer
				w := zerocopy.NewWriter(&buf)
				if err := encodeResponse(w, &response{corr: 7, encode: out.encode}); err != nil {
					t.Fatal(err)
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				// The same answer as kmsg structs, encoded by kmsg.
				resp := out.kresp.(*kmsg.MetadataResponse)
				full := *resp
				full.Topics = append([]kmsg.MetadataResponseTopic(nil), resp.Topics...)
				local := make([]*replica.Topic, len(full.Topics))
				for i := range full.Topics {
					mt := &full.Topics[i]
					if tp := s.rm.TopicByID(mt.TopicID); tp != nil && mt.ErrorCode == 0 && mt.Partitions == nil {
						local[i] = tp
						*mt = localTopic(tp, s.nodeID, nil)
					}
				}
				want := appendKmsgFrame(nil, 7, &full)
				if !bytes.Equal(buf.Bytes(), want) {
					t.Fatalf("written %d bytes, kmsg writes %d:\n% x\nwant\n% x", buf.Len(), len(want), buf.Bytes(), want)
				}
				// Decoded back, every topic of the registry has its partitions.
				var back kmsg.MetadataResponse
				back.SetVersion(v)
				if err := back.ReadFrom(want[8+btoi(v >= 9):]); err != nil {
					t.Fatal(err)
				}
				for i, tp := range local {
					if tp != nil && len(back.Topics[i].Partitions) != len(tp.Parts) {
						t.Fatalf("topic %d: %d partitions, want %d", i, len(back.Topics[i].Partitions), len(tp.Parts))
					}
				}
				body := len(want) - 8 - btoi(v >= 9)
				if hint := localMetadataSize(v, resp, local); hint < body || hint > body+128+32*len(local) {
					t.Fatalf("size hint %d for an answer of %d bytes", hint, body)
				}
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
