package server

// A storm of wrong passwords against a SASL listener, over real
// connections: 500 attempts (each a new connection: SaslHandshake v1,
// SaslAuthenticate) from 20 concurrent clients on 127.0.0.1, and a
// franz-go client logging in correctly from 127.0.0.2 while it lasts
// (Linux routes all of 127.0.0.0/8 to the loopback device).

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/kraw"
)

// countingAuth is plainAuth counting the tokens its sessions check: the
// work a login costs the mechanism.
type countingAuth struct {
	plainAuth
	steps *atomic.Int64
}

func (a countingAuth) NewSession(m string) (SASLSession, error) {
	s, err := a.plainAuth.NewSession(m)
	return countingSession{s, a.steps}, err
}

type countingSession struct {
	SASLSession
	steps *atomic.Int64
}

func (s countingSession) Step(msg []byte) ([]byte, bool, error) {
	s.steps.Add(1)
	return s.SASLSession.Step(msg)
}

type saslStormFigures struct {
	steps         int64         // tokens the mechanism checked during the storm
	cpu           time.Duration // process CPU during the storm
	refused       int64         // answers naming the per-address limit
	failed        int64         // other SASL_AUTHENTICATION_FAILED answers
	goodErr       error         // the correct login's result
	goodLatency   time.Duration // and how long it took (connect, authenticate, Metadata)
	goodDuringRun bool          // it finished before the storm did
}

