package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrConfig marks every configuration error; the message names the key.
var ErrConfig = errors.New("config")

// keyError is a problem with one key's value.
func keyError(key, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, key, fmt.Sprintf(format, args...))
}

// Load builds a Config from Kafka's defaults, then the properties file at
// path (skipped when path is ""), then each "key=value" of sets, in order.
// The result is validated as a whole.
func Load(path string, sets []string) (Config, error) {
	c := Default()
	s := newSetter(&c)
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		props, err := ParseProperties(f)
		f.Close()
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %v", ErrConfig, path, err)
		}
		for _, p := range props {
			if err := s.set(p.Key, p.Value); err != nil {
				return Config{}, fmt.Errorf("%w (%s line %d)", err, path, p.Line)
			}
		}
	}
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Config{}, fmt.Errorf("%w: --set %q: want key=value", ErrConfig, kv)
		}
		if err := s.set(strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return Config{}, err
		}
	}
	if err := s.finish(); err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// Set applies one key=value to c, as --set does, without whole-config
// validation. Tests and embedders use it to override defaults.
func (c *Config) Set(key, value string) error {
	s := newSetter(c)
	if err := s.set(key, value); err != nil {
		return err
	}
	return s.finish()
}

// Property is one key/value of a properties file.
type Property struct {
	Key, Value string
	Line       int
}

// ParseProperties reads a Java .properties file: `key=value`, `key: value`
// or `key value`; `#` and `!` start comments; a trailing backslash continues
// a line; \t \n \r \f \\ \uXXXX escapes are decoded.
func ParseProperties(r io.Reader) ([]Property, error) {
	var out []Property
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	lineNo := 0
	var pending strings.Builder
	startLine := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if pending.Len() == 0 {
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			startLine = lineNo
		}
		if cont := trailingBackslashes(line)%2 == 1; cont {
			pending.WriteString(line[:len(line)-1])
			continue
		}
		pending.WriteString(line)
		logical := pending.String()
		pending.Reset()
		k, v, err := splitProperty(logical)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", startLine, err)
		}
		out = append(out, Property{Key: k, Value: v, Line: startLine})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pending.Len() > 0 {
		k, v, err := splitProperty(pending.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", startLine, err)
		}
		out = append(out, Property{Key: k, Value: v, Line: startLine})
	}
	return out, nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

func splitProperty(s string) (key, value string, err error) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(s) {
		i = len(s)
	}
	rawKey := s[:i]
	rest := strings.TrimLeft(s[i:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	if key, err = unescape(rawKey); err != nil {
		return "", "", err
	}
	if value, err = unescape(rest); err != nil {
		return "", "", err
	}
	return key, strings.TrimRight(value, " \t"), nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("short \\u escape in %q", s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
			if err != nil {
				return "", fmt.Errorf("bad \\u escape in %q", s)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// setter applies keys to a Config, remembering the retention unit keys so
// that Kafka's precedence (ms over minutes over hours) holds whatever the
// order in the file.
type setter struct {
	c         *Config
	retention map[string]time.Duration
	roll      map[string]time.Duration
	cloned    bool // c.explicit is this setter's own copy
}

func newSetter(c *Config) *setter {
	return &setter{c: c, retention: map[string]time.Duration{}, roll: map[string]time.Duration{}}
}

func (s *setter) finish() error {
	for _, k := range []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"} {
		if d, ok := s.retention[k]; ok {
			s.c.LogRetention = d
			break
		}
	}
	for _, k := range []string{"log.roll.ms", "log.roll.hours"} {
		if d, ok := s.roll[k]; ok {
			s.c.LogSegmentMs = d
			break
		}
	}
	return nil
}

// set applies one key through its definition in the table, and records
// the value as given (for DescribeConfigs' STATIC_BROKER_CONFIG). An
// unknown key is an error, except TLS and SASL settings, global (ssl.*,
// sasl.*) or per listener (listener.name.<listener>.*, as Kafka allows):
// those are kept as given and read through ListenerProperty when the
// listeners are built, which is where a bad value is reported (naming the
// key).
func (s *setter) set(key, v string) error {
	k, ok := Lookup(key)
	if !ok {
		if strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl.") || strings.HasPrefix(key, "listener.name.") {
			s.c.setSecurityProperty(key, v)
			return nil
		}
		if strings.HasPrefix(key, RemoteStoragePrefix) {
			s.c.setRemoteStorageProperty(key, v)
			return nil
		}
		return fmt.Errorf("%w: unknown key %q", ErrConfig, key)
	}
	if err := k.set(s, key, v); err != nil {
		return err
	}
	if !s.cloned {
		// Copy on write: a Config copied before Set shares the map.
		s.c.explicit = maps.Clone(s.c.explicit)
		if s.c.explicit == nil {
			s.c.explicit = map[string]string{}
		}
		s.cloned = true
	}
	s.c.explicit[k.Name] = v
	return nil
}

// setSecurityProperty keeps a TLS or SASL key as given.
func (c *Config) setSecurityProperty(key, v string) {
	if c.SecurityProperties == nil {
		c.SecurityProperties = map[string]string{}
	}
	c.SecurityProperties[key] = v
}

func parseInt64(key, v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, keyError(key, "%q is not an integer", v)
	}
	if n < lo || n > hi {
		return 0, keyError(key, "%d is out of range [%d, %d]", n, lo, hi)
	}
	return n, nil
}

// parseFloat reads a Java double ("0.5", "1e6", "1.7976931348623157E308")
// in [lo, hi]; NaN is refused.
func parseFloat(key, v string, lo, hi float64) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, keyError(key, "%q is not a number", v)
	}
	if !(f >= lo && f <= hi) {
		return 0, keyError(key, "%v is out of range [%v, %v]", f, lo, hi)
	}
	return f, nil
}

