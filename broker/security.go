package broker

// Listener security and authorization, from Kafka's keys: each listener's
// security protocol (listener.security.protocol.map), its TLS settings
// (ssl.*, with listener.name.<listener>.ssl.* overrides; package
// auth/tlsconf) and SASL settings (sasl.enabled.mechanisms and JAAS options,
// likewise overridable; package auth/sasl, SCRAM credentials in the
// metastore or, in cluster mode, in ZooKeeper's /config/users), and the
// ACL authorizer (authorizer.class.name, super.users,
// allow.everyone.if.no.acl.found; package acl, ACLs in the metastore or
// ZooKeeper's /kafka-acl).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/auth/sasl"
	"github.com/sluice/sluice/auth/tlsconf"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/kconn"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/server"
)

// saslAuthenticator adapts sasl.Authenticator to server.SASLAuthenticator.
type saslAuthenticator struct{ *sasl.Authenticator }

func (a saslAuthenticator) NewSession(mech string) (server.SASLSession, error) {
	return a.Authenticator.NewSession(mech)
}

// securedListener wraps ln for its security protocol and says how its
// connections authenticate. creds finds SCRAM credentials.
func (b *Broker) securedListener(ln net.Listener, name string, creds sasl.CredentialLookup) (net.Listener, server.ListenerSecurity, error) {
	cfg := &b.cfg
	proto := cfg.ListenerProtocol(name)
	sec := server.ListenerSecurity{Protocol: proto}
	get := func(key string) (string, bool) { return cfg.ListenerProperty(name, key) }
	if proto == "SSL" || proto == "SASL_SSL" {
		settings, err := tlsconf.FromProperties(get)
		if err != nil {
			return nil, sec, fmt.Errorf("broker: listener %s: %w", name, err)
		}
		ts, err := tlsconf.NewServer(settings, tlsconf.ServerOptions{Logger: b.log})
		if err != nil {
			return nil, sec, fmt.Errorf("broker: listener %s: %w", name, err)
		}
		ln = tls.NewListener(ln, ts.Config())
		if b.tlsServers == nil {
			b.tlsServers = map[string]*tlsconf.Server{}
		}
		b.tlsServers[name] = ts // dynamic keystore changes: reconfigureListeners
		sec.TLSPrincipal = func(st tls.ConnectionState) (string, error) { return ts.Principal(st) }
	}
	if proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" {
		mechs, plain, err := b.listenerSASL(name)
		if err != nil {
			return nil, sec, err
		}
		scfg := sasl.Config{Mechanisms: mechs, Credentials: creds, Logger: b.log, PlainUsers: plain}
		a, err := sasl.NewAuthenticator(scfg)
		if err != nil {
			return nil, sec, fmt.Errorf("broker: listener %s: %w", name, err)
		}
		sec.SASL = saslAuthenticator{a}
	}
	return ln, sec, nil
}

// listenerSASL returns the SASL mechanisms a SASL listener enables
// (listener.name.<l>.sasl.enabled.mechanisms, else sasl.enabled.mechanisms)
// and, when PLAIN is one of them, its PLAIN users (from
// listener.name.<l>.plain.sasl.jaas.config, else sasl.jaas.config); nil
// users without PLAIN. The Kafka listener and the HTTP side's basic auth
// both take their users from here, so they accept the same passwords.
func (b *Broker) listenerSASL(name string) ([]string, map[string]string, error) {
	cfg := &b.cfg
	mechs := cfg.SASLEnabledMechanisms
	if v, ok := cfg.SecurityProperties["listener.name."+strings.ToLower(name)+".sasl.enabled.mechanisms"]; ok {
		mechs = nil
		for _, m := range strings.Split(v, ",") {
			if m = strings.ToUpper(strings.TrimSpace(m)); m != "" {
				mechs = append(mechs, m)
			}
		}
	}
	for _, m := range mechs {
		if m != sasl.Plain && m != sasl.ScramSHA256 && m != sasl.ScramSHA512 {
			return nil, nil, fmt.Errorf("broker: listener %s: sasl.enabled.mechanisms: %s is not supported (use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", name, m)
		}
	}
	if !slices.Contains(mechs, sasl.Plain) {
		return mechs, nil, nil
	}
	key := "listener.name." + strings.ToLower(name) + ".plain.sasl.jaas.config"
	text, ok := cfg.SecurityProperties[key]
	if !ok {
		key = "sasl.jaas.config"
		text, ok = cfg.SecurityProperties[key]
	}
	if !ok {
		return nil, nil, fmt.Errorf("broker: listener %s: PLAIN needs its users in listener.name.%s.plain.sasl.jaas.config", name, strings.ToLower(name))
	}
	jaas, err := sasl.ParseJAAS(text)
	if err != nil {
		return nil, nil, fmt.Errorf("broker: %s: %w", key, err)
	}
	return mechs, jaas.PlainUsers(), nil
}

