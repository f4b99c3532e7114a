package metrics

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Topic holds one topic's BrokerTopicMetrics counters. The server resolves
// it when it opens the topic's partitions and keeps it beside them; the
// produce and fetch paths count through it. A nil *Topic (metrics off)
// records nothing. Every count goes to the topic and to the all-topics
// aggregate.
type Topic struct {
	all *Topic // nil for the aggregate itself
	topicCounters
}

// topicCounters are Kafka's BrokerTopicMetrics meters, as totals.
type topicCounters struct {
	messagesIn, bytesIn, bytesOut atomic.Int64
	failedProduce, failedFetch    atomic.Int64
	totalProduce, totalFetch      atomic.Int64
	replicationIn, replicationOut atomic.Int64
}

// Produced counts one partition of a produce request appended: msgs
// records in bytes of record batches (Kafka's MessagesInPerSec and
// BytesInPerSec count the appended batches' records and size) and one
// TotalProduceRequests (Kafka counts it per partition).
func (t *Topic) Produced(msgs, bytes int64) {
	if t == nil {
		return
	}
	for c := t; c != nil; c = c.all {
		c.messagesIn.Add(msgs)
		c.bytesIn.Add(bytes)
		c.totalProduce.Add(1)
	}
}

// ProduceFailed counts one partition of a produce request that failed
// (TotalProduceRequests and FailedProduceRequests).
func (t *Topic) ProduceFailed() {
	if t == nil {
		return
	}
	for c := t; c != nil; c = c.all {
		c.totalProduce.Add(1)
		c.failedProduce.Add(1)
	}
}

// Fetched counts one partition of a consumer fetch answered with bytes of
// record batches (BytesOutPerSec, TotalFetchRequests). A follower's fetch
// goes to ReplicationFetched instead, as Kafka keeps replication traffic
// out of BytesOut.
func (t *Topic) Fetched(bytes int64) {
	if t == nil {
		return
	}
	for c := t; c != nil; c = c.all {
		c.bytesOut.Add(bytes)
		c.totalFetch.Add(1)
	}
}

// FetchedNothing counts n partitions of a consumer's fetch that had
// nothing to return (TotalFetchRequests).
func (t *Topic) FetchedNothing(n int64) {
	if t == nil {
		return
	}
	for c := t; c != nil; c = c.all {
		c.totalFetch.Add(n)
	}
}

// ReplicationFetched counts one partition of a follower's fetch:
// ReplicationBytesOutPerSec and TotalFetchRequests (Kafka counts follower
// reads in TotalFetchRequests too).
func (t *Topic) ReplicationFetched(bytes int64) {
	if t == nil {
		return
	}
	for c := t; c != nil; c = c.all {
		c.replicationOut.Add(bytes)
		c.totalFetch.Add(1)
	}
}

// FetchFailed counts one partition of a fetch that failed
// (TotalFetchRequests and FailedFetchRequests).
func (t *Topic) FetchFailed() {
	if t == nil {
		return
	}
	for c := t; c != nil; c = c.all {
		c.totalFetch.Add(1)
		c.failedFetch.Add(1)
	}
}

// ReplicatedIn counts bytes of record batches a follower appended from its
// leader (ReplicationBytesInPerSec; not BytesIn, as in Kafka).
func (t *Topic) ReplicatedIn(bytes int64) {
	if t == nil {
		return
	}
	for c := t; c != nil; c = c.all {
		c.replicationIn.Add(bytes)
	}
}

// topicSet is every topic's handle and the aggregate.
type topicSet struct {
	all    Topic
	mu     sync.Mutex
	byName map[string]*Topic
}

func (s *topicSet) init() { s.byName = map[string]*Topic{} }

