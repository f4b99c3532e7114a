package config

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// FuzzLoadProperties applies a properties file to Default() through the
// definition table, as Load does, and checks:
//   - nothing panics: not parsing, setting, Validate nor Describe;
//   - every error of a key wraps ErrConfig and names the key;
//   - a key set is described as STATIC_BROKER_CONFIG, and a sensitive key
//     is never described with a value.
func FuzzLoadProperties(f *testing.F) {
	for _, seed := range []string{
		"broker.id=1\nlog.retention.hours=5\nlog.retention.ms=7\n",
		"listeners=PLAINTEXT://:1,INTERNAL://h:2\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL\ninter.broker.listener.name=internal\n",
		"max.connections.per.ip=0\nmax.connections.per.ip.overrides=::1:5,[::2]:3,h:0\n",
		"ssl.key.password=hunter2\nsasl.jaas.config=x required user_a=\"b\";\nlistener.name.x.ssl.keystore.location=/k\n",
		"log.cleaner.io.max.bytes.per.second=NaN\nlog.cleaner.min.cleanable.ratio=1e-400\n",
		"log.cleanup.policy=compact,,delete\nprocess.scheduling.policy=normal\nhttp.listeners=https://[::1]:0\n",
		"log.dir=\nnode.id=-1\nkey\\u00zz=1\n",
		"queued.max.request.bytes=-9223372036854775808\nreplica.fetch.wait.max.ms=2147483647\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		props, err := ParseProperties(strings.NewReader(data))
		if err != nil {
			return
		}
		c := Default()
		s := newSetter(&c)
		for _, p := range props {
			if err := s.set(p.Key, p.Value); err != nil {
				if !errors.Is(err, ErrConfig) || !(strings.Contains(err.Error(), p.Key) || strings.Contains(err.Error(), strconv.Quote(p.Key))) {
					t.Fatalf("set %q=%q: %v does not name the key", p.Key, p.Value, err)
				}
				return
			}
		}
		s.finish()
		if err := c.Validate(); err != nil && !errors.Is(err, ErrConfig) {
			t.Fatalf("Validate: %v is not ErrConfig", err)
		}
		for _, k := range Keys() {
			v, src := c.Describe(k)
			if k.Sensitive && v != nil {
				t.Fatalf("%s described with its value", k.Name)
			}
			if _, set := c.explicit[k.Name]; set && src != SourceStaticBroker {
				t.Fatalf("%s set but described with source %d", k.Name, src)
			}
		}
		for _, tk := range TopicKeys() {
			c.TopicDefault(tk)
		}
	})
}
