package console

// /metrics: Prometheus text of the broker's registry. Its series name
// topics (label topic) and consumer groups (label consumergroup); a
// logged-in principal sees those series only for the topics and groups it
// may Describe, as Kafka's Metadata and ListGroups would show them. The
// all-topics series (topic="") and the series without such labels are
// everyone's.

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluice/sluice/acl"
)

// maxScrapes bounds the /metrics requests served at once (each gathers
// every series).
const maxScrapes = 4

// metricsRoute returns /metrics's handler: open with MetricsWithoutLogin
// or without AuthRequired; else behind auth, filtered by the principal's
// Describe rights.
func (s *Server) metricsRoute(auth func(func(http.ResponseWriter, *http.Request, *request)) http.Handler) http.Handler {
	opts := promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
		Timeout:       KafkaTimeout,
	}
	open := opts
	open.MaxRequestsInFlight = maxScrapes
	all := promhttp.HandlerFor(s.opts.Registry, open)
	if s.opts.MetricsWithoutLogin || !s.opts.AuthRequired {
		return all
	}
	inFlight := make(chan struct{}, maxScrapes)
	return auth(func(w http.ResponseWriter, r *http.Request, q *request) {
		if q.backend != nil && q.backend.Authorizer == nil {
			all.ServeHTTP(w, r) // no authorizer: every user sees everything
			return
		}
		select {
		case inFlight <- struct{}{}:
			defer func() { <-inFlight }()
		default:
			http.Error(w, "too many /metrics requests at once, try again later", http.StatusServiceUnavailable)
			return
		}
		// A handler per request: Gather has no request to read the
		// principal from.
		promhttp.HandlerFor(describable{s.opts.Registry, q}, opts).ServeHTTP(w, r)
	})
}

// describable gathers the registry's series and keeps those whose topic and
// consumergroup labels q's principal may Describe. Before Attach (no
// authorizer known yet) it keeps none of them.
type describable struct {
	g prometheus.Gatherer
	q *request
}

func (d describable) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := d.g.Gather()
	// Each name is authorized once per scrape, however many series carry it.
	seen := map[[2]string]bool{}
	may := func(label, name string) bool {
		var rt acl.ResourceType
		switch label {
		case "topic":
			if name == "" { // the all-topics series
				return true
			}
			rt = acl.ResourceTopic
		case "consumergroup":
			rt = acl.ResourceGroup
		default:
			return true
		}
		k := [2]string{label, name}
		ok, hit := seen[k]
		if !hit {
			ok = d.q.backend != nil && d.q.backend.Authorizer.Authorize(d.q.principal, d.q.host, acl.OpDescribe, rt, name)
			seen[k] = ok
		}
		return ok
	}
	out := mfs[:0]
	for _, mf := range mfs {
		kept := mf.Metric[:0]
	series:
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if !may(l.GetName(), l.GetValue()) {
					continue series
				}
			}
			kept = append(kept, m)
		}
		if len(kept) > 0 { // an empty family cannot be encoded
			mf.Metric = kept
			out = append(out, mf)
		}
	}
	return out, err
}
