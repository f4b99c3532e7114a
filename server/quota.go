package server

// Client quotas (KIP-13, KIP-55, KIP-124, KIP-599), enforced as Kafka's
// ClientQuotaManager does, by package quota. This file connects it to the
// server: where quotas are stored (the metastore on a single node,
// ZooKeeper's /config/users and /config/clients in a cluster, followed
// through /config/changes), the throttle a request earns, and the
// channel mute that enforces it.
//
// KIP-219: a request over its quota is answered at once, its response
// carrying throttle_time_ms, and the broker then reads nothing more from
// the connection for that long (conn.mute): a client that honours the
// field (franz-go, librdkafka, the Java client) waits of its own accord, one
// that does not is held back by TCP. A throttled fetch is answered with no
// data (Kafka's getThrottledResponse) and its bytes are not counted. An
// acks=0 produce has no response: only the mute applies.
//
// Which throttle a request gets: Produce its producer_byte_rate (bytes of
// the request), Fetch its consumer_byte_rate (bytes of the response),
// CreateTopics, CreatePartitions and DeleteTopics their
// controller_mutation_rate, and every request from a client (not the
// inter-broker APIs, a follower's fetch, SASL, or ApiVersions before
// authentication: requestQuotaExempt) request_percentage of its handler
// time; the response carries the largest, and the mute is as long.
//
// Cost with no quota set: one atomic load per request (quota.Manager
// Record returns at once); nothing is allocated on the produce and fetch
// paths either way once a client's sensor exists.

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/quota"
	"github.com/sluice/sluice/server/fetchresp"
)

// quotaStore is where client quotas live (Describe/AlterClientQuotas).
type quotaStore interface {
	// List returns every entity with at least one quota.
	List() (map[quota.Entity]quota.Values, error)
	// Alter replaces e's quotas with what change returns given the
	// current ones, atomically with respect to other alterations.
	Alter(e quota.Entity, change func(quota.Values) (quota.Values, error)) error
}

// metaQuotas is a single node's quotaStore: the metastore, with
// read-modify-writes serialized here (this server is its only writer).
type metaQuotas struct {
	mu   sync.Mutex
	meta *metastore.Store
}

func (m *metaQuotas) List() (map[quota.Entity]quota.Values, error) { return m.meta.ClientQuotas() }

func (m *metaQuotas) Alter(e quota.Entity, change func(quota.Values) (quota.Values, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.meta.ClientQuota(e)
	if err != nil {
		return err
	}
	v, err := change(cur)
	if err != nil {
		return err
	}
	return m.meta.SetClientQuota(e, v)
}

// startQuotas makes the server's quota manager and loads what the store
// holds; in a cluster it follows the change notifications on a goroutine
// that its lifecycle entry stops.
func (s *Server) startQuotas(node *cluster.Node) error {
	c := &s.cfg
	s.quotas = quota.New(quota.Config{
		Samples: int(c.QuotaWindowNum), Window: time.Duration(c.QuotaWindowSizeSeconds) * time.Second,
		ControllerSamples: int(c.ControllerQuotaWindowNum), ControllerWindow: time.Duration(c.ControllerQuotaWindowSizeSeconds) * time.Second,
		Now: s.now,
	})
	if node == nil {
		st := &metaQuotas{meta: s.meta}
		s.quotaStore = st
		all, err := st.List()
		if err != nil {
			return err
		}
		s.quotas.Replace(all)
	} else {
		st := node.QuotaStore()
		s.quotaStore = st
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			node.WatchQuotaChanges(ctx, func(e quota.Entity) {
				v, err := st.Get(e)
				if err != nil {
					s.log.Warn("server: reading a changed client quota", "entity", e.String(), "err", err)
					return
				}
				s.quotas.Set(e, v)
			}, func() {
				all, err := st.List()
				if err != nil {
					s.log.Warn("server: reading client quotas", "err", err)
					return
				}
				s.quotas.Replace(all)
			})
		}()
		s.life.Push("client quota watch", func() error { cancel(); <-done; return nil })
	}
	if s.metrics != nil {
		col := quotaCollector{s.quotas}
		if err := s.metrics.Register(col); err != nil {
			return err
		}
		s.life.Push("client quota metrics", func() error { s.metrics.Unregister(col); return nil })
	}
	return nil
}

