package broker

// The broker's HTTP side (package console; README, "HTTP"): started
// first in Start, before storage opens, so that /healthz answers and
// /readyz tells what is loading while logs recover; handed the running
// broker's authorizer, SCRAM credentials and a Kafka client once Start has
// them; stopped first in Close.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/sluice/sluice/auth/sasl"
	"github.com/sluice/sluice/auth/tlsconf"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/console"
	"github.com/sluice/sluice/console/ui"
	"github.com/sluice/sluice/internal/kconn"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/server"
)

// httpState is the broker's HTTP side; zero when http.listeners is empty.
type httpState struct {
	srv     *console.Server
	metrics *metrics.Metrics
	// partitions is the number of partitions the metastore lists, for the
	// log recovery check's message; -1 until known.
	partitions int

	mu     sync.Mutex
	client *kgo.Client // created on first use (consoleClient)
	closed bool
	// dial is how the client reaches this broker: its address and
	// security; set by attachHTTP.
	dialAddr string
	dialSec  kconn.Security
	dialHost string // the TLS server name to verify
	dialMech string // the SASL mechanism of dialSec
}

// startHTTP starts the HTTP server on http.listeners (nothing when empty)
// and creates the metrics registry. Its entry, the first on the stack,
// stops it when Start fails; Start pushes a second one at its end so that
// Close stops the HTTP side first.
func (b *Broker) startHTTP(opts Options) error {
	cfg := &b.cfg
	if len(cfg.HTTPListeners) == 0 {
		return nil
	}
	h := &b.http
	h.partitions = -1
	h.metrics = metrics.New()
	var tlsCfg *tls.Config
	var tlsPrincipal func(tls.ConnectionState) (string, error)
	if slices.ContainsFunc(cfg.HTTPListeners, func(l string) bool { return strings.HasPrefix(l, "https://") }) {
		get := func(key string) (string, bool) { v, ok := cfg.SecurityProperties[key]; return v, ok }
		settings, err := tlsconf.FromProperties(get)
		if err != nil {
			return fmt.Errorf("broker: http.listeners: https: %w", err)
		}
		ts, err := tlsconf.NewServer(settings, tlsconf.ServerOptions{Logger: b.log})
		if err != nil {
			return fmt.Errorf("broker: http.listeners: https: %w", err)
		}
		tlsCfg = ts.Config()
		tlsPrincipal = ts.Principal
	}
	uiFS := opts.UI
	if uiFS == nil {
		uiFS = ui.FS
	}
	lm := h.metrics.Listener("HTTP") // its connections and logins
	srv, err := console.Start(console.Options{
		Listeners:           cfg.HTTPListeners,
		TLS:                 tlsCfg,
		Logger:              b.log,
		Registry:            h.metrics.Registry(),
		UI:                  uiFS,
		BrokerID:            cfg.BrokerID,
		AuthRequired:        b.httpAuthRequired(),
		MetricsWithoutLogin: !cfg.HTTPMetricsAuthentication,
		TLSPrincipal:        tlsPrincipal,
		PlainUsers:          b.plainUsers(),
		AuthFailureDelay:    cfg.FailedAuthenticationDelay,
		FailedLogins:        b.failedLogins,
		Ready:               b.readiness,
		Throughput:          func() console.Throughput { return console.Throughput(h.metrics.Totals()) },
		OnAuthFailure:       lm.AuthenticationFailed,
		OnAuthSuccess:       lm.Authenticated,
		OnConnOpened:        lm.Opened,
		OnConnClosed:        lm.Closed,
	})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	h.srv = srv
	for _, a := range srv.Addrs() {
		b.log.Info("http listening", "addr", a)
	}
	return b.stack.Push("http", b.stopHTTP)
}

// HTTPAddr returns the host:port the first http.listeners entry is bound
// to (with the real port when the config asked for port 0); "" without
// HTTP listeners.
func (b *Broker) HTTPAddr() string {
	if b.http.srv == nil {
		return ""
	}
	return b.http.srv.Addrs()[0]
}

// Metrics returns the broker's metrics, nil without HTTP listeners.
func (b *Broker) Metrics() *metrics.Metrics { return b.http.metrics }

// plainUsers collects the SASL PLAIN users of every SASL listener that
// enables PLAIN, as that listener's PLAIN callback takes them
// (listenerSASL): a JAAS user_<name> on a listener without PLAIN logs in
// nowhere, so not over HTTP either. A listener whose SASL settings are
// wrong is skipped here: its own setup reports it.
func (b *Broker) plainUsers() map[string]string {
	users := map[string]string{}
	for _, l := range b.cfg.Listeners {
		name, _, err := config.SplitListener(l)
		if err != nil {
			continue
		}
		if p := b.cfg.ListenerProtocol(name); p != "SASL_PLAINTEXT" && p != "SASL_SSL" {
			continue
		}
		_, plain, err := b.listenerSASL(name)
		if err != nil {
			continue
		}
		for u, p := range plain {
			if _, dup := users[u]; !dup {
				users[u] = p
			}
		}
	}
	return users
}

