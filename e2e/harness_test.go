// Package e2e runs the sluice binary as a real process and talks to it with
// real, non-Go clients (kcat, built on librdkafka), to prove that clients in
// the wild work against it unchanged and that a SIGKILLed broker loses
// nothing it acknowledged.
package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testenv"
)

// Tests that spend most of their time waiting (on ZooKeeper sessions,
// consumer-group rebalances, tiering, Burrow's polls, a stopped object
// store) call t.Parallel: they run together once the serial ones are
// done, which halves the package's time on two cores. Tests that
// measure memory (RSS bounds), throughput (quotas, the console's chart)
// or watch a short window (readiness during recovery) stay serial, as
// does any test short enough that overlapping it gains nothing. Ports
// and directories are every test's own (freePort, t.TempDir), and only
// pids a test started are signalled.

// TestMain removes the binary built for this run.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinary()
	os.Exit(code)
}

// sluiceBinary builds cmd/sluice once per test run (testenv.SluiceBinary).
func sluiceBinary(t *testing.T) string { return testenv.SluiceBinary(t) }

// need finds a program the test drives, failing under CI=true (make test
// installs it there) and skipping elsewhere.
func need(t *testing.T, prog string) string {
	t.Helper()
	testenv.NeedsProcess(t, prog)
	p, err := exec.LookPath(prog)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (make test installs it)", prog)
		}
		t.Skipf("%s is not installed; run make test-deps", prog)
	}
	return p
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// brokerProc is a `sluice serve` process started by a test.
type brokerProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	// controlAddr is the control.plane.listener.name listener, "" when
	// none.
	controlAddr string
	// httpAddr is the http.listeners address (host:port, http), "" when
	// the test set http.listeners itself.
	httpAddr string
	dir      string
	args     []string
	logs     *os.File
	done     chan error
}

// startBroker starts `sluice serve` on a free loopback port with its data in
// dir, and waits until it accepts connections. The port was free a moment
// before the broker binds it, so another process may take it in between:
// on "address already in use" it tries again with a new port (3 attempts
// in all), as internal/zktest does.
func startBroker(t *testing.T, dir string, sets ...string) *brokerProc {
	t.Helper()
	b := &brokerProc{t: t, dir: dir}
	t.Cleanup(func() { b.kill() })
	// With control.plane.listener.name set, the broker gets a second
	// listener of that name on a port of its own (b.controlAddr).
	control := ""
	for _, s := range sets {
		if v, ok := strings.CutPrefix(s, "control.plane.listener.name="); ok {
			control = v
		}
	}
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		listeners := fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", port)
		// A listeners= set with {port} names the first listener's
		// protocol: the port is filled in here.
		for _, set := range sets {
			if strings.HasPrefix(set, "listeners=") && strings.Contains(set, "{port}") {
				listeners = strings.ReplaceAll(set, "{port}", strconv.Itoa(port))
				if strings.Contains(listeners, "{port2}") { // a second listener
					listeners = strings.ReplaceAll(listeners, "{port2}", strconv.Itoa(freePort(t)))
				}
			}
		}
		if control != "" {
			cport := freePort(t)
			b.controlAddr = fmt.Sprintf("127.0.0.1:%d", cport)
			listeners += fmt.Sprintf(",%s://%s", control, b.controlAddr)
		}
		args := []string{"serve",
			"--set", listeners,
			"--set", "log.dirs=" + dir,
		}
		b.httpAddr = ""
		if !slices.ContainsFunc(sets, func(s string) bool { return strings.HasPrefix(s, "http.listeners=") }) {
			b.httpAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
			args = append(args, "--set", "http.listeners=http://"+b.httpAddr)
		}
		if control != "" {
			args = append(args, "--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,"+control+":PLAINTEXT")
		}
		for _, s := range sets {
			if strings.HasPrefix(s, "listeners=") && strings.Contains(s, "{port}") {
				continue
			}
			args = append(args, "--set", s)
		}
		b.addr, b.args = fmt.Sprintf("127.0.0.1:%d", port), args
		err := b.tryStart()
		if err == nil {
			return b
		}
		if attempt >= 3 || !errors.Is(err, errAddrInUse) {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; retrying on another port", attempt, err)
	}
}

// errAddrInUse marks a broker that exited during start because its port
// was taken.
var errAddrInUse = errors.New("address already in use")

// start starts the broker process on b.addr and waits until it listens.
// The address is fixed (a restarted broker keeps it), so "address already
// in use" is retried on the same port after a pause, 3 attempts in all.
func (b *brokerProc) start() {
	b.t.Helper()
	for attempt := 1; ; attempt++ {
		err := b.tryStart()
		if err == nil {
			return
		}
		if attempt >= 3 || !errors.Is(err, errAddrInUse) {
			b.t.Fatal(err)
		}
		b.t.Logf("attempt %d: %v; retrying", attempt, err)
		time.Sleep(time.Second)
	}
}

// tryStart starts the broker process once and waits until it listens on
// b.addr and has logged that it started (a connection alone could reach
// another process that took the port). An error wraps errAddrInUse when
// the process exited because the port was taken.
func (b *brokerProc) tryStart() error {
	t := b.t
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(t.TempDir(), "broker.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	b.logs = logf
	b.cmd = exec.Command(sluiceBinary(t), b.args...)
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	if err := b.cmd.Start(); err != nil {
		b.cmd = nil
		return err
	}
	b.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(b.cmd, b.done)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if strings.Contains(b.logText(), "broker started") {
			c, err := net.DialTimeout("tcp", b.addr, time.Second)
			if err == nil {
				c.Close()
				return nil
			}
		}
		select {
		case err := <-b.done:
			b.cmd = nil
			logs := b.logText()
			if strings.Contains(logs, "address already in use") {
				return fmt.Errorf("broker exited during start on %s: %w: %v\n%s", b.addr, errAddrInUse, err, logs)
			}
			return fmt.Errorf("broker exited during start: %v\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("broker did not listen on %s within 30s\n%s", b.addr, b.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *brokerProc) logText() string {
	data, _ := os.ReadFile(b.logs.Name())
	return string(data)
}

// kill SIGKILLs the broker (only the process this test started) and waits.
func (b *brokerProc) kill() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	select {
	case <-b.done:
	default:
		_ = b.cmd.Process.Signal(syscall.SIGKILL)
		<-b.done
	}
	b.cmd = nil
}

// stop sends SIGTERM and waits for a clean exit.
func (b *brokerProc) stop() error {
	if b.cmd == nil {
		return nil
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-b.done:
		b.cmd = nil
		return err
	case <-time.After(30 * time.Second):
		b.kill()
		return fmt.Errorf("broker did not stop within 30s of SIGTERM")
	}
}

// restart starts the broker again on the same address and data.
func (b *brokerProc) restart() { b.start() }

// run runs a command with a deadline, stdin from input, and returns stdout
// and stderr.
func run(t *testing.T, timeout time.Duration, input string, name string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if input != "" {
		cmd.Stdin = strings.NewReader(input)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// lines splits output into non-empty lines.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			out = append(out, l)
		}
	}
	return out
}
