package console

// The JSON API under /api/ (README, "HTTP"): the cluster, its topics and
// groups as the principal may see them, read through the broker's Kafka
// client and filtered by the broker's authorizer.

import (
	"net/http"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice/sluice/acl"
)

// apiRoutes registers the /api/ endpoints on mux, each behind auth.
func (s *Server) apiRoutes(mux *http.ServeMux, auth func(func(http.ResponseWriter, *http.Request, *request)) http.Handler) {
	mux.Handle("GET /api/whoami", auth(s.whoami))
	mux.Handle("GET /api/cluster", auth(s.cluster))
	mux.Handle("GET /api/topics", auth(s.listTopics))
	mux.Handle("POST /api/topics", auth(s.createTopic))
	mux.Handle("GET /api/topics/{topic}", auth(s.describeTopic))
	mux.Handle("GET /api/topics/{topic}/records", auth(s.readRecords))
	mux.Handle("POST /api/topics/{topic}/records", auth(s.produceRecord))
	mux.Handle("GET /api/groups", auth(s.listGroups))
	mux.Handle("GET /api/groups/{group}", auth(s.describeGroup))
	mux.Handle("GET /api/throughput", auth(s.throughput))
	mux.Handle("GET /api/schemas", auth(s.listSchemas))                     // schemas.go
	mux.Handle("GET /api/schemas/{subject}", auth(s.describeSchemaSubject)) // schemas.go
}

type whoamiJSON struct {
	Principal       string `json:"principal"`
	AuthRequired    bool   `json:"authRequired"`
	MayCreateTopics bool   `json:"mayCreateTopics"`
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request, q *request) {
	writeJSON(w, http.StatusOK, whoamiJSON{
		Principal:       q.principal,
		AuthRequired:    s.opts.AuthRequired,
		MayCreateTopics: q.allowed(acl.OpCreate, acl.ResourceCluster, acl.ClusterName),
	})
}

type brokerJSON struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack"`
}

type clusterJSON struct {
	ClusterID  string       `json:"clusterId"`
	Controller int32        `json:"controller"`
	ThisBroker int32        `json:"thisBroker"`
	Brokers    []brokerJSON `json:"brokers"`
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request, q *request) {
	_, adm, ctx, done, ok := q.kafka(w, r)
	if !ok {
		return
	}
	defer done()
	m, err := adm.BrokerMetadata(ctx)
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	out := clusterJSON{ClusterID: m.Cluster, Controller: m.Controller, ThisBroker: s.opts.BrokerID, Brokers: []brokerJSON{}}
	for _, b := range m.Brokers {
		bj := brokerJSON{ID: b.NodeID, Host: b.Host, Port: b.Port}
		if b.Rack != nil {
			bj.Rack = *b.Rack
		}
		out.Brokers = append(out.Brokers, bj)
	}
	slices.SortFunc(out.Brokers, func(a, b brokerJSON) int { return int(a.ID) - int(b.ID) })
	writeJSON(w, http.StatusOK, out)
}

type throughputJSON struct {
	Time            int64 `json:"time"`
	Broker          int32 `json:"broker"`
	MessagesIn      int64 `json:"messagesIn"`
	BytesIn         int64 `json:"bytesIn"`
	BytesOut        int64 `json:"bytesOut"`
	ProduceRequests int64 `json:"produceRequests"`
	FetchRequests   int64 `json:"fetchRequests"`
}

func (s *Server) throughput(w http.ResponseWriter, r *http.Request, q *request) {
	var t Throughput
	if s.opts.Throughput != nil {
		t = s.opts.Throughput()
	}
	writeJSON(w, http.StatusOK, throughputJSON{
		Time: time.Now().UnixMilli(), Broker: s.opts.BrokerID,
		MessagesIn: t.MessagesIn, BytesIn: t.BytesIn, BytesOut: t.BytesOut,
		ProduceRequests: t.ProduceRequests, FetchRequests: t.FetchRequests,
	})
}

// visibleTopics keeps the topics of tds the principal may Describe.
func (q *request) visibleTopics(tds kadm.TopicDetails) []string {
	var out []string
	for name := range tds {
		if q.allowed(acl.OpDescribe, acl.ResourceTopic, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
