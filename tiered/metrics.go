package tiered

import (
	"errors"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice/sluice/metrics"
)

// The remote log manager's metrics, Kafka's RemoteStorageMetrics (MBeans
// kafka.server:type=BrokerTopicMetrics,name=<name>,topic=<topic>), named
// as the JMX exporter names the other BrokerTopicMetrics (package
// metrics): meters as _total counters, gauges as they are, one series
// per topic and one with topic="" for all topics:
//
//	kafka_server_brokertopicmetrics_remotecopybytes_total      RemoteCopyBytesPerSec
//	kafka_server_brokertopicmetrics_remotecopyrequests_total   RemoteCopyRequestsPerSec
//	kafka_server_brokertopicmetrics_remotecopyerrors_total     RemoteCopyErrorsPerSec
//	kafka_server_brokertopicmetrics_remotefetchbytes_total     RemoteFetchBytesPerSec
//	kafka_server_brokertopicmetrics_remotefetchrequests_total  RemoteFetchRequestsPerSec
//	kafka_server_brokertopicmetrics_remotefetcherrors_total    RemoteFetchErrorsPerSec
//	kafka_server_brokertopicmetrics_remotecopylagbytes         RemoteCopyLagBytes
//	kafka_server_brokertopicmetrics_remotecopylagsegments      RemoteCopyLagSegments
//
// A copy request is one segment copied (or failed); a fetch request one
// remote read (a fetch served from the cache reads nothing remote). The
// copy lag of a partition is what Kafka's RLMCopyTask reports: the rolled
// segments below the high watermark and the last stable offset not yet
// remote, as of the partition's last task run.

var (
	descRemoteCopyBytes     = remoteDesc("remotecopybytes_total", "Bytes of segments copied to remote storage (Kafka RemoteCopyBytesPerSec).")
	descRemoteCopyRequests  = remoteDesc("remotecopyrequests_total", "Segments whose copy to remote storage was attempted (Kafka RemoteCopyRequestsPerSec).")
	descRemoteCopyErrors    = remoteDesc("remotecopyerrors_total", "Segment copies to remote storage that failed (Kafka RemoteCopyErrorsPerSec).")
	descRemoteFetchBytes    = remoteDesc("remotefetchbytes_total", "Bytes read from remote storage for fetches (Kafka RemoteFetchBytesPerSec).")
	descRemoteFetchRequests = remoteDesc("remotefetchrequests_total", "Reads of remote storage for fetches (Kafka RemoteFetchRequestsPerSec).")
	descRemoteFetchErrors   = remoteDesc("remotefetcherrors_total", "Reads of remote storage for fetches that failed (Kafka RemoteFetchErrorsPerSec).")
	descRemoteCopyLagBytes  = remoteDesc("remotecopylagbytes", "Bytes of rolled segments below the high watermark not yet copied to remote storage (Kafka RemoteCopyLagBytes).")
	descRemoteCopyLagSegs   = remoteDesc("remotecopylagsegments", "Rolled segments below the high watermark not yet copied to remote storage (Kafka RemoteCopyLagSegments).")
)

func remoteDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("kafka_server_brokertopicmetrics_"+name, help+` The series with topic="" counts all topics.`, []string{"topic"}, nil)
}

// remoteCounters are one topic's (or all topics') meters, as totals.
type remoteCounters struct {
	copyBytes, copyRequests, copyErrors    int64
	fetchBytes, fetchRequests, fetchErrors int64
}

type copyLag struct{ bytes, segments int64 }

// remoteMetrics counts the manager's copies and remote reads. Safe for
// concurrent use; a nil *remoteMetrics is not allowed (New makes one).
type remoteMetrics struct {
	mu     sync.Mutex
	all    remoteCounters
	topics map[string]*remoteCounters
	lag    map[TopicIDPartition]copyLag
}

func newRemoteMetrics() *remoteMetrics {
	return &remoteMetrics{topics: map[string]*remoteCounters{}, lag: map[TopicIDPartition]copyLag{}}
}

// REQUIRES: r.mu held.
func (r *remoteMetrics) topicLocked(name string) *remoteCounters {
	c := r.topics[name]
	if c == nil {
		c = &remoteCounters{}
		r.topics[name] = c
	}
	return c
}

// copied counts one segment copy of bytes, failed when err is not nil.
func (r *remoteMetrics) copied(topic string, bytes int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range []*remoteCounters{&r.all, r.topicLocked(topic)} {
		c.copyRequests++
		if err != nil {
			c.copyErrors++
		} else {
			c.copyBytes += bytes
		}
	}
}

