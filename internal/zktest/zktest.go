// Package zktest runs a real Apache ZooKeeper server (the Debian package
// `zookeeper`) for tests and development scripts: one standalone
// ZooKeeperServerMain process on a free 127.0.0.1 port with its own data
// directory, started in about a second.
//
// The process is started and stopped only by its pid. Its stdout and stderr
// go to zookeeper.log in the server's directory.
//
// Options secure the server: a digest super user
// (zookeeper.DigestAuthenticationProvider.superDigest) and a TLS
// secureClientPort served by Netty with PEM keystore and truststore files,
// beside the plain clientPort (which stays, for ruok and for tests that
// play an unauthenticated client).
package zktest

import (
	"bufio"
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testenv"
)

// Classpath is where the Debian package installs ZooKeeper (its jar's
// manifest names the other jars it needs).
const Classpath = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"

// nettyClasspath is what the Netty server (TLS) needs beyond Classpath:
// Debian's zookeeper.jar manifest omits netty-codec, and slf4j-simple puts
// ZooKeeper's log (TLS handshake failures included) into zookeeper.log.
const nettyClasspath = "/usr/share/java/netty-codec.jar:/usr/share/java/slf4j-simple.jar"

// MainClass is the standalone server's entry point.
const MainClass = "org.apache.zookeeper.server.ZooKeeperServerMain"

// startTimeout bounds how long Start waits for the server to answer ruok.
const startTimeout = 30 * time.Second

// ErrUnavailable means java or the ZooKeeper jar is not installed.
var ErrUnavailable = errors.New("zktest: java or ZooKeeper (/usr/share/java/zookeeper.jar) not installed")

// Options secure a server. The zero value is a plain server open to all.
type Options struct {
	// SuperUser, "user:password", is a digest identity that passes every
	// ACL check (ZooKeeper's superDigest): tests read and repair znodes
	// the brokers locked with it. "": none.
	SuperUser string
	// TLS, when set, adds a secureClientPort served over TLS by Netty
	// (serverCnxnFactory=NettyServerCnxnFactory).
	TLS *TLSOptions
}

// TLSOptions are the server side of the secureClientPort.
type TLSOptions struct {
	// Keystore is a PEM file with the server's private key (PKCS#8) and
	// certificate chain (ssl.keyStore.location, ssl.keyStore.type=PEM).
	Keystore string
	// Truststore is a PEM file of the CAs client certificates must chain
	// to (ssl.trustStore.location, type PEM).
	Truststore string
	// ClientAuth is ssl.clientAuth: "need" (ZooKeeper's default), "want"
	// or "none". A client certificate the server accepts authenticates the
	// session as x509:<subject DN>.
	ClientAuth string
}

// Server is one running ZooKeeper process. Its methods are safe for
// concurrent use.
type Server struct {
	dir        string
	port       int
	securePort int // 0 without Options.TLS
	opts       Options

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	paused bool
}

// Available reports whether java and the ZooKeeper jar are installed.
func Available() error {
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Start runs a ZooKeeper server in a t.TempDir() and stops it at
// t.Cleanup. When ZooKeeper is not installed the test is skipped, or fails
// when the environment variable CI is "true" (make test installs it).
// Under go test -short (make unit) the test is always skipped.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with opts.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	testenv.NeedsProcess(t, "ZooKeeper (java)")
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: run scripts/test-deps.sh)", err)
		}
		t.Skip(err)
	}
	s, err := StartProcessWith(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Logf("zktest: stop: %v", err)
		}
	})
	return s
}

// StartProcess runs a ZooKeeper server whose config, data and log live in
// dir (created if missing), on a free 127.0.0.1 port, and returns once it
// answers ruok. The caller must call Stop.
func StartProcess(dir string) (*Server, error) { return StartProcessWith(dir, Options{}) }

// StartProcessWith is StartProcess with opts.
func StartProcessWith(dir string, opts Options) (*Server, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // the free port may be taken before Java binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{dir: dir, port: port, opts: opts}
		if opts.TLS != nil {
			if s.securePort, err = freePort(); err != nil {
				return nil, err
			}
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// Addr is the server's client address, "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// SecureAddr is the TLS client address (secureClientPort),
// "127.0.0.1:port", or "" when the server was started without
// Options.TLS.
func (s *Server) SecureAddr() string {
	if s.securePort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.securePort))
}

// Dir is the directory holding zoo.cfg, data/ and zookeeper.log.
func (s *Server) Dir() string { return s.dir }

// Pid is the server process id, or 0 when stopped.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *Server) writeConfig() error {
	// tickTime 100 ms lets clients ask for short session timeouts (min 2
	// ticks); the admin server (Jetty on :8080) is off so servers never
	// collide on it.
	cfg := fmt.Sprintf(`tickTime=100
minSessionTimeout=200
maxSessionTimeout=60000
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,cons
`, filepath.Join(s.dir, "data"), s.port)
	if t := s.opts.TLS; t != nil {
		// Keys ZooKeeper does not know become the system properties
		// "zookeeper.<key>" (QuorumPeerConfig.parseProperties).
		cfg += fmt.Sprintf(`secureClientPort=%d
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=%s
ssl.keyStore.type=PEM
ssl.trustStore.location=%s
ssl.trustStore.type=PEM
ssl.clientAuth=%s
`, s.securePort, t.Keystore, t.Truststore, cmp.Or(t.ClientAuth, "need"))
	}
	return os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(cfg), 0o644)
}

