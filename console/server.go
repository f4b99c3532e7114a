// Package console is the broker's HTTP side (README, "HTTP"): the
// Prometheus metrics at /metrics, the health checks /healthz and /readyz,
// the JSON API under /api/ and the embedded web console at /.
//
// The server starts before the broker opens its storage, so that /healthz
// answers and /readyz says what is still loading while logs recover. What
// needs the running broker (its users' SCRAM credentials, its authorizer,
// a Kafka client) is handed over later with Attach; until then /api/
// answers 503.
//
// Every request is bounded: headers by http.Server's limits and timeouts,
// bodies at MaxBodyBytes, each Kafka round trip at KafkaTimeout. A handler
// that panics is logged and answered 500; the connection stays up.
package console

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/auth/httpauth"
	"github.com/sluice/sluice/auth/loginlimit"
	"github.com/sluice/sluice/auth/sasl"
	"github.com/sluice/sluice/schemareg"
)

// Limits of every request.
const (
	// MaxBodyBytes bounds a request body; a larger one is 413.
	MaxBodyBytes = 1 << 20
	// KafkaTimeout bounds each Kafka round trip of a request.
	KafkaTimeout = 10 * time.Second
	// maxHeaderBytes bounds a request's header block (net/http answers
	// 431 past it).
	maxHeaderBytes = 64 << 10
)

// Authorizer decides what a principal may do; server.Authorizer has the
// same method, so the broker's authorizer is one.
type Authorizer interface {
	Authorize(principal string, host netip.Addr, op acl.Operation, rt acl.ResourceType, name string) bool
}

// Throughput is this broker's cumulative counters (all topics), as
// /api/throughput shows them.
type Throughput struct {
	MessagesIn      int64
	BytesIn         int64
	BytesOut        int64
	ProduceRequests int64
	FetchRequests   int64
}

// Options configure a Server. Everything is fixed at New; what the broker
// knows only once its storage is open comes through Attach.
type Options struct {
	// Listeners are http.listeners entries, scheme://host:port.
	Listeners []string
	// TLS serves the https:// listeners; nil refuses them.
	TLS *tls.Config
	// Logger: nil means slog.Default().
	Logger *slog.Logger
	// Registry is served at /metrics; nil: /metrics answers 404.
	Registry *prometheus.Registry
	// UI is the web console's files (index.html and assets) served at /;
	// nil serves a placeholder page.
	UI fs.FS
	// BrokerID is this broker's id, shown by /api/throughput.
	BrokerID int32
	// AuthRequired is set when the broker has an authorizer or a Kafka
	// listener that authenticates its clients: every path but /healthz
	// (and /metrics with MetricsWithoutLogin) then needs a user, by HTTP
	// basic auth or (on an https listener) by a client certificate
	// TLSPrincipal maps.
	AuthRequired bool
	// MetricsWithoutLogin serves /metrics, every series, to anyone even
	// when AuthRequired (http.metrics.authentication.enable=false). By
	// default it needs the same login as the rest, and its series naming a
	// topic or group are filtered by the principal's Describe rights
	// (metrics.go).
	MetricsWithoutLogin bool
	// TLSPrincipal maps the verified client certificate of an https
	// request to its principal ("User:<name>"), as the broker's SSL
	// listeners do (ssl.principal.mapping.rules); nil: certificates are
	// not used to log in. Consulted only for a request without basic auth
	// that presented a certificate.
	TLSPrincipal func(tls.ConnectionState) (string, error)
	// PlainUsers are the SASL PLAIN users of the broker's JAAS
	// configuration (name to password); known before the storage opens.
	PlainUsers map[string]string
	// AuthFailureDelay delays the 401 of a failed login
	// (connection.failed.authentication.delay.ms).
	AuthFailureDelay time.Duration
	// FailedLogins bounds the failed basic-auth logins of each client
	// address (max.failed.authentications.per.ip; the broker shares one
	// with its Kafka listeners' SASL); nil: no bound.
	FailedLogins *loginlimit.Limiter
	// Ready reports the readiness checks; nil means always ready.
	Ready func() []Check
	// Throughput returns the broker's counters; nil answers zeros.
	Throughput func() Throughput
	// OnAuthFailure and OnAuthSuccess are called for each failed and
	// successful login (metrics; HTTP logs in per request, not per
	// connection); either may be nil.
	OnAuthFailure, OnAuthSuccess func()
	// OnConnOpened and OnConnClosed are called for each HTTP connection
	// accepted and closed (the HTTP listener's connection metrics); either
	// may be nil.
	OnConnOpened, OnConnClosed func()
}

// Backend is what the running broker hands over (Attach) once its storage
// and security are set up.
type Backend struct {
	// Authorizer decides what the principal sees; nil allows everything.
	Authorizer Authorizer
	// Credentials finds SCRAM credentials (nil: PLAIN users only).
	Credentials sasl.CredentialLookup
	// Client returns the broker's shared Kafka client (an admin identity
	// on its own inter-broker listener), created on first use; the broker
	// owns and closes it. It must produce with kgo.ManualPartitioner: the
	// console chooses each record's partition.
	Client func() (*kgo.Client, error)
	// SchemaRegistry returns the broker's schema registry, nil while it
	// has not started or when there is none (schemas.go); nil: none.
	SchemaRegistry func() *schemareg.Registry
}

// Check is one readiness check.
type Check struct {
	Name   string // "logRecovery", "zookeeper", "partitions", "groupCoordinator"
	OK     bool
	Detail string // what is (not) ready, for people; names no topic
	// Offline are partitions the check is about; /readyz appends to
	// Detail those whose topic the principal may Describe and only counts
	// the others, as Kafka's Metadata hides topics.
	Offline []Partition
}

