package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request metrics: Kafka's RequestMetrics MBeans per request name
// (kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,
// version=9 and the TotalTimeMs ... histograms), as the JMX exporter names
// them: kafka_network_requestmetrics_requests_total{request,version} and
// one histogram per phase, in milliseconds, labelled request.
//
// The phases split a request's life as Kafka's RequestChannel does:
//
//	requestqueuetimems   frame read whole -> its handler starts
//	localtimems          handler work, minus the remote time
//	remotetimems         waiting on others inside the handler: the ISR for
//	                     acks=all, the long poll of a fetch
//	responsequeuetimems  handler done -> the writer takes the response
//	responsesendtimems   the writer takes it -> the flush that sent it ends
//	totaltimems          frame read whole -> sent
//
// A request without a response (acks=0 produce) ends when its handler
// returns: its response phases are 0.
//
// As Kafka's RequestChannel.updateRequestMetrics does, a Fetch is recorded
// twice: under request="Fetch" and under request="FetchConsumer" or
// "FetchFollower" (Metrics.FetchRequest), so that consumer latency is not
// mixed with the followers' long polls. Error codes are counted under
// "Fetch" only, as Kafka does.

// maxAPIKey and maxAPIVersion bound the per-API arrays; keys and versions
// beyond them (none served today) are not counted.
const (
	maxAPIKey     = 127
	maxAPIVersion = 31
)

// latencyBuckets are the histogram bounds in ms: 0.05 ms (a metadata
// request on loopback) to 30 s (request.timeout.ms), about x2.2 apart.
var latencyBuckets = prometheus.ExponentialBucketsRange(0.05, 30000, 18)

// phase names, in the order of API.hist.
var phases = [...]string{"totaltimems", "requestqueuetimems", "localtimems", "remotetimems", "responsequeuetimems", "responsesendtimems"}

const (
	phaseTotal = iota
	phaseRequestQueue
	phaseLocal
	phaseRemote
	phaseResponseQueue
	phaseResponseSend
)

// API is the request metrics of one API key, resolved once (Metrics.Request)
// and then counted into without allocation. A nil *API records nothing.
type API struct {
	versions [maxAPIVersion + 1]atomic.Int64
	hist     [len(phases)]prometheus.Observer
	// errors[code+1] counts the error code in answers (0, NONE, included),
	// Kafka's ErrorsPerSec; codes outside [-1, maxErrorCode] go to
	// UNKNOWN_SERVER_ERROR (-1).
	errors [maxErrorCode + 2]atomic.Int64
}

// maxErrorCode bounds the error codes counted apart (Kafka's are below
// 130 today).
const maxErrorCode = 159

// Error counts one error code of an answer: the request's top-level code,
// or one per partition (Produce, Fetch), as Kafka's response errorCounts.
func (a *API) Error(code int16) {
	if a == nil {
		return
	}
	if code < -1 || code > maxErrorCode {
		code = -1
	}
	a.errors[code+1].Add(1)
}

// Timing is when one request went through each phase (see the comment at
// the top of this file), as Now readings: monotonic nanoseconds, 8 bytes
// each rather than a time.Time's 24, since every response carries one.
// Zero Sent: no response was written.
type Timing struct {
	Received Stamp         // the frame was read whole
	Started  Stamp         // its handler started
	Handled  Stamp         // its handler returned
	Remote   time.Duration // of Started..Handled, spent waiting on others
	Dequeued Stamp         // the writer took the response
	Sent     Stamp         // the flush that wrote it returned
}

// Stamp is a reading of the monotonic clock (Now); 0 means unset.
type Stamp time.Duration

// base is the origin of Stamps.
var base = time.Now()

// Now reads the monotonic clock for a Timing; never 0.
func Now() Stamp { return Stamp(time.Since(base)) + 1 }

// Done counts one request of version with its timing.
func (a *API) Done(version int16, t *Timing) {
	if a == nil {
		return
	}
	if version >= 0 && int(version) < len(a.versions) {
		a.versions[version].Add(1)
	}
	end := t.Sent
	if end == 0 {
		end = t.Handled
	}
	local := time.Duration(t.Handled-t.Started) - t.Remote
	a.hist[phaseTotal].Observe(ms(time.Duration(end - t.Received)))
	a.hist[phaseRequestQueue].Observe(ms(time.Duration(t.Started - t.Received)))
	a.hist[phaseLocal].Observe(ms(local))
	a.hist[phaseRemote].Observe(ms(t.Remote))
	if t.Sent == 0 {
		a.hist[phaseResponseQueue].Observe(0)
		a.hist[phaseResponseSend].Observe(0)
		return
	}
	a.hist[phaseResponseQueue].Observe(ms(time.Duration(t.Dequeued - t.Handled)))
	a.hist[phaseResponseSend].Observe(ms(time.Duration(t.Sent - t.Dequeued)))
}

func ms(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond)
}

// requestSet is the per-key handles and their histogram families.
type requestSet struct {
	apis [maxAPIKey + 1]atomic.Pointer[API]
	// fetch[0] is FetchConsumer's handle, fetch[1] FetchFollower's.
	fetch [2]atomic.Pointer[API]
	mu    sync.Mutex // serializes creating handles
	hist  [len(phases)]*prometheus.HistogramVec
}

