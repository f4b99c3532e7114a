package schemareg

// Metrics of the REST API, in the broker's registry (README, "Schema
// registry", Metrics), collected at scrape time from atomic counters as
// package metrics does for the Kafka requests:
//
//	kafka_schema_registry_requests_total{endpoint,method,status}
//	    requests answered, by route ("/subjects/{s}/versions"; "other"
//	    for a path or method no route serves), method and status class
//	    ("2xx", "4xx", ...); failed logins and refusals included
//	kafka_schema_registry_request_errors_total{endpoint,method,error_code}
//	    error answers by Confluent's error_code (40401, 42201, 401, ...)
//
// They are the request-count and request-error-count that Confluent's
// registry keeps per endpoint (its jersey-metrics MBean). Each label set
// is bounded: routes are fixed, methods outside the HTTP verbs count as
// "OTHER", error codes are Confluent's few. A forwarded write is counted
// by both registries, the forwarding one with the status only.

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descSRRequests = prometheus.NewDesc("kafka_schema_registry_requests_total",
		"Schema registry REST requests answered, by route, method and status class.",
		[]string{"endpoint", "method", "status"}, nil)
	descSRErrors = prometheus.NewDesc("kafka_schema_registry_request_errors_total",
		"Schema registry REST error answers, by route, method and Confluent error code.",
		[]string{"endpoint", "method", "error_code"}, nil)
)

// requestMetrics counts the REST API's answers. Safe for concurrent use.
type requestMetrics struct {
	mu     sync.Mutex
	routes map[routeKey]*routeCounts
	errors map[errorKey]*atomic.Int64
}

type routeKey struct{ endpoint, method string }

type errorKey struct {
	routeKey
	code int
}

// routeCounts: classes[i] counts the answers with status (i+1)xx.
type routeCounts struct {
	classes [5]atomic.Int64
}

// count records one answer.
func (m *requestMetrics) count(endpoint, method string, status, code int) {
	k := routeKey{endpoint, method}
	m.mu.Lock()
	if m.routes == nil {
		m.routes, m.errors = map[routeKey]*routeCounts{}, map[errorKey]*atomic.Int64{}
	}
	rc := m.routes[k]
	if rc == nil {
		rc = &routeCounts{}
		m.routes[k] = rc
	}
	var ec *atomic.Int64
	if code != 0 {
		ek := errorKey{k, code}
		if ec = m.errors[ek]; ec == nil {
			ec = &atomic.Int64{}
			m.errors[ek] = ec
		}
	}
	m.mu.Unlock()
	if c := status/100 - 1; c >= 0 && c < len(rc.classes) {
		rc.classes[c].Add(1)
	}
	if ec != nil {
		ec.Add(1)
	}
}

// Collector returns the REST API's metrics for the broker's registry
// (metrics.Metrics.Register).
func (r *Registry) Collector() prometheus.Collector { return metricsCollector{&r.metrics} }

type metricsCollector struct{ m *requestMetrics }

func (c metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSRRequests
	ch <- descSRErrors
}

func (c metricsCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for k, rc := range c.m.routes {
		for i := range rc.classes {
			if n := rc.classes[i].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(descSRRequests, prometheus.CounterValue, float64(n),
					k.endpoint, k.method, strconv.Itoa(i+1)+"xx")
			}
		}
	}
	for k, n := range c.m.errors {
		ch <- prometheus.MustNewConstMetric(descSRErrors, prometheus.CounterValue, float64(n.Load()),
			k.endpoint, k.method, strconv.Itoa(k.code))
	}
}

// statusRecorder remembers the status and the Confluent error code
// (writeError) of an answer.
type statusRecorder struct {
	http.ResponseWriter
	status int
	code   int
}

func (s *statusRecorder) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// recordErrorCode notes code on w if w records (writeError).
func recordErrorCode(w http.ResponseWriter, code int) {
	if s, ok := w.(*statusRecorder); ok {
		s.code = code
	}
}

// instrument serves mux behind authentication (auth.go) and counts every
// answer by the route mux chose.
func (r *Registry) instrument(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		_, pattern := mux.Handler(q)
		endpoint := "other"
		if _, path, ok := strings.Cut(pattern, " "); ok {
			endpoint = path
		}
		rec := &statusRecorder{ResponseWriter: w}
		method := methodLabel(q.Method)
		if q = r.authenticate(rec, q); q != nil {
			mux.ServeHTTP(rec, q)
		} else if rec.status == 0 {
			return // the client went away while logging in: no answer
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK // nothing written: net/http answers 200
		}
		r.metrics.count(endpoint, method, status, rec.code)
	})
}

// methodLabel bounds the method label to the HTTP verbs.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodHead, http.MethodOptions, http.MethodPatch:
		return m
	}
	return "OTHER"
}
