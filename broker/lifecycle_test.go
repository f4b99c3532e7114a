package broker_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// startFailure is a Start that fails at one stage: setup prepares the log
// dir (and returns what undoes it before the second Start, or nil), mod
// breaks the config.
type startFailure struct {
	name    string
	backend string // "" is memory
	setup   func(t *testing.T, dir string) (undo func())
	mod     func(t *testing.T, c *config.Config, ports startPorts)
	// zk starts a ZooKeeper for the case (ports.zk) before its ports
	// are picked: started after, its process and its readiness probe
	// open sockets that may take a port picked and not yet bound, and
	// both Starts then fail to listen (seen once in CI).
	zk bool
}

// startPorts are fixed ports for one case, so that a second Start can
// show they were released: kafka and http are the listeners the good
// config binds; zk is the case's ZooKeeper (startFailure.zk), "" if none.
type startPorts struct {
	kafka, http int
	zk          string
}

// TestStartFailureLeavesNothingOpen: a Start that fails at any stage
// closes everything it had started. Afterwards the log dir opens in a
// second Start, that Start binds the same Kafka and HTTP ports (the failed
// Start's listeners were closed), and the process runs no more goroutines
// and holds no more open files than before the failed Start (every
// background loop ended, the metastore and the store were closed: their
// locks do not show within one process); the same holds after the second
// broker's Close.
func TestStartFailureLeavesNothingOpen(t *testing.T) {
	missing := func(dir string) map[string]string {
		return map[string]string{"ssl.keystore.location": filepath.Join(dir, "missing-keystore.pem")}
	}
	cases := []startFailure{
		{name: "stage=http/bad TLS file", mod: func(t *testing.T, c *config.Config, p startPorts) {
			c.HTTPListeners = []string{fmt.Sprintf("https://127.0.0.1:%d", p.http)}
			c.SecurityProperties = missing(c.LogDirs[0])
		}},
		{name: "stage=metastore/dir is a file", setup: func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, broker.MetaDirName)
			if err := os.WriteFile(path, []byte("not a directory"), 0o644); err != nil {
				t.Fatal(err)
			}
			return func() { os.Remove(path) }
		}},
		{name: "stage=meta.properties/another broker", setup: func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, "meta.properties")
			if err := os.WriteFile(path, []byte("version=0\nbroker.id=7\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return func() { os.Remove(path) }
		}},
		{name: "stage=storage/unknown backend", mod: func(t *testing.T, c *config.Config, p startPorts) {
			c.StorageBackend = "nope"
		}},
		{name: "stage=listeners/address in use", mod: func(t *testing.T, c *config.Config, p startPorts) {
			busy, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { busy.Close() })
			c.Listeners = append(c.Listeners, "SASL_PLAINTEXT://"+busy.Addr().String())
		}},
		{name: "stage=cluster node/zookeeper.connect names no server", mod: func(t *testing.T, c *config.Config, p startPorts) {
			c.ZooKeeperConnect = "/sluice"
		}},
		{name: "stage=listener security/bad TLS file", mod: func(t *testing.T, c *config.Config, p startPorts) {
			c.Listeners = []string{fmt.Sprintf("SSL://127.0.0.1:%d", p.kafka)}
			c.SecurityProperties = missing(c.LogDirs[0])
		}},
		{name: "stage=server/partition log cannot open", backend: "segment", setup: unopenablePartition},
		{name: "stage=listener security in a cluster/bad TLS file", zk: true, mod: func(t *testing.T, c *config.Config, p startPorts) {
			c.ZooKeeperConnect = p.zk + "/sluice"
			c.ControlledShutdownEnable = false
			c.Listeners = append(c.Listeners, "SSL://127.0.0.1:0")
			c.SecurityProperties = missing(c.LogDirs[0])
		}},
	}

	// Start and close one broker first, so that whatever the process
	// starts once and keeps (in the storage libraries, net/http) is not
	// counted as left behind by the first case.
	warm := brokertest.Start(t, "segment")
	if err := warm.Close(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			backend := tc.backend
			if backend == "" {
				backend = "memory"
			}
			dir := t.TempDir()
			var undo func()
			if tc.setup != nil {
				undo = tc.setup(t, dir)
			}
			var ports startPorts
			if tc.zk {
				ports.zk = zktest.Start(t).Addr()
			}
			ports.kafka, ports.http = freePort(t), freePort(t)
			good := func(c *config.Config) {
				c.Listeners = []string{fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", ports.kafka)}
				c.HTTPListeners = []string{fmt.Sprintf("http://127.0.0.1:%d", ports.http)}
			}
			cfg := brokertest.Config(dir, backend, good)
			if tc.mod != nil {
				tc.mod(t, &cfg, ports)
			}

			before := nowRunning()
			b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t)})
			if err == nil {
				b.Close()
				t.Fatal("Start succeeded")
			}
			t.Logf("Start: %v", err)
			waitReleased(t, before, "the failed Start")

			if undo != nil {
				undo()
			}
			b, err = broker.Start(brokertest.Config(dir, backend, good), broker.Options{Logger: brokertest.Logger(t)})
			if err != nil {
				t.Fatalf("second Start on the same dir and ports: %v", err)
			}
			if err := b.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			waitReleased(t, before, "Close")
		})
	}
}

// unopenablePartition leaves dir with a topic whose partition directory
// is a file: the segment backend fails to open its log when server.New
// loads the topics. The undo puts the partition back.
func unopenablePartition(t *testing.T, dir string) func() {
	b := brokertest.StartIn(t, dir, "segment")
	adm := kadm.NewClient(client(t, b.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	adm.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dir, "t-0")
	if err := os.Rename(part, part+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(part, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(part); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(part+".aside", part); err != nil {
			t.Fatal(err)
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// running is what a broker could leave behind: the goroutines running and
// the file descriptors open (-1 where /proc/self/fd cannot be read).
type running struct{ goroutines, fds int }

func nowRunning() running {
	r := running{goroutines: runtime.NumGoroutine(), fds: -1}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		r.fds = len(fds)
	}
	return r
}

func (r running) above(base running) bool {
	return r.goroutines > base.goroutines || r.fds > base.fds
}

// waitReleased waits until no more goroutines run and no more files are
// open than in base. Goroutines that were told to stop may take a moment
// to return, so it polls; the deadline only bounds how long a leak takes
// to report, with every goroutine's stack.
func waitReleased(t *testing.T, base running, after string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); nowRunning().above(base); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("after %s: %+v, before: %+v; goroutines:\n%s", after, nowRunning(), base, buf)
		}
	}
}
