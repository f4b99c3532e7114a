// Package chaos runs a three-broker Sluice cluster whose brokers,
// ZooKeeper and client each live in a network namespace of their own, cuts
// the links between them with nftables, stops and kills brokers, and checks
// that nothing acknowledged at acks=all is lost.
//
// The network (this file): one namespace per node ("chaos<pid>-<run>-b1",
// ...-zk, ...-cl) plus a switch namespace (...-sw) holding a Linux bridge.
// Each node has one veth, eth0, with an address in 10.77.0.0/24; its peer
// is a port of the bridge. Nothing is added to the test's own namespace:
// deleting the namespaces deletes every link, the bridge and the rules.
// Each node namespace has an nftables table "chaos" whose set "blocked"
// holds the addresses it may not exchange packets with (dropped in both
// directions, as a partition does: no RST, no ICMP). Processes run with
// `ip netns exec`; the test's own clients dial from the client namespace
// through nsDialer.
package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice/sluice/internal/testenv"
)

// node is one network namespace with its address.
type node struct {
	name string // short name: b1, b2, b3, zk, cl
	ns   string // namespace name
	ip   string
}

// network is one run's namespaces. Its methods are safe for concurrent use.
type network struct {
	t      *testing.T
	prefix string
	sw     string // the switch namespace
	nodes  map[string]*node

	mu      sync.Mutex
	blocked map[[2]string]bool // unordered pairs of node names cut apart
}

// ipBin and nftBin are the programs the suite drives, made absolute by
// needTools.
var ipBin, nftBin = "ip", "nft"

// lookSbin finds prog in PATH or, for an environment whose PATH lacks
// them (a non-login root shell), in /usr/sbin and /sbin.
func lookSbin(prog string) (string, error) {
	p, err := exec.LookPath(prog)
	if err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if st, serr := os.Stat(dir + "/" + prog); serr == nil && !st.IsDir() {
			return dir + "/" + prog, nil
		}
	}
	return "", err
}

// needTools skips (or, under CI=true, fails) when the suite cannot run: it
// needs root, ip and nft.
func needTools(t *testing.T) {
	t.Helper()
	testenv.NeedsProcess(t, "ip netns, nft, ZooKeeper and sluice processes")
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, prog := range []*string{&ipBin, &nftBin} {
		if p, err := lookSbin(*prog); err == nil {
			*prog = p
		} else {
			missing = append(missing, *prog)
		}
	}
	if _, err := exec.LookPath("java"); err != nil {
		missing = append(missing, "java")
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		missing = append(missing, "zookeeper")
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("chaos suite needs %v (scripts/test-deps.sh installs nftables and zookeeper; CI runs as root)", missing)
	}
	t.Skipf("chaos suite needs %v", missing)
}