// fetchNames are Kafka's RequestMetrics names of the two kinds of Fetch,
// in the order of requestSet.fetch.
var fetchNames = [2]string{"FetchConsumer", "FetchFollower"}

func (s *requestSet) init() {
	for i, p := range phases {
		s.hist[i] = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kafka_network_requestmetrics_" + p,
			Help:    "Request " + p[:len(p)-2] + " in milliseconds (Kafka RequestMetrics " + p + ").",
			Buckets: latencyBuckets,
		}, []string{"request"})
	}
}

func (s *requestSet) register(reg *prometheus.Registry) {
	for _, h := range s.hist {
		reg.MustRegister(h)
	}
}

// Request returns the handle of API key, creating its series the first
// time the key is seen (so an idle broker does not export a histogram for
// every API). After the first request of a key this is one atomic load.
// nil for a nil Metrics or a key out of range.
func (m *Metrics) Request(key int16) *API {
	if m == nil || key < 0 || int(key) > maxAPIKey {
		return nil
	}
	s := &m.requests
	if a := s.apis[key].Load(); a != nil {
		return a
	}
	return s.handle(&s.apis[key], requestName(key))
}

// FetchRequest returns the handle of request="FetchConsumer" (follower
// false) or "FetchFollower": a Fetch counts there as well as under
// Request's "Fetch" handle. Created the first time, then one atomic load.
// nil for a nil Metrics.
func (m *Metrics) FetchRequest(follower bool) *API {
	if m == nil {
		return nil
	}
	i := 0
	if follower {
		i = 1
	}
	s := &m.requests
	if a := s.fetch[i].Load(); a != nil {
		return a
	}
	return s.handle(&s.fetch[i], fetchNames[i])
}

// handle returns *p, creating it as the handle of request name.
func (s *requestSet) handle(p *atomic.Pointer[API], name string) *API {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := p.Load(); a != nil {
		return a
	}
	a := &API{}
	for i := range phases {
		a.hist[i] = s.hist[i].WithLabelValues(name)
	}
	p.Store(a)
	return a
}

// kafkaNames are Kafka's names (ApiKeys, from its message specs) where
// kmsg spells an API differently: dashboards select request="InitProducerId".
var kafkaNames = map[string]string{
	"LeaderAndISR":                 "LeaderAndIsr",
	"SASLHandshake":                "SaslHandshake",
	"SASLAuthenticate":             "SaslAuthenticate",
	"InitProducerID":               "InitProducerId",
	"DescribeACLs":                 "DescribeAcls",
	"CreateACLs":                   "CreateAcls",
	"DeleteACLs":                   "DeleteAcls",
	"AlterPartitionAssignments":    "AlterPartitionReassignments",
	"DescribeUserSCRAMCredentials": "DescribeUserScramCredentials",
	"AlterUserSCRAMCredentials":    "AlterUserScramCredentials",
	"AllocateProducerIDs":          "AllocateProducerIds",
}

// requestName is Kafka's name of an API key (ApiKeys), as the request label
// carries it.
func requestName(key int16) string {
	n := kmsg.NameForKey(key)
	if n == "" {
		return "Unknown" + strconv.Itoa(int(key))
	}
	if k, ok := kafkaNames[n]; ok {
		return k
	}
	return n
}

var descRequests = prometheus.NewDesc("kafka_network_requestmetrics_requests_total",
	"Requests handled, by API and version (Kafka RequestMetrics RequestsPerSec).", []string{"request", "version"}, nil)

var descErrors = prometheus.NewDesc("kafka_network_requestmetrics_errors_total",
	"Error codes in answers, NONE included, by API (Kafka RequestMetrics ErrorsPerSec): Produce and Fetch per partition, other APIs their top-level error code only.",
	[]string{"request", "error"}, nil)

// errorName is Kafka's name of an error code (Errors), as the error label
// carries it.
func errorName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return "UNKNOWN_" + strconv.Itoa(int(code))
}

type requestCollector struct{ s *requestSet }

func (c requestCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRequests
	ch <- descErrors
}

func (c requestCollector) Collect(ch chan<- prometheus.Metric) {
	for i := range c.s.fetch {
		if a := c.s.fetch[i].Load(); a != nil {
			collectVersions(ch, a, fetchNames[i])
		}
	}
	for key := range c.s.apis {
		a := c.s.apis[key].Load()
		if a == nil {
			continue
		}
		name := requestName(int16(key))
		collectVersions(ch, a, name)
		for i := range a.errors {
			if n := a.errors[i].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n), name, errorName(int16(i-1)))
			}
		}
	}
}

// collectVersions emits a's request counts by version under request name.
func collectVersions(ch chan<- prometheus.Metric, a *API, name string) {
	for v := range a.versions {
		if n := a.versions[v].Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), name, strconv.Itoa(v))
		}
	}
}

// StampAt is t as a Stamp (a time taken by another clock reading than
// Now, such as when a pipelined request's outcome was decided); never 0.
func StampAt(t time.Time) Stamp { return max(Stamp(t.Sub(base)), 0) + 1 }
