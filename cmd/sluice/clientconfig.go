package main

// --command-config FILE: the client properties every client subcommand
// (topic, group, acl, user, perf) reads, in librdkafka's names so that the
// file `kcat -F` reads works unchanged. This file is the one place those
// properties become kgo options.

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice/sluice/auth/tlsconf"
	"github.com/sluice/sluice/config"
)

// The client properties clientConfig reads besides the ssl.* keys of
// package tlsconf (librdkafka's CONFIGURATION.md).
const (
	keyBootstrapServers   = "bootstrap.servers"
	keyMetadataBrokerList = "metadata.broker.list" // librdkafka's alias of bootstrap.servers
	keySecurityProtocol   = "security.protocol"
	keySASLMechanism      = "sasl.mechanism"
	keySASLMechanisms     = "sasl.mechanisms" // librdkafka's older name, what kcat examples use
	keySASLUsername       = "sasl.username"
	keySASLPassword       = "sasl.password"
	keyClientID           = "client.id"
)

// knownClientKeys are the keys clientConfig uses; any other key in a
// --command-config file is ignored with a warning (kcat files carry
// producer and consumer settings too).
var knownClientKeys = map[string]bool{
	keyBootstrapServers: true, keyMetadataBrokerList: true, keySecurityProtocol: true,
	keySASLMechanism: true, keySASLMechanisms: true, keySASLUsername: true, keySASLPassword: true,
	keyClientID:           true,
	tlsconf.KeyCALocation: true, tlsconf.KeyCAPEM: true,
	tlsconf.KeyCertificateLocation: true, tlsconf.KeyCertificatePEM: true,
	tlsconf.KeyKeyLocation: true, tlsconf.KeyKeyPEM: true, tlsconf.KeyKeyPassword: true,
	tlsconf.KeyEndpointIdentification: true, tlsconf.KeyEnableCertificateValidation: true,
}

// clientConfig is what a --command-config file says: the seed brokers it
// names (nil when it names none) and the kgo options for TLS, SASL and
// the client id. The zero value is a PLAINTEXT client with no seeds.
type clientConfig struct {
	seeds []string
	opts  []kgo.Opt
}

// loadClientConfig reads the --command-config file at path; "" is the zero
// clientConfig. Keys it does not know are reported on warn and ignored.
// Errors name the file and, for a bad value, the key.
func loadClientConfig(path string, warn io.Writer) (clientConfig, error) {
	if path == "" {
		return clientConfig{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return clientConfig{}, fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	props, err := config.ParseProperties(f)
	if err != nil {
		return clientConfig{}, fmt.Errorf("--command-config %s: %w", path, err)
	}
	cc, err := clientConfigFrom(props, func(p config.Property) {
		fmt.Fprintf(warn, "warning: --command-config %s: line %d: %s is not a client setting sluice uses; ignored\n", path, p.Line, p.Key)
	})
	if err != nil {
		return clientConfig{}, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return cc, nil
}

// clientConfigFrom turns parsed properties into a clientConfig, calling
// unknown for each key it ignores. A key given twice takes its last value,
// as in Java's Properties. Errors name the key at fault.
func clientConfigFrom(props []config.Property, unknown func(config.Property)) (clientConfig, error) {
	vals := map[string]string{}
	for _, p := range props {
		if !knownClientKeys[p.Key] {
			unknown(p)
			continue
		}
		vals[p.Key] = p.Value
	}
	get := func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	val := func(k string) string { return strings.TrimSpace(vals[k]) }
	bad := func(k, format string, args ...any) error {
		return fmt.Errorf("%s: %s", k, fmt.Sprintf(format, args...))
	}

	var cc clientConfig
	servers, serversKey := val(keyBootstrapServers), keyBootstrapServers
	if servers == "" {
		servers, serversKey = val(keyMetadataBrokerList), keyMetadataBrokerList
	}
	if _, set := get(serversKey); set {
		if cc.seeds = splitSeeds(servers); len(cc.seeds) == 0 {
			return clientConfig{}, bad(serversKey, "empty")
		}
	}
	if id := val(keyClientID); id != "" {
		cc.opts = append(cc.opts, kgo.ClientID(id))
	}

	var useTLS, useSASL bool
	switch proto := strings.ToUpper(val(keySecurityProtocol)); proto {
	case "", "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return clientConfig{}, bad(keySecurityProtocol, "%q is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", val(keySecurityProtocol))
	}

	if useTLS {
		settings, err := tlsconf.ClientFromProperties(get)
		if err != nil {
			return clientConfig{}, err // a *tlsconf.ConfigError, naming the key
		}
		tc, err := settings.Config()
		if err != nil {
			return clientConfig{}, err
		}
		// kgo clones this per dial and sets ServerName to the host dialed.
		cc.opts = append(cc.opts, kgo.DialTLSConfig(tc))
	}

	if useSASL {
		mech, err := saslMechanism(val(keySASLMechanism), val(keySASLMechanisms), val(keySASLUsername), vals[keySASLPassword])
		if err != nil {
			return clientConfig{}, err
		}
		cc.opts = append(cc.opts, kgo.SASL(mech))
	}
	return cc, nil
}

// saslMechanism is the kgo SASL mechanism for sasl.mechanism (or its older
// name sasl.mechanisms) with the user's credentials. librdkafka's default
// mechanism is GSSAPI, which sluice does not speak, so one must be named.
func saslMechanism(mechanism, mechanisms, user, pass string) (sasl.Mechanism, error) {
	key := keySASLMechanism
	if mechanism == "" {
		mechanism, key = mechanisms, keySASLMechanisms
	}
	if mechanism == "" {
		return nil, fmt.Errorf("%s: missing: the security protocol uses SASL (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", keySASLMechanism)
	}
	if user == "" {
		return nil, fmt.Errorf("%s: missing: %s=%s needs a user", keySASLUsername, key, mechanism)
	}
	if pass == "" {
		return nil, fmt.Errorf("%s: missing: %s=%s needs a password", keySASLPassword, key, mechanism)
	}
	switch strings.ToUpper(mechanism) {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("%s: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", key, mechanism)
}

// splitSeeds splits a comma-separated broker list, dropping empty entries.
func splitSeeds(list string) []string {
	var seeds []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// clientSeeds picks the seed brokers of a client subcommand: the flag when
// given, else bootstrap.servers of the --command-config file, else
// localhost:9092.
func clientSeeds(flagValue string, cc clientConfig) []string {
	if flagValue != "" {
		return splitSeeds(flagValue)
	}
	if cc.seeds != nil {
		return cc.seeds
	}
	return []string{defaultBootstrap}
}

// defaultBootstrap is where client subcommands connect when neither a flag
// nor --command-config names a broker.
const defaultBootstrap = "localhost:9092"