// quotaIDs returns the user (the principal's name, without its "User:"
// type) and client id a request is accounted under.
func (rc *reqCtx) quotaIDs() (user, clientID string) {
	p := rc.principal()
	if i := strings.IndexByte(p, ':'); i >= 0 {
		p = p[i+1:]
	}
	return p, rc.clientID
}

// throttle notes that the request earned ms of throttle under t; the
// largest one wins (handleRequest applies it).
func (rc *reqCtx) throttle(t quota.Type, ms int32) {
	if rc != nil && ms > rc.throttleMs {
		rc.throttleMs, rc.throttleType = ms, t
	}
}

// requestQuotaExempt reports whether a request of key is outside
// request_percentage: what Kafka answers with sendResponseExemptThrottle
// (the inter-broker APIs; a follower's fetch is marked at the call), and
// the authentication exchange, which Kafka's authenticator handles before
// KafkaApis (ApiVersions and SASL before authentication; SASL always,
// since a re-authentication is one too). An ApiVersions after
// authentication is throttled, as Kafka's handleApiVersionsRequest does.
func requestQuotaExempt(key int16, authenticated bool) bool {
	switch key {
	case apiKeySASLHandshake, apiKeySASLAuthenticate,
		apiKeyLeaderAndIsr, apiKeyStopReplica, apiKeyUpdateMetadata, apiKeyControlledShutdown, apiKeyWriteTxnMarkers:
		return true
	case apiKeyApiVersions:
		return !authenticated
	}
	return false
}

// applyThrottle runs after a handler: it records the request's handler
// time under request_percentage, puts the largest throttle the request
// earned into its response and mutes the connection for it. Only when a
// quota is set anywhere.
func (s *Server) applyThrottle(c *conn, rc *reqCtx, key int16, out *response, busy time.Duration) {
	if !rc.quotaExempt && !requestQuotaExempt(key, c.auth.authenticated.Load()) {
		user, cid := rc.quotaIDs()
		pct := float64(max(busy, 0)) * 100 / float64(time.Second)
		rc.throttle(quota.Request, s.quotas.Record(quota.Request, user, cid, pct))
	}
	ms := rc.throttleMs
	if ms <= 0 {
		return
	}
	user, cid := rc.quotaIDs()
	s.quotas.Throttled(rc.throttleType, user, cid, ms)
	if out != nil && out.kresp != nil {
		if tr, ok := out.kresp.(interface{ SetThrottle(int32) }); ok {
			tr.SetThrottle(ms)
		}
	}
	if rc.fetchOut != nil {
		rc.fetchOut.ThrottleMillis = ms
	}
	c.mute(time.Duration(ms) * time.Millisecond)
}

// mute makes the connection read and handle nothing more for d from now
// (KIP-219), or until a longer mute already set ends.
func (c *conn) mute(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if until <= cur || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitMuted blocks while the connection is muted; false when the
// connection closed or, with reader set, when it should stop reading.
func (c *conn) waitMuted(reader bool) bool {
	stopped := c.stopped
	if !reader {
		stopped = nil // the handler still answers what was read
	}
	for {
		until := c.mutedUntil.Load()
		d := time.Until(time.Unix(0, until))
		if until == 0 || d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.done:
			t.Stop()
			return false
		case <-stopped:
			t.Stop()
			return false
		}
	}
}

// quotaCollector exports the quota sensors at scrape time, named as the
// Prometheus JMX exporter names Kafka's (kafka.server:type=Produce,
// user=...,client-id=... byte-rate becomes kafka_server_produce_byte_rate).
// One series per live sensor: sensors idle for an hour are dropped.
type quotaCollector struct{ m *quota.Manager }

