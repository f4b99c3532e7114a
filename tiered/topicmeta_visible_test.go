package tiered

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startHiding starts a TopicMetadata against a kfake cluster (seeded with
// __remote_log_metadata when exists) whose Metadata answers do not show
// __remote_log_metadata while hide is set, as a restarted broker's
// metadata does before it has caught up. seen counts the Metadata
// requests that asked for it while hidden, and hid is signalled for each.
func startHiding(t *testing.T, exists bool, hide *atomic.Bool, seen *atomic.Int32, hid chan<- struct{}) *TopicMetadata {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if exists {
		opts = append(opts, kfake.SeedTopics(2, RemoteLogMetadataTopic))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.MetadataRequest)
		if !hide.Load() {
			return nil, nil, false
		}
		for i := range r.Topics {
			if r.Topics[i].Topic != nil && *r.Topics[i].Topic == RemoteLogMetadataTopic {
				hidden := "hidden-remote-log-metadata"
				r.Topics[i].Topic = &hidden // answered UNKNOWN_TOPIC_OR_PARTITION
				seen.Add(1)
				select {
				case hid <- struct{}{}:
				default:
				}
			}
		}
		return nil, nil, false
	})
	m, err := NewTopicMetadata(TopicMetadataOptions{Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, BrokerID: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	m.Start()
	return m
}

// awaitReady polls m until a read succeeds, bounded.
func awaitReady(t *testing.T, m *TopicMetadata) {
	t.Helper()
	for i := 0; ; i++ {
		segs, err := m.Segments(testTP)
		if err == nil {
			if len(segs) != 0 {
				t.Fatalf("segments %+v in an empty topic", segs)
			}
			return
		}
		if !errors.Is(err, ErrMetadataNotReady) || i == 1000 {
			t.Fatalf("view never ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTopicMetadataTopicNotVisible: while this broker's metadata does not
// show an existing __remote_log_metadata (a restarted broker in a cluster,
// before its metadata has caught up), the view is not ready (reads and
// writes answer ErrMetadataNotReady, retriable), never ready and empty,
// which told a restarted leader that nothing was remote; once the topic
// is visible the view loads it and is ready. A cluster that has no such
// topic (nothing was ever tiered) gets a ready, empty view.
func TestTopicMetadataTopicNotVisible(t *testing.T) {
	t.Run("exists", func(t *testing.T) {
		var hide atomic.Bool
		var seen atomic.Int32
		hide.Store(true)
		hid := make(chan struct{}, 1)
		m := startHiding(t, true, &hide, &seen, hid)
		// Three lookups that did not see the topic: the first two
		// rounds of run are over.
		for seen.Load() < 3 {
			<-hid
		}
		if _, err := m.Segments(testTP); !errors.Is(err, ErrMetadataNotReady) {
			t.Fatalf("Segments while the topic is not visible: %v, want ErrMetadataNotReady", err)
		}
		if _, err := m.Finished(testTP); !errors.Is(err, ErrMetadataNotReady) {
			t.Fatalf("Finished while the topic is not visible: %v, want ErrMetadataNotReady", err)
		}
		if _, err := m.Partitions(); !errors.Is(err, ErrMetadataNotReady) {
			t.Fatalf("Partitions while the topic is not visible: %v, want ErrMetadataNotReady", err)
		}
		hide.Store(false)
		awaitReady(t, m)
	})
	t.Run("absent", func(t *testing.T) {
		var hide atomic.Bool
		var seen atomic.Int32
		m := startHiding(t, false, &hide, &seen, make(chan struct{}, 1))
		awaitReady(t, m)
	})
}