func processCPU(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// saslLoginStorm serves a SASL_PLAINTEXT listener with PLAIN user alice
// and max.failed.authentications.per.ip=max (0: none), sends attempts
// wrong passwords from clients concurrent connections on 127.0.0.1, and
// once a tenth are answered logs in as alice from 127.0.0.2.
func saslLoginStorm(t testing.TB, max int32, delay time.Duration, attempts, clients int) saslStormFigures {
	cfg := config.Default()
	cfg.FailedAuthenticationDelay = delay
	cfg.MaxFailedAuthenticationsPerIP = max
	var steps atomic.Int64
	auth := countingAuth{plainAuth{users: map[string]string{"alice": "alice-secret"}}, &steps}
	s := newTestServer(t, &cfg, Options{ClusterID: "storm", AdvertisedHost: "127.0.0.1",
		Listeners: map[string]ListenerSecurity{"SASL_PLAINTEXT": {Protocol: "SASL_PLAINTEXT", SASL: auth}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	s.advPort = int32(ln.Addr().(*net.TCPAddr).Port)
	s.self.Port = s.advPort
	go s.ServeListener(ln, "SASL_PLAINTEXT")

	var f saslStormFigures
	var next, answered atomic.Int64
	tenth := make(chan struct{})
	var tenthOnce sync.Once
	cpu0 := processCPU(t)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(attempts) {
				rc := kraw.Dial(t, addr)
				if c := handshake(rc, 1, "PLAIN").ErrorCode; c != 0 {
					t.Errorf("handshake: %v", kerr.ErrorForCode(c))
					return
				}
				r := authenticate(rc, "alice", "guess")
				rc.Close()
				switch {
				case r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil:
					t.Errorf("wrong password: %v", kerr.ErrorForCode(r.ErrorCode))
					return
				case strings.Contains(*r.ErrorMessage, "too many failed authentications"):
					atomic.AddInt64(&f.refused, 1)
				default:
					atomic.AddInt64(&f.failed, 1)
				}
				if answered.Add(1) == int64(attempts/10) {
					tenthOnce.Do(func() { close(tenth) })
				}
			}
		}()
	}
	stormDone := make(chan struct{})
	go func() { wg.Wait(); close(stormDone) }()
	select {
	case <-tenth:
	case <-stormDone:
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.Dialer(d.DialContext),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, f.goodErr = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	f.goodLatency = time.Since(start)
	select {
	case <-stormDone:
	default:
		f.goodDuringRun = true
	}
	<-stormDone
	f.steps = steps.Load() - 1 // the correct login's own
	f.cpu = processCPU(t) - cpu0
	return f
}

// TestLoginStormSASL: with max.failed.authentications.per.ip=10, 500 wrong
// passwords from one address reach the mechanism at most 10 times (plus
// one per 6 s refill); every other attempt is answered
// SASL_AUTHENTICATION_FAILED, "too many failed authentications", without
// its token being checked; and a correct login from another address
// during the storm succeeds, in well under a second.
func TestLoginStormSASL(t *testing.T) {
	const attempts, clients, max = 500, 20, 10
	start := time.Now()
	f := saslLoginStorm(t, max, 10*time.Millisecond, attempts, clients)
	refills := int64(time.Since(start)/(6*time.Second)) + 1
	t.Logf("storm: %d tokens checked, %d refused, %d failed, %.3f CPU-s; correct login from another address: %v in %v (during the storm: %v)",
		f.steps, f.refused, f.failed, f.cpu.Seconds(), f.goodErr, f.goodLatency, f.goodDuringRun)
	if f.steps > max+refills {
		t.Errorf("the mechanism checked %d tokens of %d wrong passwords from one address, want at most %d", f.steps, attempts, max+refills)
	}
	if f.refused+f.failed != attempts || f.failed > max+refills {
		t.Errorf("%d refused + %d failed, want %d in all and at most %d checked", f.refused, f.failed, attempts, max+refills)
	}
	if f.goodErr != nil {
		t.Errorf("correct login from another address during the storm: %v", f.goodErr)
	}
	if f.goodLatency > time.Second {
		t.Errorf("correct login from another address took %v during the storm, want under 1 s", f.goodLatency)
	}
}

// BenchmarkLoginStormSASL measures one storm of 500 wrong passwords from 20
// clients on one address with the default delay (100 ms), without a limit
// (max.failed.authentications.per.ip=0, the code before it) and with the
// default (10 per 60 s): CPU-seconds of the whole process (the raw
// clients included) and tokens checked per storm, and the latency of a
// correct login from another address during it (BENCHMARKS.md, security).
func BenchmarkLoginStormSASL(b *testing.B) {
	for _, max := range []int32{0, 10} {
		name := "limit=off"
		if max > 0 {
			name = "limit=10per60s"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var cpu, lat time.Duration
			var steps int64
			for range b.N {
				f := saslLoginStorm(b, max, 100*time.Millisecond, 500, 20)
				if f.goodErr != nil {
					b.Fatalf("correct login: %v", f.goodErr)
				}
				cpu += f.cpu
				lat += f.goodLatency
				steps += f.steps
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/storm")
			b.ReportMetric(float64(steps)/float64(b.N), "checked/storm")
			b.ReportMetric(float64(lat.Milliseconds())/float64(b.N), "good-login-ms")
		})
	}
}

// TestLoginLimitRawV0: the raw tokens of a SaslHandshake v0 exchange are
// limited too: past the allowance (1 here) even the right password closes
// the connection without an answer, as a failed v0 exchange does, and the
// mechanism never sees it.
func TestLoginLimitRawV0(t *testing.T) {
	cfg := config.Default()
	cfg.FailedAuthenticationDelay = 10 * time.Millisecond
	cfg.MaxFailedAuthenticationsPerIP = 1
	var steps atomic.Int64
	auth := countingAuth{plainAuth{users: map[string]string{"alice": "alice-secret"}}, &steps}
	s := newTestServer(t, &cfg, Options{ClusterID: "v0", AdvertisedHost: "127.0.0.1",
		Listeners: map[string]ListenerSecurity{"SASL_PLAINTEXT": {Protocol: "SASL_PLAINTEXT", SASL: auth}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeListener(ln, "SASL_PLAINTEXT")
	for _, pass := range []string{"guess", "alice-secret"} {
		rc := kraw.Dial(t, ln.Addr().String())
		if c := handshake(rc, 0, "PLAIN").ErrorCode; c != 0 {
			t.Fatalf("handshake v0: %v", kerr.ErrorForCode(c))
		}
		tok := []byte("\x00alice\x00" + pass)
		rc.WriteRaw(append([]byte{0, 0, 0, byte(len(tok))}, tok...))
		rc.ExpectClosed()
	}
	if n := steps.Load(); n != 1 {
		t.Fatalf("the mechanism checked %d raw tokens, want 1 (the second refused unchecked)", n)
	}
}
