package server

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLocalMetadataSize: the size hint of a single node's Metadata answer
// for all topics is never below what the answer encodes to, at any
// version, and at most a few bytes per topic above it.
func TestLocalMetadataSize(t *testing.T) {
	s := newTestServer(t, nil, Options{ClusterID: "size", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092})
	s.topics.admin.Lock()
	for i, parts := range []int32{1, 3, 100, 200} {
		spec := topicSpec{name: fmt.Sprintf("size-%d-%s", i, "abcdefghij"[:i*3]), partitions: parts, rf: 1}
		if _, err := s.createTopicLocked(spec); err != nil {
			s.topics.admin.Unlock()
			t.Fatal(err)
		}
	}
	s.topics.admin.Unlock()
	for v := int16(0); v <= 12; v++ {
		t.Run(fmt.Sprintf("v=%d", v), func(t *testing.T) {
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(v)
			req.Topics = nil
			resp, err := handleMetadata(s, &reqCtx{version: v}, req)
			if err != nil {
				t.Fatal(err)
			}
			resp.kresp.SetVersion(v)
			got := len(resp.kresp.AppendTo(nil))
			hint := resp.sizeHint
			topics := len(resp.kresp.(*kmsg.MetadataResponse).Topics)
			if topics != 4 {
				t.Fatalf("%d topics in the answer, want 4", topics)
			}
			if hint < got || hint > got+128+32*topics {
				t.Fatalf("size hint %d for an answer of %d bytes", hint, got)
			}
		})
	}
}