// httpAuthRequired reports whether the HTTP API needs a user: with an
// authorizer, and whenever a Kafka listener authenticates its clients (a
// SASL listener, or SSL with ssl.client.auth=required). Otherwise anyone
// reaching the HTTP port would read and write with the broker's own
// identity what the Kafka port gives only to known clients.
func (b *Broker) httpAuthRequired() bool {
	cfg := &b.cfg
	if cfg.AuthorizerClassName != "" {
		return true
	}
	for _, l := range cfg.Listeners {
		name, _, err := config.SplitListener(l)
		if err != nil {
			return true // refused at startup anyway; fail closed
		}
		switch cfg.ListenerProtocol(name) {
		case "SASL_PLAINTEXT", "SASL_SSL":
			return true
		case "SSL":
			v, _ := cfg.ListenerProperty(name, tlsconf.KeyClientAuth)
			if ca, err := tlsconf.ParseClientAuth(v); err != nil || ca == tls.RequireAndVerifyClientCert {
				return true
			}
		}
	}
	return false
}

// attachHTTP hands the running broker to the HTTP side: its authorizer,
// SCRAM credentials, and how its Kafka client reaches this broker (the
// inter-broker listener with the inter-broker security).
func (b *Broker) attachHTTP(authz server.Authorizer, creds sasl.CredentialLookup) error {
	h := &b.http
	if h.srv == nil {
		return nil
	}
	idx, sec, mech, err := b.selfSecurity()
	if err != nil {
		// The broker serves anyway; the API says why it cannot read.
		b.log.Warn("broker: the HTTP API cannot log in to the broker; /api/ will answer 503", "err", err)
		loginErr := fmt.Errorf("the console cannot log in to the broker: %w", err)
		h.srv.Attach(console.Backend{Authorizer: authz, Credentials: creds,
			Client: func() (*kgo.Client, error) { return nil, loginErr }})
		return nil
	}
	host, _, err := b.advertised(idx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.dialAddr = b.selfDialAddr(idx)
	h.dialSec, h.dialHost, h.dialMech = sec, host, mech
	h.mu.Unlock()
	backend := console.Backend{Credentials: creds, Client: b.consoleClient, SchemaRegistry: b.schemaSubjects.reg.Load}
	if authz != nil {
		backend.Authorizer = authz
	}
	h.srv.Attach(backend)
	return nil
}

// consoleClient returns the HTTP side's Kafka client, creating it on first
// use. It seeds from this broker and learns the others from metadata.
func (b *Broker) consoleClient() (*kgo.Client, error) {
	h := &b.http
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, kgo.ErrClientClosed
	}
	if h.client != nil {
		return h.client, nil
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(h.dialAddr),
		kgo.ClientID("sluice-console"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DialTimeout(5 * time.Second),
		kgo.RetryTimeout(console.KafkaTimeout),
		kgo.MetadataMinAge(time.Second),
		kgo.ProducerLinger(0),
	}
	if h.dialSec.TLS != nil {
		opts = append(opts, kgo.Dialer(tlsDialer(h.dialSec.TLS, h.dialAddr, h.dialHost)))
	}
	if h.dialSec.SASL != nil {
		opts = append(opts, kgo.SASL(saslMechanism{h.dialMech, h.dialSec.SASL}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("broker: console client: %w", err)
	}
	h.client = cl
	return cl, nil
}

// tlsDialer dials TLS verifying each broker by the host it is dialed at,
// except seed (this broker's bound address, which may be an IP its
// certificate does not name), verified as seedName (its advertised host).
// A ServerName on the client config itself would be sent to every broker
// (franz-go's DialTLSConfig does so), so that in a cluster of per-host
// certificates the console could reach only this one.
func tlsDialer(cfg *tls.Config, seed, seedName string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := &net.Dialer{Timeout: 5 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		tc := cfg.Clone()
		if tc.ServerName == "" {
			tc.ServerName = seedName
			if addr != seed {
				host, _, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, fmt.Errorf("broker: console client: dial %q: %w", addr, err)
				}
				tc.ServerName = host
			}
		}
		return (&tls.Dialer{NetDialer: nd, Config: tc}).DialContext(ctx, network, addr)
	}
}

// stopHTTP stops the HTTP server and closes the console's client. Safe to
// call more than once.
func (b *Broker) stopHTTP() error {
	h := &b.http
	var err error
	if h.srv != nil {
		err = h.srv.Close()
	}
	h.mu.Lock()
	h.closed = true
	cl := h.client
	h.client = nil
	h.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
	return err
}

// readiness is /readyz's checks: log recovery done, registered in
// ZooKeeper (cluster mode), no partition this broker should lead offline,
// the group coordinator loaded.
func (b *Broker) readiness() []console.Check {
	srv := b.srvReady.Load()
	if srv == nil {
		detail := "log recovery: loading the partition logs"
		if n := b.recoveringPartitions.Load(); n >= 0 {
			detail = fmt.Sprintf("log recovery: loading %d partition logs", n)
		}
		checks := []console.Check{{Name: "logRecovery", OK: false, Detail: detail}}
		if !b.cfg.SingleNode() {
			checks = append(checks, console.Check{Name: "zookeeper", OK: false, Detail: "zookeeper: not registered yet"})
		}
		return append(checks,
			console.Check{Name: "partitions", OK: false, Detail: "partitions: not loaded yet"},
			console.Check{Name: "groupCoordinator", OK: false, Detail: "group coordinator: not started yet"})
	}
	checks := []console.Check{{Name: "logRecovery", OK: true, Detail: "log recovery: done"}}
	if b.node != nil {
		c := console.Check{Name: "zookeeper", OK: b.node.Registered(), Detail: "zookeeper: registered"}
		if !c.OK {
			c.Detail = "zookeeper: not registered"
		}
		checks = append(checks, c)
	}
	rd := srv.Readiness()
	pc := console.Check{Name: "partitions", OK: rd.OfflineCount == 0, Detail: fmt.Sprintf("partitions: leading %d, none offline", rd.Leading)}
	if !pc.OK {
		// The names go in Offline: /readyz shows each principal only
		// those of the topics it may describe.
		pc.Detail = fmt.Sprintf("partitions: %d of %d partitions this broker should lead are offline", rd.OfflineCount, rd.Leading)
		pc.Offline = splitPartitions(rd.Offline)
	}
	dc := console.Check{Name: "logDirs", OK: len(rd.OfflineLogDirs) == 0, Detail: "log dirs: all online"}
	if !dc.OK {
		dc.Detail = fmt.Sprintf("log dirs: %d of %d offline: %s", len(rd.OfflineLogDirs), len(b.cfg.LogDirs), strings.Join(rd.OfflineLogDirs, "; "))
	}
	checks = append(checks, dc)
	gc := console.Check{Name: "groupCoordinator", OK: true, Detail: "group coordinator: loaded"}
	switch {
	case rd.GroupsLoadErr != nil:
		gc.OK, gc.Detail = false, "group coordinator: load failed: "+rd.GroupsLoadErr.Error()
	case rd.GroupsLoading != "":
		gc.OK, gc.Detail = false, "group coordinator: "+rd.GroupsLoading
	}
	return append(checks, pc, gc)
}

// splitPartitions parses "topic-partition" names (server.Readiness's
// Offline) at their last '-' (a topic may contain '-'); a name without a
// partition number is skipped.
func splitPartitions(names []string) []console.Partition {
	var out []console.Partition
	for _, name := range names {
		i := strings.LastIndexByte(name, '-')
		if i <= 0 {
			continue
		}
		p, err := strconv.ParseInt(name[i+1:], 10, 32)
		if err != nil || p < 0 {
			continue
		}
		out = append(out, console.Partition{Topic: name[:i], Partition: int32(p)})
	}
	return out
}

// saslMechanism adapts a kconn SASL client (how brokers log in to each
// other) to franz-go's sasl.Mechanism.
type saslMechanism struct {
	name      string
	newClient func() (kconn.SASLClient, error)
}

func (m saslMechanism) Name() string { return m.name }

func (m saslMechanism) Authenticate(ctx context.Context, host string) (kgosasl.Session, []byte, error) {
	c, err := m.newClient()
	if err != nil {
		return nil, nil, err
	}
	first, done, err := c.Step(nil)
	if err != nil {
		return nil, nil, err
	}
	return &saslSession{c: c, done: done}, first, nil
}

// saslSession is one exchange: franz-go hands each server message to
// Challenge, which answers with the client's next one or done.
type saslSession struct {
	c    kconn.SASLClient
	done bool
}

func (s *saslSession) Challenge(resp []byte) (bool, []byte, error) {
	if s.done {
		return true, nil, nil
	}
	msg, done, err := s.c.Step(resp)
	if err != nil {
		return false, nil, err
	}
	if done { // a last message, if any, is sent without awaiting an answer
		s.done = true
		return true, msg, nil
	}
	return false, msg, nil
}