// connSecurity is how this broker connects to the others on listener:
// TLS with the listener's own ssl.* settings (tlsconf.Settings.ClientConfig:
// trusting its truststore, presenting its keystore for listeners that
// require client certificates), and SASL with
// sasl.mechanism.inter.broker.protocol and the username and password of
// the listener's JAAS entry for that mechanism.
func (b *Broker) connSecurity(listener string) (kconn.Security, error) {
	return b.connSecurityWith(listener, b.cfg.SASLInterBrokerMechanism)
}

// selfSecurity is how a client inside this broker (the HTTP console, the
// schema registry) logs in to it: the index of the inter-broker listener
// (the client listener when none is named), the security to connect with
// and the SASL mechanism. A single node has no inter-broker login of its
// own to reuse (sasl.mechanism.inter.broker.protocol keeps Kafka's GSSAPI
// default): it logs in with the first mechanism the listener's JAAS
// configuration gives this broker a user for. Errors are connSecurity's.
func (b *Broker) selfSecurity() (idx int, sec kconn.Security, mech string, err error) {
	idx = slices.Index(b.lnNames, b.cfg.InterBrokerListenerName)
	if idx < 0 {
		idx = b.clientListener()
	}
	mech = b.cfg.SASLInterBrokerMechanism
	sec, err = b.connSecurity(b.lnNames[idx])
	if err != nil && b.cfg.SingleNode() {
		for _, m := range []string{sasl.Plain, sasl.ScramSHA512, sasl.ScramSHA256} {
			if s, err2 := b.connSecurityWith(b.lnNames[idx], m); err2 == nil {
				sec, mech, err = s, m, nil
				break
			}
		}
	}
	return idx, sec, mech, err
}

// selfDialAddr is the address a client inside this broker dials to reach
// listener idx: its bound address, loopback when it listens on every
// address.
func (b *Broker) selfDialAddr(idx int) string {
	addr := b.lns[idx].Addr().(*net.TCPAddr)
	dial := addr.IP.String()
	if addr.IP.IsUnspecified() {
		dial = "127.0.0.1"
		if addr.IP.To4() == nil {
			dial = "::1"
		}
	}
	return net.JoinHostPort(dial, strconv.Itoa(addr.Port))
}

// connSecurityWith is connSecurity logging in with SASL mechanism mech.
func (b *Broker) connSecurityWith(listener, mech string) (kconn.Security, error) {
	cfg := &b.cfg
	var sec kconn.Security
	proto := cfg.ListenerProtocol(listener)
	get := func(key string) (string, bool) { return cfg.ListenerProperty(listener, key) }
	if proto == "SSL" || proto == "SASL_SSL" {
		settings, err := tlsconf.FromProperties(get)
		if err != nil {
			return sec, fmt.Errorf("broker: inter-broker listener %s: %w", listener, err)
		}
		if sec.TLS, err = settings.ClientConfig(); err != nil {
			return sec, fmt.Errorf("broker: inter-broker listener %s: %w", listener, err)
		}
	}
	if proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" {
		module := sasl.ScramLoginModule
		switch mech {
		case sasl.Plain:
			module = sasl.PlainLoginModule
		case sasl.ScramSHA256, sasl.ScramSHA512:
		default:
			return sec, fmt.Errorf("broker: sasl.mechanism.inter.broker.protocol: %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mech)
		}
		key := "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(mech) + ".sasl.jaas.config"
		text, ok := cfg.SecurityProperties[key]
		if !ok {
			key = "sasl.jaas.config"
			text, ok = cfg.SecurityProperties[key]
		}
		if !ok {
			return sec, fmt.Errorf("broker: inter-broker listener %s needs this broker's username and password in listener.name.%s.%s.sasl.jaas.config", listener, strings.ToLower(listener), strings.ToLower(mech))
		}
		jaas, err := sasl.ParseJAAS(text)
		if err != nil {
			return sec, fmt.Errorf("broker: %s: %w", key, err)
		}
		user, pass, ok := jaas.Login(module)
		if !ok {
			return sec, fmt.Errorf("broker: %s: no username and password for the broker itself", key)
		}
		sec.SASL = func() (kconn.SASLClient, error) { return sasl.NewClientSession(mech, user, pass) }
	}
	return sec, nil
}