func parseInt32(key, v string, lo, hi int32) (int32, error) {
	n, err := parseInt64(key, v, int64(lo), int64(hi))
	return int32(n), err
}

func parseBool(key, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, keyError(key, "%q is not true or false", v)
}

// parseDuration reads an integer count of unit; -1 (when min is -1) means
// unlimited and is returned as -1ns.
func parseDuration(key, v string, unit time.Duration, min int64) (time.Duration, error) {
	n, err := parseInt64(key, v, min, math.MaxInt64)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return -1, nil
	}
	if n > int64(math.MaxInt64/unit) {
		return math.MaxInt64, nil
	}
	return time.Duration(n) * unit, nil
}

// parseHostCounts reads Kafka's "host:count,host:count" map. The host is
// an IP address or a name; the count follows the last colon, so IPv6
// addresses need no brackets ("::1:5").
func parseHostCounts(key, v string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, e := range splitList(v) {
		i := strings.LastIndexByte(e, ':')
		if i <= 0 {
			return nil, keyError(key, "%q: want host:count", e)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(e[:i]), "["), "]")
		n, err := parseInt32(key, e[i+1:], 0, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		if host == "" {
			return nil, keyError(key, "%q: empty host", e)
		}
		out[host] = n
	}
	return out, nil
}

// upperList splits a comma-separated list into upper-case items.
func upperList(v string) []string {
	out := splitList(v)
	for i := range out {
		out[i] = strings.ToUpper(out[i])
	}
	return out
}

// ListenerProperty returns the value of a TLS or SASL key for listener
// name: listener.name.<name lowercased>.<key> when set (Kafka's
// per-listener override), else the broker-wide key.
func (c *Config) ListenerProperty(name, key string) (string, bool) {
	if v, ok := c.SecurityProperties["listener.name."+strings.ToLower(name)+"."+key]; ok {
		return v, true
	}
	v, ok := c.SecurityProperties[key]
	return v, ok
}

// ListenerLimit returns listener name's own connection limit key
// (listener.name.<name lowercased>.<key>, for max.connections and
// max.connection.creation.rate, as Kafka reads them); ok is false when it
// is not set. Validate has checked the value.
func (c *Config) ListenerLimit(name, key string) (n int32, ok bool) {
	n, ok, _ = c.listenerLimit(name, key)
	return n, ok
}