// start launches the process and waits until it answers ruok.
func (s *Server) start() error {
	if err := s.writeConfig(); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "zookeeper.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	defer logf.Close()
	args := []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.root.logger=INFO,CONSOLE"}
	if s.opts.SuperUser != "" {
		args = append(args, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+superDigest(s.opts.SuperUser))
	}
	cp := Classpath
	if s.opts.TLS != nil {
		cp += ":" + nettyClasspath
	}
	args = append(args, "-cp", cp, MainClass, filepath.Join(s.dir, "zoo.cfg"))
	cmd := exec.Command("java", args...)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Kill the server if this process dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("zktest: start java: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()

	s.mu.Lock()
	s.cmd, s.exited, s.paused = cmd, exited, false
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("zktest: zookeeper exited at start (%v); see %s", cmd.ProcessState, filepath.Join(s.dir, "zookeeper.log"))
		case <-time.After(50 * time.Millisecond):
		}
		if ok, _ := s.ruok(); ok {
			// ruok can answer before the server serves sessions.
			if err := s.openSession(); err == nil {
				return nil
			}
		}
	}
	s.Stop()
	return fmt.Errorf("zktest: zookeeper on %s not ready after %v; see %s", s.Addr(), startTimeout, filepath.Join(s.dir, "zookeeper.log"))
}

// ruok sends the four-letter command "ruok" and reports whether the answer
// was "imok".
func (s *Server) ruok() (bool, error) {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return false, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false, err
	}
	b, err := io.ReadAll(bufio.NewReader(c))
	return strings.TrimSpace(string(b)) == "imok", err
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s; a paused server is
// resumed first) and waits for it. Stopping a stopped server is a no-op.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, exited, paused := s.cmd, s.exited, s.paused
	s.cmd, s.paused = nil, false
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	p := cmd.Process
	if paused {
		p.Signal(syscall.SIGCONT)
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	p.Kill()
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("zktest: pid %d did not exit after SIGKILL", p.Pid)
	}
}

// Pause stops the server process with SIGSTOP: clients see a silent server.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP, true) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT, false) }

func (s *Server) signal(sig syscall.Signal, paused bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("zktest: server not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("zktest: %v to pid %d: %w", sig, s.cmd.Process.Pid, err)
	}
	s.paused = paused
	return nil
}

// Restart stops the server and starts it again on the same port with the
// same data: sessions whose timeout has not passed survive.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start()
}

// openSession opens a session and closes it: the server serves clients.
func (s *Server) openSession() error { return s.session(0, make([]byte, 16)) }

// ExpireSession ends the session sessionID (whose password is passwd) the
// way Curator's KillSession does: it connects a second client with the same
// id and password and closes the session. The session's own client then
// sees the session expired and its ephemeral nodes are gone.
func (s *Server) ExpireSession(sessionID int64, passwd []byte) error {
	return s.session(sessionID, passwd)
}

// session connects with sessionID (0: a new session) and passwd, then
// closes the session.
func (s *Server) session(sessionID int64, passwd []byte) error {
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		return fmt.Errorf("zktest: expire session: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))

	// ConnectRequest: protocolVersion int32, lastZxidSeen int64,
	// timeOut int32, sessionId int64, passwd buffer, readOnly bool.
	var b []byte
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, 30000)
	b = binary.BigEndian.AppendUint64(b, uint64(sessionID))
	b = binary.BigEndian.AppendUint32(b, uint32(len(passwd)))
	b = append(b, passwd...)
	b = append(b, 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.Write(b); err != nil {
		return fmt.Errorf("zktest: expire session: %w", err)
	}
	resp, err := readFrame(c)
	if err != nil {
		return fmt.Errorf("zktest: expire session: connect response: %w", err)
	}
	// ConnectResponse: protocolVersion int32, timeOut int32, sessionId int64, ...
	if len(resp) < 16 {
		return fmt.Errorf("zktest: expire session: short connect response")
	}
	if sid := int64(binary.BigEndian.Uint64(resp[8:])); sid == 0 {
		return fmt.Errorf("zktest: expire session %#x: already expired", sessionID)
	}
	// closeSession: RequestHeader{xid int32, type int32 = -11}.
	b = b[:0]
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, uint32(0xFFFFFFF5)) // -11
	if _, err := c.Write(b); err != nil {
		return fmt.Errorf("zktest: expire session: %w", err)
	}
	// ReplyHeader: xid int32, zxid int64, err int32.
	resp, err = readFrame(c)
	if err != nil {
		return fmt.Errorf("zktest: expire session: close response: %w", err)
	}
	if len(resp) >= 16 {
		if code := int32(binary.BigEndian.Uint32(resp[12:])); code != 0 {
			return fmt.Errorf("zktest: expire session: error code %d", code)
		}
	}
	return nil
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// superDigest is ZooKeeper's DigestAuthenticationProvider.generateDigest
// of "user:password": "user:" + base64(SHA-1("user:password")).
func superDigest(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	sum := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("zktest: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