var (
	quotaLabels   = []string{"user", "client_id"}
	descQuotaRate = [quota.NumTypes]*prometheus.Desc{
		gaugeDesc("kafka_server_produce_byte_rate", "Produce bytes per second of a user/client-id, over the quota window.", quotaLabels...),
		gaugeDesc("kafka_server_fetch_byte_rate", "Fetch response bytes per second of a user/client-id, over the quota window.", quotaLabels...),
		gaugeDesc("kafka_server_request_request_time", "Request handler time of a user/client-id, in percent of one thread, over the quota window.", quotaLabels...),
		gaugeDesc("kafka_server_controllermutation_mutation_rate", "Partition mutations per second of a user/client-id.", quotaLabels...),
	}
	descQuotaThrottle = [quota.NumTypes]*prometheus.Desc{
		gaugeDesc("kafka_server_produce_throttle_time", "Average produce throttle time (ms) of a user/client-id over the quota window.", quotaLabels...),
		gaugeDesc("kafka_server_fetch_throttle_time", "Average fetch throttle time (ms) of a user/client-id over the quota window.", quotaLabels...),
		gaugeDesc("kafka_server_request_throttle_time", "Average request_percentage throttle time (ms) of a user/client-id over the quota window.", quotaLabels...),
		gaugeDesc("kafka_server_controllermutation_throttle_time", "Average controller mutation throttle time (ms) of a user/client-id over the quota window.", quotaLabels...),
	}
	descQuotaTokens = gaugeDesc("kafka_server_controllermutation_tokens", "Tokens left in the controller mutation bucket of a user/client-id with a quota.", quotaLabels...)
)

func (q quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	for t := range descQuotaRate {
		ch <- descQuotaRate[t]
		ch <- descQuotaThrottle[t]
	}
	ch <- descQuotaTokens
}

func (q quotaCollector) Collect(ch chan<- prometheus.Metric) {
	q.m.Each(func(u quota.Usage) {
		ch <- prometheus.MustNewConstMetric(descQuotaRate[u.Type], prometheus.GaugeValue, u.Rate, u.User, u.ClientID)
		ch <- prometheus.MustNewConstMetric(descQuotaThrottle[u.Type], prometheus.GaugeValue, u.ThrottleAvg, u.User, u.ClientID)
		if u.Type == quota.ControllerMutation && u.Quota > 0 {
			ch <- prometheus.MustNewConstMetric(descQuotaTokens, prometheus.GaugeValue, u.Tokens, u.User, u.ClientID)
		}
	})
}

// produceSize is what a produce request counts against
// producer_byte_rate: its size, as Kafka's request.sizeInBytes (the
// frame after the size prefix), or without the frame (direct handler
// tests) the bytes of its record sets.
func produceSize(rc *reqCtx, r *kmsg.ProduceRequest) int {
	if rc.req != nil && len(rc.req.crcFrame) > 0 {
		return len(rc.req.crcFrame)
	}
	n := 0
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			n += len(r.Topics[i].Partitions[j].Records)
		}
	}
	return n
}

// fetchOverhead approximates a fetch response's bytes beyond its record
// sets (header, per-partition fields) for consumer_byte_rate.
const fetchOverhead = 64

// throttleFetch records a consumer fetch's response bytes under
// consumer_byte_rate; over the quota, the response goes out with no data
// and the bytes are taken back (Kafka's getThrottledResponse and
// unrecordQuotaSensor), its throttle noted for handleRequest.
func throttleFetch(s *Server, rc *reqCtx, out *fetchresp.Response) {
	size := int64(fetchOverhead)
	for i := range out.Topics {
		for j := range out.Topics[i].Partitions {
			size += out.Topics[i].Partitions[j].Records.Len() + 32
		}
	}
	user, cid := rc.quotaIDs()
	ms := s.quotas.Record(quota.Fetch, user, cid, float64(size))
	if ms <= 0 {
		return
	}
	rc.throttle(quota.Fetch, ms)
	s.quotas.Unrecord(quota.Fetch, user, cid, float64(size))
	releaseFetch(out)
	out.Topics = nil
	out.ThrottleMillis = ms
}

// mutationQuota returns the controller_mutation_rate of a CreateTopics,
// CreatePartitions or DeleteTopics request (nil: no quota set, which
// accepts everything).
func (s *Server) mutationQuota(rc *reqCtx, strict bool) *quota.Mutation {
	if rc == nil || !s.quotas.Enabled() {
		return nil
	}
	user, cid := rc.quotaIDs()
	return s.quotas.NewMutation(user, cid, strict)
}