// Partition names one partition of a topic.
type Partition struct {
	Topic     string
	Partition int32
}

// Server is the HTTP side of one broker. Safe for concurrent use.
type Server struct {
	opts    Options
	log     *slog.Logger
	backend atomic.Pointer[Backend]
	handler http.Handler
	uiFiles http.Handler // nil without Options.UI
	auth    httpauth.Authenticator

	srvs  []*http.Server
	lns   []net.Listener
	wg    sync.WaitGroup
	close sync.Once
}

// Start listens on every listener and serves until Close. A listener that
// cannot bind fails Start with an error naming it (and, when the port is
// taken, saying "address already in use").
func Start(opts Options) (*Server, error) {
	s := &Server{opts: opts, log: opts.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.auth = httpauth.Authenticator{PlainUsers: opts.PlainUsers, FailedLogins: opts.FailedLogins,
		FailureDelay: opts.AuthFailureDelay, OnFailure: opts.OnAuthFailure, OnSuccess: opts.OnAuthSuccess,
		Logger: s.log, Name: "console"}
	if opts.UI != nil {
		s.uiFiles = newUIFiles(opts.UI)
	}
	s.handler = s.routes()
	for _, l := range opts.Listeners {
		u, err := url.Parse(l)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			s.Close()
			return nil, fmt.Errorf("console: http.listeners: %q is not http://host:port or https://host:port", l)
		}
		if u.Scheme == "https" && opts.TLS == nil {
			s.Close()
			return nil, fmt.Errorf("console: http.listeners: %s needs the broker's ssl.keystore settings", l)
		}
		ln, err := net.Listen("tcp", u.Host)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("console: http.listeners: listen on %s: %w", l, err)
		}
		ln = newLimitListener(ln, maxConns, maxConnsPerIP, opts.OnConnOpened, opts.OnConnClosed)
		if u.Scheme == "https" {
			ln = tls.NewListener(ln, opts.TLS)
		}
		srv := &http.Server{
			Handler:           s.handler,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		}
		s.srvs = append(s.srvs, srv)
		s.lns = append(s.lns, ln)
	}
	for i, srv := range s.srvs {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := srv.Serve(s.lns[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("console: serve", "addr", s.lns[i].Addr().String(), "err", err)
			}
		}()
	}
	return s, nil
}

// Handler returns the server's handler (for tests that drive it directly).
func (s *Server) Handler() http.Handler { return s.handler }

// Addrs returns the address each listener is bound to, in order.
func (s *Server) Addrs() []string {
	out := make([]string, len(s.lns))
	for i, ln := range s.lns {
		out[i] = ln.Addr().String()
	}
	return out
}

// Attach hands over what needs the running broker; /api/ answers 503
// until it is called.
func (s *Server) Attach(b Backend) { s.backend.Store(&b) }

// Close stops every listener, waits up to 5 s for requests in flight and
// then closes their connections.
func (s *Server) Close() error {
	s.close.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, srv := range s.srvs {
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close()
			}
		}
		for _, ln := range s.lns { // a server shut down before it served
			ln.Close()
		}
		s.wg.Wait()
	})
	return nil
}

// routes builds the handler: every route behind the recover and body-limit
// middleware; everything but /healthz (and /metrics with
// MetricsWithoutLogin) behind authentication.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	auth := func(h func(http.ResponseWriter, *http.Request, *request)) http.Handler {
		return s.authenticated(h)
	}
	if s.opts.Registry != nil {
		mux.Handle("GET /metrics", s.metricsRoute(auth))
	}
	mux.Handle("GET /readyz", auth(s.readyz))
	s.apiRoutes(mux, auth)
	// Everything else: unknown API paths (404 JSON) and the console's files.
	mux.Handle("/", auth(s.ui))
	// Cross-site POSTs are refused (403) by their Sec-Fetch-Site or
	// Origin header, besides needing application/json (readJSON).
	return s.guard(http.NewCrossOriginProtection().Handler(mux))
}

// guard is the outermost middleware: bodies bounded, panics answered 500.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("console: handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeError(w, http.StatusInternalServerError, "internal error", "")
			}
		}()
		if r.ContentLength > MaxBodyBytes {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxBodyBytes), "")
			return
		}
		if !(openPath(r.URL.Path) && !fromBrowser(r)) && !allowedHost(r) {
			writeError(w, http.StatusForbidden, "a loopback listener answers only requests for a loopback host (DNS rebinding)", "")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// openPath reports the read-only paths of probes and scrapers (/healthz,
// /metrics): a scraper or probe may name the machine however it likes
// (Debian resolves its own name to 127.0.1.1), so the DNS-rebinding Host
// check does not apply to them, unless the request comes from a browser
// (fromBrowser), where a page whose name was rebound to 127.0.0.1 would
// read them as same-origin. When /metrics needs a user, a scraper still
// logs in; only the Host check is skipped.
func openPath(p string) bool { return p == "/healthz" || p == "/metrics" }

// fromBrowser reports a request carrying the Fetch Metadata headers every
// current browser sends (Sec-Fetch-Site, Sec-Fetch-Mode) and that
// scrapers, probes and curl do not; a page cannot remove them.
func fromBrowser(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Sec-Fetch-Mode") != ""
}

// allowedHost refuses, on a loopback listener (the default
// 127.0.0.1:9644), a request whose Host is a DNS name other than
// localhost: a web page whose name was rebound to 127.0.0.1 would
// otherwise reach the API as its own origin. Listeners on other
// addresses take any Host (operators reach them by name).
func allowedHost(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true
	}
	ap, err := netip.ParseAddrPort(local.String())
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// remoteAddr is the client's IP, for the authorizer's host checks.
func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
