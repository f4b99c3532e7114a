package console

// A storm of wrong passwords against the HTTP side's basic auth, over real
// connections: 500 attempts from 20 concurrent clients on 127.0.0.1, and a
// correct login from 127.0.0.2 while it lasts (Linux routes all of
// 127.0.0.0/8 to the loopback device).

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice/sluice/auth/loginlimit"
	"github.com/sluice/sluice/auth/sasl"
)

// stormFigures is what one storm cost.
type stormFigures struct {
	derivations   int64         // PBKDF2 derivations during the storm
	cpu           time.Duration // process CPU (user+system) during the storm
	refused       int64         // 429 answers
	unauthorized  int64         // 401 answers
	goodStatus    int           // the correct login's status
	goodLatency   time.Duration // and how long it took
	goodDuringRun bool          // it finished before the storm did
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clientFrom is an HTTP client whose connections come from local.
func clientFrom(local string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: d.DialContext, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// loginStorm starts a console with SCRAM user carol (4096 iterations,
// SHA-512) and the given limiter, sends attempts wrong passwords for carol
// from clients concurrent clients on 127.0.0.1, and once a tenth of them
// are answered, logs in correctly from 127.0.0.2.
func loginStorm(t testing.TB, limit *loginlimit.Limiter, delay time.Duration, attempts, clients int) stormFigures {
	c, err := sasl.NewCredential(sasl.ScramSHA512, "carol-secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{Listeners: []string{"http://127.0.0.1:0"}, AuthRequired: true,
		AuthFailureDelay: delay, FailedLogins: limit, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Attach(Backend{Credentials: creds{user: "carol", c: c}})
	url := "http://" + s.Addrs()[0] + "/api/whoami"

	storm := clientFrom("127.0.0.1", clients)
	defer storm.CloseIdleConnections()
	var f stormFigures
	var answered atomic.Int64
	tenth := make(chan struct{})
	var tenthOnce sync.Once
	var next atomic.Int64
	d0, cpu0 := s.auth.Derivations(), processCPU(t)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(attempts) {
				req, _ := http.NewRequestWithContext(context.Background(), "GET", url, nil)
				req.SetBasicAuth("carol", "guess")
				resp, err := storm.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body) // so the connection is reused
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusTooManyRequests:
					atomic.AddInt64(&f.refused, 1)
				case http.StatusUnauthorized:
					atomic.AddInt64(&f.unauthorized, 1)
				default:
					t.Errorf("wrong password answered %d", resp.StatusCode)
				}
				if answered.Add(1) == int64(attempts/10) {
					tenthOnce.Do(func() { close(tenth) })
				}
			}
		}()
	}
	stormDone := make(chan struct{})
	go func() { wg.Wait(); close(stormDone) }()

	good := clientFrom("127.0.0.2", 1)
	defer good.CloseIdleConnections()
	select {
	case <-tenth:
	case <-stormDone:
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.SetBasicAuth("carol", "carol-secret")
	start := time.Now()
	resp, err := good.Do(req)
	f.goodLatency = time.Since(start)
	if err != nil {
		t.Fatalf("correct login during the storm: %v", err)
	}
	resp.Body.Close()
	f.goodStatus = resp.StatusCode
	select {
	case <-stormDone:
	default:
		f.goodDuringRun = true
	}
	<-stormDone
	f.derivations = s.auth.Derivations() - d0
	f.cpu = processCPU(t) - cpu0
	return f
}

// TestLoginStormHTTP: with max.failed.authentications.per.ip=10, a storm
// of 500 wrong passwords from one address costs at most the 10 derivations
// of its allowance (plus one per 6 s refill), every other attempt is
// refused with 429 unchecked, and a correct login from another address
// during the storm gets through, in well under a second. Before the
// limiter, the storm cost 500 derivations.
func TestLoginStormHTTP(t *testing.T) {
	const attempts, clients, max = 500, 20, 10
	start := time.Now()
	f := loginStorm(t, loginlimit.New(max, time.Minute), 10*time.Millisecond, attempts, clients)
	refills := int64(time.Since(start)/(6*time.Second)) + 1
	t.Logf("storm: %d derivations, %d refused, %d unauthorized, %.3f CPU-s; correct login from another address: %d in %v (during the storm: %v)",
		f.derivations, f.refused, f.unauthorized, f.cpu.Seconds(), f.goodStatus, f.goodLatency, f.goodDuringRun)
	if f.derivations > max+refills+1 { // +1: the correct login's own
		t.Errorf("%d derivations for %d wrong passwords from one address, want at most %d", f.derivations, attempts, max+refills+1)
	}
	if f.refused+f.unauthorized != attempts || f.unauthorized > max+refills {
		t.Errorf("%d refused + %d unauthorized, want %d in all and at most %d checked", f.refused, f.unauthorized, attempts, max+refills)
	}
	if f.goodStatus != http.StatusOK {
		t.Errorf("correct login from another address during the storm: %d", f.goodStatus)
	}
	// Its latency is logged above, not asserted: on a shared, loaded
	// machine it measured 2.7 s once with the limiter working (11
	// derivations). What the limiter must show is the bound on
	// derivations, checked above; the latency figure is
	// BenchmarkLoginStormHTTP's.
}

// BenchmarkLoginStormHTTP measures one storm of 500 wrong passwords from
// 20 clients on one address with the default delay (100 ms), without a
// limit (the code before max.failed.authentications.per.ip) and with the
// default one: CPU-seconds of the whole process (clients included) and
// derivations per storm, and the latency of a correct login from another
// address during it (BENCHMARKS.md, security).
func BenchmarkLoginStormHTTP(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit func() *loginlimit.Limiter
	}{
		{"limit=off", func() *loginlimit.Limiter { return nil }},
		{"limit=10per60s", func() *loginlimit.Limiter { return loginlimit.New(10, time.Minute) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var cpu, lat time.Duration
			var der int64
			for range b.N {
				f := loginStorm(b, bc.limit(), 100*time.Millisecond, 500, 20)
				if f.goodStatus != http.StatusOK {
					b.Fatalf("correct login: %d", f.goodStatus)
				}
				cpu += f.cpu
				lat += f.goodLatency
				der += f.derivations
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/storm")
			b.ReportMetric(float64(der)/float64(b.N), "derivations/storm")
			b.ReportMetric(float64(lat.Milliseconds())/float64(b.N), "good-login-ms")
		})
	}
}
