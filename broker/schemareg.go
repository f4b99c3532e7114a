package broker

// The built-in schema registry (package schemareg; README, "Schema
// registry"): started on schema.registry.listeners once the Kafka
// listeners serve, as a Kafka client of this broker's inter-broker
// listener (the console's way in, attachHTTP), and stopped before the
// server closes. In a cluster its address is published in ZooKeeper
// (cluster/schemaregistry.go) for the other brokers to forward writes to.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/auth/httpauth"
	"github.com/sluice/sluice/auth/sasl"
	"github.com/sluice/sluice/auth/tlsconf"
	"github.com/sluice/sluice/schemareg"
	"github.com/sluice/sluice/server"
)

// startSchemaRegistry starts the registry when schema.registry.listeners
// is set and pushes its entry: it closes before the server it is a
// client of. Its clients log in with the broker's users (authz, creds)
// when the console's do (httpAuthRequired), and its metrics join the
// broker's.
func (b *Broker) startSchemaRegistry(authz server.Authorizer, creds sasl.CredentialLookup) error {
	if len(b.cfg.SchemaRegistryListeners) == 0 {
		return nil
	}
	scheme, hostport, _ := strings.Cut(b.cfg.SchemaRegistryListeners[0], "://")
	var tlsCfg *tls.Config
	if scheme == "https" {
		// The broker's ssl.* settings, as the https:// HTTP listeners.
		get := func(key string) (string, bool) { v, ok := b.cfg.SecurityProperties[key]; return v, ok }
		settings, err := tlsconf.FromProperties(get)
		if err != nil {
			return fmt.Errorf("broker: schema.registry.listeners: https: %w", err)
		}
		ts, err := tlsconf.NewServer(settings, tlsconf.ServerOptions{Logger: b.log})
		if err != nil {
			return fmt.Errorf("broker: schema.registry.listeners: https: %w", err)
		}
		tlsCfg = ts.Config()
	}
	idx, sec, mech, err := b.selfSecurity()
	if err != nil {
		return fmt.Errorf("broker: the schema registry cannot log in to the broker: %w", err)
	}
	host, _, err := b.advertised(idx)
	if err != nil {
		return err
	}
	dialAddr := b.selfDialAddr(idx)
	kopts := []kgo.Opt{kgo.SeedBrokers(dialAddr), kgo.DialTimeout(5 * time.Second), kgo.MetadataMinAge(time.Second)}
	if sec.TLS != nil {
		kopts = append(kopts, kgo.Dialer(tlsDialer(sec.TLS, dialAddr, host)))
	}
	if sec.SASL != nil {
		kopts = append(kopts, kgo.SASL(saslMechanism{mech, sec.SASL}))
	}
	ln, err := net.Listen("tcp", hostport)
	if err != nil {
		// Several brokers on one host all default to port 8081: the
		// first serves the registry, the others serve Kafka without it.
		b.log.Warn("broker: schema registry off: cannot listen on schema.registry.listeners", "addr", hostport, "err", err)
		return nil
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	opts := schemareg.Options{Kafka: kopts, Listener: ln, Logger: b.log, Security: b.schemaRegistrySecurity(authz, creds)}
	if b.node != nil {
		opts.Cluster, opts.BrokerID = true, b.cfg.BrokerID
		opts.WriterURL = func(_ context.Context, id int32) (string, error) { return b.node.SchemaRegistryURL(id) }
		// Other brokers forward writes here: the bound address, or the
		// advertised host when bound to every address.
		la := ln.Addr().(*net.TCPAddr) // tls.NewListener keeps Addr
		h := la.IP.String()
		if la.IP.IsUnspecified() {
			h = host
		}
		url := scheme + "://" + net.JoinHostPort(h, strconv.Itoa(la.Port))
		if sec.TLS != nil {
			// Forwarded writes go out with the inter-broker TLS client
			// settings (its truststore and, if any, certificate).
			opts.ForwardClient = &http.Client{Transport: &http.Transport{TLSClientConfig: sec.TLS.Clone()}}
		}
		if err := b.node.PublishSchemaRegistry(url); err != nil {
			ln.Close()
			return fmt.Errorf("broker: schema registry: %w", err)
		}
	}
	reg, err := schemareg.Start(opts)
	if err != nil {
		ln.Close()
		return err
	}
	b.schemaRegistry = reg
	b.schemaSubjects.reg.Store(reg)
	b.log.Info("broker: schema registry started", "addr", reg.Addr())
	m := b.http.metrics // nil without http.listeners: nothing kept
	if err := m.Register(reg.Collector()); err != nil {
		reg.Close()
		return fmt.Errorf("broker: schema registry metrics: %w", err)
	}
	return b.stack.Push("schema registry", func() error {
		m.Unregister(reg.Collector())
		return reg.Close()
	})
}

// schemaRegistrySecurity is who may use the registry: nil (everyone)
// unless the console needs a login too; then the broker's PLAIN and
// SCRAM users log in as they do on the console, sharing its failed-login
// limit, and authz (nil: everything allowed) decides (schemareg/auth.go).
func (b *Broker) schemaRegistrySecurity(authz server.Authorizer, creds sasl.CredentialLookup) *schemareg.Security {
	if !b.httpAuthRequired() {
		return nil
	}
	lm := b.http.metrics.Listener("SCHEMA_REGISTRY") // its logins
	sec := &schemareg.Security{Credentials: creds, Auth: &httpauth.Authenticator{
		PlainUsers: b.plainUsers(), FailedLogins: b.failedLogins, FailureDelay: b.cfg.FailedAuthenticationDelay,
		OnFailure: lm.AuthenticationFailed, OnSuccess: lm.Authenticated, Logger: b.log, Name: "schemareg"}}
	if authz != nil {
		sec.Authorizer = authz
	}
	return sec
}

// SchemaRegistry returns the running schema registry, nil when
// schema.registry.listeners is empty.
func (b *Broker) SchemaRegistry() *schemareg.Registry { return b.schemaRegistry }

// schemaSubjects adapts the registry, once started, to
// server.SchemaSubjects (broker-side schema validation): the server is
// built before the registry, which is a client of it.
type schemaSubjects struct {
	reg atomic.Pointer[schemareg.Registry]
}

// errNoSchemaRegistry: validation is on but the registry is not running.
var errNoSchemaRegistry = errors.New("not running (schema.registry.listeners is empty or could not listen)")

func (s *schemaSubjects) SubjectHasID(ctx context.Context, subject string, id int) (bool, error) {
	reg := s.reg.Load()
	if reg == nil {
		return false, errNoSchemaRegistry
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // the first call may load the view
	defer cancel()
	return reg.SubjectHasID(ctx, subject, id)
}

func (s *schemaSubjects) SchemaType(ctx context.Context, id int) (string, error) {
	reg := s.reg.Load()
	if reg == nil {
		return "", errNoSchemaRegistry
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return reg.SchemaType(ctx, id)
}

func (s *schemaSubjects) RecordName(ctx context.Context, id int, msgIndexes []int) (string, error) {
	reg := s.reg.Load()
	if reg == nil {
		return "", errNoSchemaRegistry
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return reg.RecordName(ctx, id, msgIndexes)
}