// Topic returns the handle of topic name, creating it the first time; the
// same name gets the same handle until RemoveTopic. Not for the hot path:
// call it when a topic is opened and keep the handle. A nil Metrics
// returns nil, which records nothing.
func (m *Metrics) Topic(name string) *Topic {
	if m == nil {
		return nil
	}
	s := &m.topics
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.byName[name]
	if t == nil {
		t = &Topic{all: &s.all}
		s.byName[name] = t
	}
	return t
}

// AllTopics returns the aggregate handle: traffic of no known topic (a
// produce to a topic that does not exist) counts there only.
func (m *Metrics) AllTopics() *Topic {
	if m == nil {
		return nil
	}
	return &m.topics.all
}

// RemoveTopic drops the series of a deleted topic (Kafka removes its
// BrokerTopicMetrics with it). Handles still held keep counting into the
// aggregate.
func (m *Metrics) RemoveTopic(name string) {
	if m == nil {
		return
	}
	m.topics.mu.Lock()
	delete(m.topics.byName, name)
	m.topics.mu.Unlock()
}

var (
	descMessagesIn     = brokerTopicDesc("messagesin", "Records appended to leader replicas (Kafka MessagesInPerSec).")
	descBytesIn        = brokerTopicDesc("bytesin", "Bytes of record batches appended from producers (Kafka BytesInPerSec).")
	descBytesOut       = brokerTopicDesc("bytesout", "Bytes of record batches sent to consumers, replication excluded (Kafka BytesOutPerSec).")
	descFailedProduce  = brokerTopicDesc("failedproducerequests", "Produce request partitions that failed (Kafka FailedProduceRequestsPerSec).")
	descFailedFetch    = brokerTopicDesc("failedfetchrequests", "Fetch request partitions that failed (Kafka FailedFetchRequestsPerSec).")
	descTotalProduce   = brokerTopicDesc("totalproducerequests", "Produce request partitions handled (Kafka TotalProduceRequestsPerSec).")
	descTotalFetch     = brokerTopicDesc("totalfetchrequests", "Fetch request partitions handled, followers' included (Kafka TotalFetchRequestsPerSec).")
	descReplicationIn  = brokerTopicDesc("replicationbytesin", "Bytes of record batches a follower appended from leaders (Kafka ReplicationBytesInPerSec).")
	descReplicationOut = brokerTopicDesc("replicationbytesout", "Bytes of record batches sent to followers (Kafka ReplicationBytesOutPerSec).")
)

func brokerTopicDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("kafka_server_brokertopicmetrics_"+name+"_total",
		help+` The series with topic="" counts all topics.`, []string{"topic"}, nil)
}

// topicCollector emits the brokertopicmetrics families from the handles.
type topicCollector struct{ s *topicSet }

func (c topicCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMessagesIn, descBytesIn, descBytesOut, descFailedProduce, descFailedFetch,
		descTotalProduce, descTotalFetch, descReplicationIn, descReplicationOut} {
		ch <- d
	}
}

func (c topicCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	names := make([]string, 0, len(c.s.byName))
	handles := make(map[string]*Topic, len(c.s.byName))
	for n, t := range c.s.byName {
		names = append(names, n)
		handles[n] = t
	}
	c.s.mu.Unlock()
	sort.Strings(names)
	emit := func(name string, t *Topic) {
		for _, v := range []struct {
			d *prometheus.Desc
			n *atomic.Int64
		}{
			{descMessagesIn, &t.messagesIn}, {descBytesIn, &t.bytesIn}, {descBytesOut, &t.bytesOut},
			{descFailedProduce, &t.failedProduce}, {descFailedFetch, &t.failedFetch},
			{descTotalProduce, &t.totalProduce}, {descTotalFetch, &t.totalFetch},
			{descReplicationIn, &t.replicationIn}, {descReplicationOut, &t.replicationOut},
		} {
			ch <- prometheus.MustNewConstMetric(v.d, prometheus.CounterValue, float64(v.n.Load()), LabelValue(name))
		}
	}
	emit("", &c.s.all)
	for _, n := range names {
		emit(n, handles[n])
	}
}
