package server

import (
	"encoding/binary"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// newTestServer returns a Server (not listening) on a memory store and a
// metastore in a temp dir, closed at cleanup; opts' Config, Meta, Store
// and Logger are filled in (cfg nil: the defaults).
func newTestServer(t testing.TB, cfg *config.Config, opts Options) *Server {
	t.Helper()
	return newTestServerOn(t, "memory", cfg, opts)
}

// newTestServerOn is newTestServer on a store of backend.
func newTestServerOn(t testing.TB, backend string, cfg *config.Config, opts Options) *Server {
	t.Helper()
	dir := t.TempDir()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	store, err := engine.Open(backend, engine.Options{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		meta.Close()
		t.Fatal(err)
	}
	opts.Config = config.Default()
	if cfg != nil {
		opts.Config = *cfg
	}
	opts.Logger, opts.Meta, opts.Store = slog.New(slog.DiscardHandler), meta, store
	s, err := New(opts)
	if err != nil {
		store.Close()
		meta.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		store.Close()
		meta.Close()
	})
	return s
}

// newFuzzServer returns a Server on a memory store that is already shut
// down, so long polls return at once, with a small partition limit so that
// created topics stay cheap.
func newFuzzServer(t testing.TB) *Server {
	cfg := config.Default()
	cfg.GroupShare.Enable = true // the share group APIs are fuzzed too
	s := newTestServer(t, &cfg, Options{ClusterID: "fuzz", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092})
	s.rules.maxPartitions = 4
	s.Shutdown()
	return s
}

// seedRequests are valid frames (without the size prefix) of every served
// API, at a few versions, for the fuzz corpus.
func seedRequests() [][]byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	var out [][]byte
	add := func(req kmsg.Request) {
		b := f.AppendRequest(nil, req, 1)
		out = append(out, b[4:])
	}
	batch := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}})
	for key, a := range apis {
		for _, v := range []int16{a.min, a.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			switch r := req.(type) {
			case *kmsg.CreateTopicsRequest:
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", 2, 1
				r.Topics = append(r.Topics, rt)
			case *kmsg.ProduceRequest:
				r.Acks = 1
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Records = batch
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
			case *kmsg.FetchRequest:
				r.MaxWaitMillis, r.MinBytes, r.MaxBytes = 100, 1, 1<<20
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.PartitionMaxBytes = 1 << 20
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
			case *kmsg.AlterClientQuotasRequest:
				e := kmsg.NewAlterClientQuotasRequestEntry()
				e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("u")}, {Type: "client-id"}}
				e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}
				r.Entries = append(r.Entries, e)
			case *kmsg.DescribeClientQuotasRequest:
				r.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 2}}
			case *kmsg.MetadataRequest:
				r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
			case *kmsg.ListOffsetsRequest:
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = -1
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
			}
			add(req)
		}
	}
	return out
}

// FuzzDispatch feeds arbitrary request frames (the bytes after the size
// prefix) to the dispatcher: decodeRequest, then handleRequest, then the
// response encoder. Invariants checked:
//   - nothing panics, not even inside the recover that guards production
//     (the server's panic counter stays 0);
//   - decodeRequest never returns nil, and a request it accepted is either
//     answered or, only for acks=0 produce and connection-closing errors,
//     left unanswered;
//   - every response encodes into a frame whose size prefix matches its
//     length.
func FuzzDispatch(f *testing.F) {
	for _, b := range seedRequests() {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 18, 0, 9, 0, 0, 0, 1, 0xff, 0xff})
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		r := s.decodeRequest(body)
		if r == nil {
			t.Fatal("decodeRequest returned nil")
		}
		resp := s.handleRequest(nil, r)
		if n := s.panics.Load(); n != 0 {
			t.Fatalf("%d panics recovered", n)
		}
		if resp == nil {
			if _, ok := r.kreq.(*kmsg.ProduceRequest); !ok {
				t.Fatalf("no response to %T", r.kreq)
			}
			return
		}
		if resp.close {
			return
		}
		w := zerocopy.NewWriter(io.Discard)
		if err := encodeResponse(w, resp); err != nil {
			t.Fatalf("encode: %v", err)
		}
		var frame []byte
		frame = append(frame, w.Frame()...)
		if len(frame) < 8 {
			t.Fatalf("frame of %d bytes", len(frame))
		}
		if size := int64(binary.BigEndian.Uint32(frame)); size+4 != w.Buffered() {
			t.Fatalf("size prefix %d, frame %d bytes", size, w.Buffered())
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	})
}