func (c *Config) listenerLimit(name, key string) (int32, bool, error) {
	k := "listener.name." + strings.ToLower(name) + "." + key
	v, ok := c.SecurityProperties[k]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 0 {
		return 0, false, keyError(k, "%q: want an integer from 0 to 2147483647", v)
	}
	return int32(n), true, nil
}

// ListenerProtocol returns listener name's security protocol.
func (c *Config) ListenerProtocol(name string) string {
	if p, ok := c.ListenerSecurityProtocolMap[name]; ok {
		return p
	}
	return name
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseListeners checks NAME://host:port entries, each name once. Which
// security protocol a name means is checked in Validate, against
// listener.security.protocol.map.
func parseListeners(key, v string, advertised bool) ([]string, error) {
	ls := splitList(v)
	if len(ls) == 0 {
		return nil, keyError(key, "empty")
	}
	seen := map[string]bool{}
	for _, l := range ls {
		name, _, err := SplitListener(l)
		if err != nil {
			return nil, keyError(key, "%v", err)
		}
		if seen[name] {
			return nil, keyError(key, "listener name %s appears twice", name)
		}
		seen[name] = true
	}
	return ls, nil
}

// parseProtocolMap parses listener.security.protocol.map:
// "NAME:PROTOCOL,...".
func parseProtocolMap(key, v string) (map[string]string, error) {
	m := map[string]string{}
	for _, e := range splitList(v) {
		name, proto, ok := strings.Cut(e, ":")
		// Kafka upper-cases both (SecurityProtocol.forName), so
		// internal:plaintext is INTERNAL:PLAINTEXT.
		name, proto = strings.TrimSpace(name), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || proto == "" {
			return nil, keyError(key, "%q: want LISTENER_NAME:SECURITY_PROTOCOL", e)
		}
		switch proto {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return nil, keyError(key, "%q: unknown security protocol %s", e, proto)
		}
		m[strings.ToUpper(name)] = proto
	}
	return m, nil
}

// SplitListener splits "NAME://host:port" into the listener name (upper
// case, as Kafka treats them) and the host:port address.
func SplitListener(l string) (name, addr string, err error) {
	proto, hostport, ok := strings.Cut(l, "://")
	if !ok || proto == "" {
		return "", "", fmt.Errorf("listener %q: want NAME://host:port", l)
	}
	proto = strings.ToUpper(proto)
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return "", "", fmt.Errorf("listener %q: no port", l)
	}
	port, perr := strconv.Atoi(hostport[i+1:])
	if perr != nil || port < 0 || port > 65535 {
		return "", "", fmt.Errorf("listener %q: bad port", l)
	}
	return proto, hostport, nil
}