// credentials returns where SCRAM credentials live: ZooKeeper in cluster
// mode, else the metastore. In cluster mode the store follows
// /config/changes on a goroutine on b.bg: its entry ends the watch after
// the server has closed (no login reads the store any more), and the
// "background goroutines" entry waits for it once the node has closed.
func (b *Broker) credentials() (sasl.CredentialStore, error) {
	if b.node == nil {
		return b.meta.ScramCredentials(), nil
	}
	s := cluster.NewScramStore(b.node)
	ctx, cancel := context.WithCancel(context.Background())
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		s.Watch(ctx)
	}()
	return s, b.stack.Push("SCRAM credential watch", func() error { cancel(); return nil })
}

// authorizer starts the ACL authorizer when authorizer.class.name is set:
// nil (everything allowed) otherwise. It follows the ACL store (the
// metastore, or in cluster mode ZooKeeper's, which it opens) until its
// entry closes, after the server's Close and before the node's.
func (b *Broker) authorizer() (server.Authorizer, acl.Store, error) {
	if b.cfg.AuthorizerClassName == "" {
		return nil, nil, nil
	}
	a := acl.New(acl.Config{SuperUsers: b.cfg.SuperUsers, AllowEveryoneIfNoACL: b.cfg.AllowEveryoneIfNoACL})
	var store acl.Store
	if b.node != nil {
		zs, err := b.node.OpenACLStore()
		if err != nil {
			return nil, nil, fmt.Errorf("broker: ACLs: %w", err)
		}
		// Closed after the authorizer stops following it.
		if err := b.stack.Push("ACL store", zs.Close); err != nil {
			return nil, nil, err
		}
		store = zs
	} else {
		store = metastore.NewACLStore(b.meta)
	}
	cancel, err := a.Follow(context.Background(), store)
	if err != nil {
		return nil, nil, fmt.Errorf("broker: load ACLs: %w", err)
	}
	if err := b.stack.Push("ACL watch", func() error { cancel(); return nil }); err != nil {
		return nil, nil, err
	}
	return a, store, nil
}

// reconfigureListeners applies cfg's keystore and truststore locations to
// the TLS listeners whose locations changed (a dynamic broker config,
// listener.name.<l>.ssl.keystore.location), as Kafka reconfigures a
// listener's SslFactory: with validateOnly it only checks that the new
// stores load and name the same subject. Without validateOnly, a listener
// whose locations did not change reloads its files if they changed on
// disk (Kafka reloads them on an alter that names them again). It is server.Options.
// ReconfigureListeners; it runs after Start built the listeners.
func (b *Broker) reconfigureListeners(cfg *config.Config, validateOnly bool) error {
	var errs []error
	for name, ts := range b.tlsServers {
		get := func(key string) (string, bool) { return cfg.ListenerProperty(name, key) }
		settings, err := tlsconf.FromProperties(get)
		if err != nil {
			errs = append(errs, fmt.Errorf("listener %s: %w", name, err))
			continue
		}
		cur := ts.Settings()
		if settings.KeystoreLocation == cur.KeystoreLocation && settings.TruststoreLocation == cur.TruststoreLocation {
			if !validateOnly {
				// Kafka's reloadUpdatedFilesWithoutConfigChange: an alter
				// naming the same files reloads them now if they changed.
				if _, err := ts.Reload(); err != nil {
					errs = append(errs, fmt.Errorf("listener %s: %w", name, err))
				}
			}
			continue
		}
		if err := ts.Reconfigure(settings, validateOnly); err != nil {
			errs = append(errs, fmt.Errorf("listener %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
