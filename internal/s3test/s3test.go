// Package s3test starts a real S3-compatible server for tests: Versity's
// S3 gateway (github.com/versity/versitygw) over a posix directory, which
// `make test` installs into bin/tools (scripts/test-deps.sh). A test that
// starts it is taken out of `go test -short` (testenv.NeedsProcess); a
// missing versitygw skips the test, or fails it under CI=true.
package s3test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testenv"
)

// Credentials of the gateway's root user.
const (
	Access = "sluicetest"
	Secret = "sluicetest-secret"
)

// Server is one versitygw process serving the buckets under Dir.
type Server struct {
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// Binary returns the path of versitygw: bin/tools/versitygw of the
// module, else versitygw on PATH.
func Binary() (string, error) {
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, "bin", "tools", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("versitygw")
	if err != nil {
		return "", errors.New("s3test: versitygw not found in bin/tools or on PATH (make test-deps installs it)")
	}
	return p, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("s3test: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Start starts versitygw on a free port of 127.0.0.1 over a temp dir and
// stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	testenv.NeedsProcess(t, "versitygw")
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: run scripts/test-deps.sh)", err)
		}
		t.Skip(err)
	}
	s := &Server{bin: bin, dir: t.TempDir()}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	if s.port == 0 {
		p, err := freePort()
		if err != nil {
			return err
		}
		s.port = p
	}
	s.cmd = exec.Command(s.bin, "--port", s.Addr(), "--access", Access, "--secret", Secret, "--quiet", "posix", s.dir)
	s.cmd.Stdout = nil
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("s3test: start versitygw: %w", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(s.cmd, s.done)
	// Ready once it accepts connections: bounded, generous for a loaded
	// machine.
	for i := 0; i < 600; i++ {
		select {
		case <-s.done:
			return errors.New("s3test: versitygw exited at start")
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Stop()
	return errors.New("s3test: versitygw did not listen within 60s")
}

// Addr is the gateway's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Endpoint is the gateway's URL (rsm.config.storage.s3.endpoint.url).
func (s *Server) Endpoint() string { return "http://" + s.Addr() }

// Dir is the posix directory holding the buckets.
func (s *Server) Dir() string { return s.dir }

// Pid is the gateway's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Pause stops the gateway with SIGSTOP: connections are accepted by the
// kernel and never answered, as a hung store.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused gateway (SIGCONT).
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Stop kills the gateway (its pid only) and waits for it.
func (s *Server) Stop() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	s.cmd.Process.Signal(syscall.SIGCONT)
	s.cmd.Process.Kill()
	<-s.done
	return nil
}

// Restart starts the gateway again on the same port and directory after
// Stop.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}