// runCmd runs a command and fails the test on error.
func runCmd(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// nsPattern matches the namespaces of any run of this suite; the first
// group is the pid of the test process that made them.
var nsPattern = regexp.MustCompile(`^chaos(\d+)-[0-9a-f]+-[a-z0-9]+$`)

// sweepStale deletes namespaces left by runs whose test process is gone
// (one killed by go test's timeout, whose cleanups never ran). Namespaces
// of live processes, this one's included, are left alone.
func sweepStale(t *testing.T) {
	out, err := exec.Command(ipBin, "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := nsPattern.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		t.Logf("deleting stale namespace %s (its test process %d is gone)", name, pid)
		exec.Command(ipBin, "netns", "del", name).Run()
	}
}

// newNetwork makes the namespaces, the bridge, the veths, the addresses
// and the nftables tables, and deletes them all at t.Cleanup (registered
// first, so it runs after the cleanups that stop the processes).
func newNetwork(t *testing.T, names map[string]string) *network {
	t.Helper()
	sweepStale(t)
	var rnd [3]byte
	if f, err := os.Open("/dev/urandom"); err == nil {
		f.Read(rnd[:])
		f.Close()
	}
	nw := &network{
		t:       t,
		prefix:  fmt.Sprintf("chaos%d-%x-", os.Getpid(), rnd),
		nodes:   map[string]*node{},
		blocked: map[[2]string]bool{},
	}
	nw.sw = nw.prefix + "sw"
	var made []string
	t.Cleanup(func() {
		for _, ns := range made {
			if out, err := exec.Command(ipBin, "netns", "del", ns).CombinedOutput(); err != nil {
				t.Logf("ip netns del %s: %v %s", ns, err, out)
			}
		}
	})
	add := func(ns string) {
		runCmd(t, ipBin, "netns", "add", ns)
		made = append(made, ns)
		runCmd(t, ipBin, "-n", ns, "link", "set", "lo", "up")
	}
	add(nw.sw)
	runCmd(t, ipBin, "-n", nw.sw, "link", "add", "br0", "type", "bridge")
	runCmd(t, ipBin, "-n", nw.sw, "link", "set", "br0", "up")
	for name, ip := range names {
		n := &node{name: name, ns: nw.prefix + name, ip: ip}
		nw.nodes[name] = n
		add(n.ns)
		port := "v" + name
		runCmd(t, ipBin, "-n", nw.sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", n.ns)
		runCmd(t, ipBin, "-n", nw.sw, "link", "set", port, "master", "br0", "up")
		runCmd(t, ipBin, "-n", n.ns, "addr", "add", ip+"/24", "dev", "eth0")
		runCmd(t, ipBin, "-n", n.ns, "link", "set", "eth0", "up")
		nw.nft(n, `
table inet chaos {
	set blocked { type ipv4_addr; }
	chain in { type filter hook input priority 0; policy accept; ip saddr @blocked drop; }
	chain out { type filter hook output priority 0; policy accept; ip daddr @blocked drop; }
}`)
	}
	return nw
}

// nft runs an nftables script in n's namespace.
func (nw *network) nft(n *node, script string) {
	nw.t.Helper()
	cmd := exec.Command(ipBin, "netns", "exec", n.ns, nftBin, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		nw.t.Fatalf("nft in %s: %v\n%s\n%s", n.ns, err, script, out)
	}
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// cut drops every packet between a and each of others, both ways.
func (nw *network) cut(a string, others ...string) {
	nw.t.Helper()
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, b := range others {
		if a == b || nw.blocked[pair(a, b)] {
			continue
		}
		nw.blocked[pair(a, b)] = true
		nw.nft(nw.nodes[a], fmt.Sprintf("add element inet chaos blocked { %s }", nw.nodes[b].ip))
		nw.nft(nw.nodes[b], fmt.Sprintf("add element inet chaos blocked { %s }", nw.nodes[a].ip))
	}
}

// isolate cuts a from every other node.
func (nw *network) isolate(a string) {
	nw.t.Helper()
	var all []string
	for name := range nw.nodes {
		all = append(all, name)
	}
	nw.cut(a, all...)
}

// heal removes every cut.
func (nw *network) heal() {
	nw.t.Helper()
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, n := range nw.nodes {
		nw.nft(n, "flush set inet chaos blocked")
	}
	clear(nw.blocked)
}

// cuts describes the current cuts, for logs.
func (nw *network) cuts() string {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	var out []string
	for p := range nw.blocked {
		out = append(out, p[0]+"|"+p[1])
	}
	return strings.Join(out, " ")
}

// nsDialer dials from inside a network namespace: each dial runs on a
// goroutine locked to its OS thread, which joins the namespace, creates the
// socket and joins the test's own namespace again before it is unlocked
// (if that fails the goroutine exits locked and the thread is discarded).
// A socket stays in the namespace it was created in, so the connection
// works from any goroutine. The thread is given back rather than discarded
// because a thread's exit sends Pdeathsig to the children it forked.
type nsDialer struct {
	path    string        // /var/run/netns/<name>
	timeout time.Duration // bounds each dial (franz-go's DialTimeout does not apply to a custom dialer)
}

// homeNS is the test process's own network namespace (its main thread's).
var homeNS = sync.OnceValues(func() (*os.File, error) { return os.Open("/proc/self/ns/net") })

func (d nsDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	home, err := homeNS()
	if err != nil {
		return nil, err
	}
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(d.path)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("setns %s: %w", d.path, err)}
			return
		}
		nd := net.Dialer{Timeout: d.timeout}
		c, err := nd.DialContext(ctx, network, addr)
		if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// dialer returns a dialer in node name's namespace.
func (nw *network) dialer(name string) nsDialer {
	return nsDialer{path: "/var/run/netns/" + nw.nodes[name].ns, timeout: 2 * time.Second}
}