// Validate checks relations between keys.
func (c *Config) Validate() error {
	if err := c.validateZooKeeper(); err != nil {
		return err
	}
	switch c.StorageBackend {
	case "segment", "pebble", "memory":
	default:
		return keyError("storage.backend", "%q is not one of segment, pebble, memory", c.StorageBackend)
	}
	if err := checkLogDirs(c.LogDirs); err != nil {
		return err
	}
	if c.ReplicaFetchWaitMax > c.ReplicaLagTimeMax {
		// Kafka's KafkaConfig rule: a follower parked longer than the lag
		// allowed would drop out of the ISR while caught up.
		return keyError("replica.fetch.wait.max.ms", "%d is above replica.lag.time.max.ms %d", c.ReplicaFetchWaitMax.Milliseconds(), c.ReplicaLagTimeMax.Milliseconds())
	}
	if c.GroupMinSessionTimeout > c.GroupMaxSessionTimeout {
		return keyError("group.min.session.timeout.ms", "above group.max.session.timeout.ms")
	}
	if err := c.checkConsumerGroupBounds(); err != nil {
		return err
	}
	if err := c.checkShareGroupBounds(); err != nil {
		return err
	}
	if int(c.MessageMaxBytes) > int(c.SocketRequestMaxBytes) {
		return keyError("message.max.bytes", "%d exceeds socket.request.max.bytes %d", c.MessageMaxBytes, c.SocketRequestMaxBytes)
	}
	if c.QueuedMaxRequestBytes > 0 && c.QueuedMaxRequestBytes < int64(c.SocketRequestMaxBytes) {
		// Kafka's rule: a frame of the largest size allowed must fit, or
		// it could never be read.
		return keyError("queued.max.request.bytes", "%d is below socket.request.max.bytes %d", c.QueuedMaxRequestBytes, c.SocketRequestMaxBytes)
	}
	if err := c.checkTieredStorage(); err != nil {
		return err
	}
	if c.LogCleanerMinCompactionLagMs > c.LogCleanerMaxCompactionLagMs {
		// Kafka's LogConfig.validateValues rule, for the broker defaults.
		return keyError("log.cleaner.min.compaction.lag.ms", "%d is above log.cleaner.max.compaction.lag.ms %d", c.LogCleanerMinCompactionLagMs, c.LogCleanerMaxCompactionLagMs)
	}
	if c.MaxConnectionsPerIP == 0 && len(c.MaxConnectionsPerIPOverrides) == 0 {
		return keyError("max.connections.per.ip", "0 is allowed only with max.connections.per.ip.overrides")
	}
	names := map[string]bool{}
	for _, l := range c.Listeners {
		name, _, _ := SplitListener(l)
		if _, ok := c.ListenerSecurityProtocolMap[name]; !ok {
			return keyError("listeners", "listener name %s is not in listener.security.protocol.map", name)
		}
		names[name] = true
		for _, key := range []string{"max.connections", "max.connection.creation.rate"} {
			if _, _, err := c.listenerLimit(name, key); err != nil {
				return err
			}
		}
	}
	if ib := c.InterBrokerListenerName; ib != "" && !names[ib] {
		return keyError("inter.broker.listener.name", "%s is not one of the listeners", ib)
	}
	if cp := c.ControlPlaneListenerName; cp != "" {
		if !names[cp] {
			return keyError("control.plane.listener.name", "%s is not one of the listeners", cp)
		}
		if len(c.Listeners) < 2 {
			return keyError("control.plane.listener.name", "needs a listener of its own besides the one clients and other brokers use")
		}
		if c.SingleNode() {
			return keyError("control.plane.listener.name", "set without zookeeper.connect: a single-node broker has no controller requests")
		}
	}
	if len(c.AdvertisedListeners) > 0 {
		for _, l := range c.AdvertisedListeners {
			name, addr, _ := SplitListener(l)
			if !names[name] {
				return keyError("advertised.listeners", "%s is not one of the listeners", name)
			}
			if strings.HasPrefix(addr, ":") || strings.HasPrefix(addr, "0.0.0.0:") {
				return keyError("advertised.listeners", "%q needs a host clients can reach", l)
			}
		}
	}
	return nil
}

// parseHTTPListeners parses http.listeners: a comma-separated list of
// http://host:port or https://host:port; empty disables the HTTP server.
func parseHTTPListeners(key, v string) ([]string, error) {
	var out []string
	for _, l := range strings.Split(v, ",") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		scheme, hostport, ok := strings.Cut(l, "://")
		scheme = strings.ToLower(scheme)
		if !ok || (scheme != "http" && scheme != "https") {
			return nil, keyError(key, "%q: want http://host:port or https://host:port", l)
		}
		host, port, err := net.SplitHostPort(hostport)
		if err != nil {
			return nil, keyError(key, "%q: %v", l, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return nil, keyError(key, "%q: port %q is not a number in 0-65535", l, port)
		}
		out = append(out, scheme+"://"+net.JoinHostPort(host, port))
	}
	return out, nil
}

// checkLogDirs refuses a log dir named twice (after filepath.Clean and, where
// it resolves, filepath.Abs), as Kafka's LogManager refuses duplicate
// canonical paths: two dirs would hold the same partitions.
func checkLogDirs(dirs []string) error {
	seen := map[string]bool{}
	for _, d := range dirs {
		k := filepath.Clean(d)
		if abs, err := filepath.Abs(k); err == nil {
			k = abs
		}
		if seen[k] {
			return keyError("log.dirs", "%s is listed twice", d)
		}
		seen[k] = true
	}
	return nil
}
