package metrics

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Listener counts one listener's connections and authentications (Kafka's
// socket-server-metrics per listener, which the JMX exporter names
// kafka_server_socket_server_metrics_<attribute>{listener}). A nil
// *Listener records nothing.
type Listener struct {
	open, created, closed atomic.Int64
	authOK, authFailed    atomic.Int64
}

// Opened counts an accepted connection.
func (l *Listener) Opened() {
	if l != nil {
		l.open.Add(1)
		l.created.Add(1)
	}
}

// Closed counts a connection closed.
func (l *Listener) Closed() {
	if l != nil {
		l.open.Add(-1)
		l.closed.Add(1)
	}
}

// Authenticated counts a connection authenticated (a SASL exchange or a
// TLS handshake that succeeded, or a PLAINTEXT connection accepted, as
// Kafka counts them).
func (l *Listener) Authenticated() {
	if l != nil {
		l.authOK.Add(1)
	}
}

// AuthenticationFailed counts a failed SASL exchange or TLS handshake.
func (l *Listener) AuthenticationFailed() {
	if l != nil {
		l.authFailed.Add(1)
	}
}

// ListenerCounts is a Listener's counters as plain numbers.
type ListenerCounts struct {
	Open, Created, Closed               int64
	Authenticated, AuthenticationFailed int64
}

// Counts returns the listener's counters (zeros for nil).
func (l *Listener) Counts() ListenerCounts {
	if l == nil {
		return ListenerCounts{}
	}
	return ListenerCounts{Open: l.open.Load(), Created: l.created.Load(), Closed: l.closed.Load(),
		Authenticated: l.authOK.Load(), AuthenticationFailed: l.authFailed.Load()}
}

type listenerSet struct {
	mu     sync.Mutex
	byName map[string]*Listener
}

func (s *listenerSet) init() { s.byName = map[string]*Listener{} }

// Listener returns the handle of the listener named name (as in
// listeners), creating it the first time. nil for a nil Metrics.
func (m *Metrics) Listener(name string) *Listener {
	if m == nil {
		return nil
	}
	s := &m.listeners
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.byName[name]
	if l == nil {
		l = &Listener{}
		s.byName[name] = l
	}
	return l
}

func socketDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("kafka_server_socket_server_metrics_"+name, help, []string{"listener"}, nil)
}

var (
	descConnCount   = socketDesc("connection_count", "Open client connections (Kafka socket-server-metrics connection-count).")
	descConnCreated = socketDesc("connection_creation_total", "Connections accepted (connection-creation-total).")
	descConnClosed  = socketDesc("connection_close_total", "Connections closed (connection-close-total).")
	descAuthOK      = socketDesc("successful_authentication_total", "Connections authenticated (successful-authentication-total).")
	descAuthFailed  = socketDesc("failed_authentication_total", "Failed SASL exchanges and TLS handshakes (failed-authentication-total).")
)

type listenerCollector struct{ s *listenerSet }

func (c listenerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descConnCount
	ch <- descConnCreated
	ch <- descConnClosed
	ch <- descAuthOK
	ch <- descAuthFailed
}

func (c listenerCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	names := make([]string, 0, len(c.s.byName))
	for n := range c.s.byName {
		names = append(names, n)
	}
	ls := make([]*Listener, len(names))
	sort.Strings(names)
	for i, n := range names {
		ls[i] = c.s.byName[n]
	}
	c.s.mu.Unlock()
	for i, l := range ls {
		n := names[i]
		ch <- prometheus.MustNewConstMetric(descConnCount, prometheus.GaugeValue, float64(l.open.Load()), n)
		ch <- prometheus.MustNewConstMetric(descConnCreated, prometheus.CounterValue, float64(l.created.Load()), n)
		ch <- prometheus.MustNewConstMetric(descConnClosed, prometheus.CounterValue, float64(l.closed.Load()), n)
		ch <- prometheus.MustNewConstMetric(descAuthOK, prometheus.CounterValue, float64(l.authOK.Load()), n)
		ch <- prometheus.MustNewConstMetric(descAuthFailed, prometheus.CounterValue, float64(l.authFailed.Load()), n)
	}
}

// replicaCounters are the ReplicaManager meters (the gauges are the
// server's scrape-time collector).
type replicaCounters struct {
	shrinks, expands atomic.Int64
}

// ISRChanged counts an ISR change applied by a leader here: a shrink
// (IsrShrinksPerSec) or an expansion (IsrExpandsPerSec).
func (m *Metrics) ISRChanged(shrink bool) {
	if m == nil {
		return
	}
	if shrink {
		m.replica.shrinks.Add(1)
	} else {
		m.replica.expands.Add(1)
	}
}

var (
	descISRShrinks = prometheus.NewDesc("kafka_server_replicamanager_isrshrinks_total", "ISR shrinks applied by leaders on this broker (Kafka IsrShrinksPerSec).", nil, nil)
	descISRExpands = prometheus.NewDesc("kafka_server_replicamanager_isrexpands_total", "ISR expansions applied by leaders on this broker (Kafka IsrExpandsPerSec).", nil, nil)
)

type replicaCollector struct{ r *replicaCounters }

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descISRShrinks
	ch <- descISRExpands
}

func (c replicaCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descISRShrinks, prometheus.CounterValue, float64(c.r.shrinks.Load()))
	ch <- prometheus.MustNewConstMetric(descISRExpands, prometheus.CounterValue, float64(c.r.expands.Load()))
}

// txnCounters are the transaction coordinator's completions. Kafka has no
// MBean for them; the names are Sluice's own (sluice_ prefix).
type txnCounters struct {
	commits, aborts atomic.Int64
}

// TxnCompleted counts a transaction this broker coordinated that ended:
// committed (true) or aborted.
func (m *Metrics) TxnCompleted(commit bool) {
	if m == nil {
		return
	}
	if commit {
		m.txn.commits.Add(1)
	} else {
		m.txn.aborts.Add(1)
	}
}

var descTxnCompleted = prometheus.NewDesc("sluice_transaction_coordinator_completed_total",
	"Transactions this broker coordinated that ended, by result (commit, abort).", []string{"result"}, nil)

type txnCollector struct{ c *txnCounters }

func (c txnCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descTxnCompleted }

func (c txnCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descTxnCompleted, prometheus.CounterValue, float64(c.c.commits.Load()), "commit")
	ch <- prometheus.MustNewConstMetric(descTxnCompleted, prometheus.CounterValue, float64(c.c.aborts.Load()), "abort")
}
