// Package metrics keeps the broker's Prometheus metrics, named as the
// Prometheus JMX exporter's usual Kafka rules name Kafka's MBeans
// (kafka_server_brokertopicmetrics_messagesin_total, ...), so that existing
// Kafka dashboards and alerts work unchanged.
//
// A nil *Metrics is valid everywhere and records nothing: a broker without
// http.listeners keeps no metrics.
//
// # The hot path
//
// Produce and fetch count into handles resolved once: a *Topic per topic
// (Metrics.Topic, kept beside the partitions), per-API request handles in an
// array indexed by API key (Metrics.Request), a *Listener per listener.
// Counting is atomic adds on those handles and Observe on pre-resolved
// histograms: no label lookup and no allocation per request. The counter
// families are collected at scrape time from the handles' atomics
// (collector.go), which also keeps the all-topics aggregate free.
//
// # The all-topics aggregate
//
// Kafka has one BrokerTopicMetrics MBean per topic and one without a topic
// tag for all topics. The JMX exporter maps the latter to a series without
// the topic label; client_golang requires every series of a family to carry
// the same label names, so the aggregate is the series with topic="", which
// Prometheus treats exactly like an absent label: sum without(topic) and
// {topic=""} select it as they would on a Kafka broker.
//
// Gauges that describe state (partitions, ISR, controller, log sizes,
// consumer lag) are computed at scrape time by collectors the server
// registers (server/metrics.go).
package metrics

import (
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics is one broker's registry and the hot-path handles into it. Safe
// for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	topics    topicSet
	requests  requestSet
	listeners listenerSet
	replica   replicaCounters
	txn       txnCounters
}

// New returns a registry with the Go runtime and process collectors and the
// broker's counter families.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.topics.init()
	m.requests.init()
	m.listeners.init()
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		topicCollector{&m.topics},
		requestCollector{&m.requests},
		listenerCollector{&m.listeners},
		replicaCollector{&m.replica},
		txnCollector{&m.txn},
	)
	m.requests.register(m.reg)
	return m
}

// Registry is what /metrics serves (promhttp.HandlerFor).
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Register adds a scrape-time collector (the server's state gauges). A nil
// Metrics ignores it.
func (m *Metrics) Register(c prometheus.Collector) error {
	if m == nil {
		return nil
	}
	return m.reg.Register(c)
}

// Unregister removes a collector added with Register.
func (m *Metrics) Unregister(c prometheus.Collector) {
	if m == nil {
		return
	}
	m.reg.Unregister(c)
}

// Totals is this broker's cumulative all-topic traffic since it started:
// the values of the topic="" series of the brokertopicmetrics counters.
type Totals struct {
	MessagesIn      int64
	BytesIn         int64
	BytesOut        int64
	ProduceRequests int64
	FetchRequests   int64
}

// Totals returns the all-topic counters as plain numbers (the console's
// throughput). A nil Metrics returns zeros.
func (m *Metrics) Totals() Totals {
	if m == nil {
		return Totals{}
	}
	a := &m.topics.all
	return Totals{
		MessagesIn:      a.messagesIn.Load(),
		BytesIn:         a.bytesIn.Load(),
		BytesOut:        a.bytesOut.Load(),
		ProduceRequests: a.totalProduce.Load(),
		FetchRequests:   a.totalFetch.Load(),
	}
}

// LabelValue returns s as a label value. Prometheus requires UTF-8, and
// names that clients choose (group ids) need not be, so each byte that is
// not part of valid UTF-8 becomes the four characters \xNN (lower-case
// hex), and a backslash becomes \\ so that the mapping stays injective:
// two different names never share a label value (a shared one would be a
// duplicate series, which fails the scrape). Names without a backslash
// that are valid UTF-8, topic names among them, are returned unchanged
// and without allocation.
func LabelValue(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, '\\') < 0 {
		return s
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