// fetched counts one remote read of bytes, failed when err is not nil (a
// read of a missing object included).
func (r *remoteMetrics) fetched(topic string, bytes int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range []*remoteCounters{&r.all, r.topicLocked(topic)} {
		c.fetchRequests++
		if err != nil {
			c.fetchErrors++
		} else {
			c.fetchBytes += bytes
		}
	}
}

// setLag records a partition's copy lag.
func (r *remoteMetrics) setLag(tp TopicIDPartition, lag copyLag) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lag[tp] = lag
}

// topicDeleted drops a deleted topic's series, as Kafka removes its
// BrokerTopicMetrics.
func (r *remoteMetrics) topicDeleted(id UUID, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.topics, name)
	for tp := range r.lag {
		if tp.TopicID == id {
			delete(r.lag, tp)
		}
	}
}

// RemoteStats is a topic's (or all topics') remote storage counters and
// copy lag, as the metrics export them.
type RemoteStats struct {
	CopyBytes, CopyRequests, CopyErrors    int64
	FetchBytes, FetchRequests, FetchErrors int64
	CopyLagBytes, CopyLagSegments          int64
}

// Stats returns the counters of topic ("" for all topics).
func (m *Manager) Stats(topic string) RemoteStats {
	r := m.metrics
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.all
	if topic != "" {
		if c = r.topics[topic]; c == nil {
			c = &remoteCounters{}
		}
	}
	st := RemoteStats{
		CopyBytes: c.copyBytes, CopyRequests: c.copyRequests, CopyErrors: c.copyErrors,
		FetchBytes: c.fetchBytes, FetchRequests: c.fetchRequests, FetchErrors: c.fetchErrors,
	}
	for tp, l := range r.lag {
		if topic == "" || tp.Topic == topic {
			st.CopyLagBytes += l.bytes
			st.CopyLagSegments += l.segments
		}
	}
	return st
}

// Collector returns the collector of the manager's metrics, for the
// broker's registry.
func (m *Manager) Collector() prometheus.Collector { return remoteCollector{m} }

type remoteCollector struct{ m *Manager }

func (c remoteCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRemoteCopyBytes, descRemoteCopyRequests, descRemoteCopyErrors,
		descRemoteFetchBytes, descRemoteFetchRequests, descRemoteFetchErrors, descRemoteCopyLagBytes, descRemoteCopyLagSegs} {
		ch <- d
	}
}

func (c remoteCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.m.metrics
	r.mu.Lock()
	names := make([]string, 0, len(r.topics))
	for n := range r.topics {
		names = append(names, n)
	}
	for tp := range r.lag {
		if r.topics[tp.Topic] == nil {
			names = append(names, tp.Topic)
			r.topicLocked(tp.Topic)
		}
	}
	r.mu.Unlock()
	sort.Strings(names)
	emit := func(topic string) {
		st := c.m.Stats(topic)
		label := metrics.LabelValue(topic)
		for _, v := range []struct {
			d *prometheus.Desc
			t prometheus.ValueType
			n int64
		}{
			{descRemoteCopyBytes, prometheus.CounterValue, st.CopyBytes},
			{descRemoteCopyRequests, prometheus.CounterValue, st.CopyRequests},
			{descRemoteCopyErrors, prometheus.CounterValue, st.CopyErrors},
			{descRemoteFetchBytes, prometheus.CounterValue, st.FetchBytes},
			{descRemoteFetchRequests, prometheus.CounterValue, st.FetchRequests},
			{descRemoteFetchErrors, prometheus.CounterValue, st.FetchErrors},
			{descRemoteCopyLagBytes, prometheus.GaugeValue, st.CopyLagBytes},
			{descRemoteCopyLagSegs, prometheus.GaugeValue, st.CopyLagSegments},
		} {
			ch <- prometheus.MustNewConstMetric(v.d, v.t, float64(v.n), label)
		}
	}
	emit("")
	for _, n := range names {
		emit(n)
	}
}

// isStorageErr reports whether err is a failure of the store (retried with
// backoff), not of the local log or the metadata.
func isStorageErr(err error) bool {
	return errors.Is(err, ErrRemoteStorage) || errors.Is(err, ErrRemoteNotFound)
}

// CopyLag returns the copy lag of one partition (Kafka's RemoteCopyLagBytes
// and RemoteCopyLagSegments of it) as of its last task run on this
// broker; ok is false when none ran here (this broker does not lead it,
// or has not run the task since it does).
func (m *Manager) CopyLag(id [16]byte, name string, partition int32) (bytes, segments int64, ok bool) {
	r := m.metrics
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.lag[TopicIDPartition{TopicID: id, Topic: name, Partition: partition}]
	return l.bytes, l.segments, ok
}
