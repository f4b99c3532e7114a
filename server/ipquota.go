package server

// ip quota entities (KIP-612): connection_creation_rate per client address
// and for the default ip entity, through DescribeClientQuotas and
// AlterClientQuotas (48_*.go, 49_*.go), kept where Kafka keeps them
// (ZooKeeper's /config/ips/<ip> with /config/changes in a cluster,
// cluster/quotas.go; the metastore on a single node) and enforced as
// connections are accepted (startConn, connlimit.go): a connection that
// takes its address's rate above the quota is held for the throttle time
// and closed unserved, as Kafka's acceptor does (quota.IPRates).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/quota"
)

// ipQuotaStore is where ip quotas live: name (an address as given, or
// quota.DefaultName) to connection_creation_rate.
type ipQuotaStore interface {
	ListIPs() (map[string]float64, error)
	// AlterIP replaces name's rate with what change returns given the
	// current one (0: none), atomically with respect to other
	// alterations.
	AlterIP(name string, change func(float64) (float64, error)) error
}

// metaIPQuotas is a single node's ipQuotaStore: one metastore record
// holding every ip entity, {"version":1,"ips":{"<ip>":{"connection_creation_rate":"10"}}},
// with read-modify-writes serialized here (this server is its only
// writer).
type metaIPQuotas struct {
	mu   sync.Mutex
	meta *metastore.Store
}

const metaIPQuotasKey = "config/ips"

type ipQuotasJSON struct {
	Version int                          `json:"version"`
	IPs     map[string]map[string]string `json:"ips"`
}

func (m *metaIPQuotas) read() (ipQuotasJSON, error) {
	doc := ipQuotasJSON{Version: 1, IPs: map[string]map[string]string{}}
	b, err := m.meta.GetCheckpoint(metaIPQuotasKey)
	if errors.Is(err, metastore.ErrNotFound) {
		return doc, nil
	}
	if err != nil {
		return doc, err
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return doc, fmt.Errorf("server: stored ip quotas: %w", err)
	}
	if doc.IPs == nil {
		doc.IPs = map[string]map[string]string{}
	}
	return doc, nil
}

func (m *metaIPQuotas) ListIPs() (map[string]float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	doc, err := m.read()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, cfg := range doc.IPs {
		var v float64
		if _, err := fmt.Sscan(cfg[quota.IPKey], &v); err == nil && v > 0 {
			out[name] = v
		}
	}
	return out, nil
}

func (m *metaIPQuotas) AlterIP(name string, change func(float64) (float64, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	doc, err := m.read()
	if err != nil {
		return err
	}
	var cur float64
	fmt.Sscan(doc.IPs[name][quota.IPKey], &cur)
	v, err := change(max(cur, 0))
	if err != nil {
		return err
	}
	if v > 0 {
		doc.IPs[name] = map[string]string{quota.IPKey: fmt.Sprintf("%d", int64(v))}
	} else {
		delete(doc.IPs, name)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return m.meta.PutCheckpoint(metaIPQuotasKey, b)
}

// startIPQuotas makes the ip connection rates, loads what the store holds
// and, in a cluster, follows the change notifications on a goroutine that
// its lifecycle entry stops.
func (s *Server) startIPQuotas(node *cluster.Node) error {
	c := &s.cfg
	s.ipRates = quota.NewIPRates(quota.Config{
		Samples: int(c.QuotaWindowNum), Window: time.Duration(c.QuotaWindowSizeSeconds) * time.Second, Now: s.now,
	})
	s.limits.ipRates.Store(s.ipRates)
	if s.metrics != nil {
		col := ipThrottleCollector{&s.limits}
		if err := s.metrics.Register(col); err != nil {
			return err
		}
		s.life.Push("ip quota metrics", func() error { s.metrics.Unregister(col); return nil })
	}
	if node == nil {
		st := &metaIPQuotas{meta: s.meta}
		s.ipQuotaStore = st
		all, err := st.ListIPs()
		if err != nil {
			return err
		}
		s.ipRates.Replace(all)
		return nil
	}
	st := node.QuotaStore()
	s.ipQuotaStore = st
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		node.WatchIPQuotaChanges(ctx, func(name string) {
			v, err := st.GetIP(name)
			if err != nil {
				s.log.Warn("server: reading a changed ip quota", "ip", name, "err", err)
				return
			}
			s.ipRates.Set(name, v)
		}, func() {
			all, err := st.ListIPs()
			if err != nil {
				s.log.Warn("server: reading ip quotas", "err", err)
				return
			}
			s.ipRates.Replace(all)
		})
	}()
	s.life.Push("ip quota watch", func() error { cancel(); <-done; return nil })
	return nil
}

// ipThrottleCollector exports, per listener, the connections refused by
// ip quotas, as the accept delays of max.connection.creation.rate are
// (metrics.go): Kafka's socket-server-metrics
// ip-connection-accept-throttle-time{listener} is their average,
// rate(time)/rate(throttled) here.
type ipThrottleCollector struct{ l *connLimits }

var (
	descIPThrottled    = prometheus.NewDesc("kafka_server_socket_server_metrics_ip_connection_accept_throttled_total", "Connections closed unserved because they took their address over its ip entity's connection_creation_rate (KIP-612).", []string{"listener"}, nil)
	descIPThrottleTime = prometheus.NewDesc("kafka_server_socket_server_metrics_ip_connection_accept_throttle_time_ms_total", "Milliseconds those connections were held before being closed, summed (Kafka's ip-connection-accept-throttle-time is their average).", []string{"listener"}, nil)
)

func (c ipThrottleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descIPThrottled
	ch <- descIPThrottleTime
}

func (c ipThrottleCollector) Collect(ch chan<- prometheus.Metric) {
	for _, a := range c.l.throttleStats() {
		ch <- prometheus.MustNewConstMetric(descIPThrottled, prometheus.CounterValue, float64(a.ipThrottled), a.listener)
		ch <- prometheus.MustNewConstMetric(descIPThrottleTime, prometheus.CounterValue, float64(a.ipTime.Milliseconds()), a.listener)
	}
}
