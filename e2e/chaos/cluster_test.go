package chaos

// The processes: Debian's ZooKeeper (the jar internal/zktest uses) in the
// "zk" namespace and `sluice serve` brokers 1-3 in "b1".."b3", each started
// with `ip netns exec` and stopped only by its pid.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/testenv"
	"github.com/sluice/sluice/internal/zktest"
)

const (
	zkIP     = "10.77.0.2"
	clientIP = "10.77.0.100"
	zkPort   = 2181
	kPort    = 9092
	// sessionTimeout is zookeeper.session.timeout.ms and
	// replica.lag.time.max.ms of every broker: how long a broker cut off
	// from ZooKeeper keeps its registration, and a follower that stopped
	// fetching stays in the ISR. Kafka's defaults are 18 s and 30 s; the
	// suite uses shorter ones to stay within its time budget, and the
	// costs it reports scale with them.
	sessionTimeout = 6 * time.Second
)

func brokerIP(id int32) string { return fmt.Sprintf("10.77.0.%d", 10+id) }

// TestMain removes the binary built for this run.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinary()
	os.Exit(code)
}

// sluiceBinary builds cmd/sluice once per test run (testenv.SluiceBinary).
func sluiceBinary(t *testing.T) string { return testenv.SluiceBinary(t) }

// proc is one process started in a namespace.
type proc struct {
	name string
	ns   string
	args []string
	log  string // the file its stdout and stderr go to

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

// start runs the process (`ip netns exec <ns> args...`, which execs, so
// the pid is the program's own). It dies with the test process
// (Pdeathsig).
func (p *proc) start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "=== start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(ipBin, append([]string{"netns", "exec", p.ns}, p.args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done, p.paused = cmd, done, false
	p.mu.Unlock()
}

// running reports whether the process is started and has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process (by its pid).
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s not running", p.name)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	return p.cmd.Process.Signal(sig)
}

// kill SIGKILLs the process and waits for it.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.paused = nil, false
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop sends SIGTERM (SIGCONT first if paused) and waits up to 20 s, then
// SIGKILLs.
func (p *proc) stop() {
	p.mu.Lock()
	cmd, done, paused := p.cmd, p.done, p.paused
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	if paused {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		p.mu.Lock()
		p.cmd = nil
		p.mu.Unlock()
	case <-time.After(20 * time.Second):
		p.kill()
	}
}

// logTail returns the last n lines of the process's log.
func (p *proc) logTail(n int) string {
	f, err := os.Open(p.log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// cluster is ZooKeeper and brokers 1-3 in their namespaces.
type cluster struct {
	t       *testing.T
	nw      *network
	dir     string
	zk      *proc
	brokers map[int32]*proc
}

// startCluster makes the network and starts ZooKeeper and three brokers.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	bin := sluiceBinary(t)
	nw := newNetwork(t, map[string]string{
		"zk": zkIP, "cl": clientIP, "b1": brokerIP(1), "b2": brokerIP(2), "b3": brokerIP(3),
	})
	dir := t.TempDir()
	if keep := os.Getenv("SLUICE_CHAOS_KEEP"); keep != "" { // keep the logs and data for a look afterwards
		dir = filepath.Join(keep, time.Now().Format("20060102-150405"))
		t.Logf("logs and data in %s (SLUICE_CHAOS_KEEP)", dir)
	}
	c := &cluster{t: t, nw: nw, dir: dir, brokers: map[int32]*proc{}}
	t.Cleanup(c.stopAll)
	c.startZooKeeper()
	for id := int32(1); id <= 3; id++ {
		dir := filepath.Join(c.dir, "broker-"+strconv.Itoa(int(id)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		args := []string{bin, "serve"}
		for _, s := range []string{
			fmt.Sprintf("broker.id=%d", id),
			fmt.Sprintf("listeners=PLAINTEXT://%s:%d", brokerIP(id), kPort),
			"log.dirs=" + dir,
			"http.listeners=",
			fmt.Sprintf("zookeeper.connect=%s:%d/sluice", zkIP, zkPort),
			fmt.Sprintf("zookeeper.session.timeout.ms=%d", sessionTimeout.Milliseconds()),
			fmt.Sprintf("replica.lag.time.max.ms=%d", sessionTimeout.Milliseconds()),
			"min.insync.replicas=2",
			"default.replication.factor=3",
			"auto.create.topics.enable=false",
			"group.initial.rebalance.delay.ms=0",
		} {
			args = append(args, "--set", s)
		}
		c.brokers[id] = &proc{name: fmt.Sprintf("broker %d", id), ns: nw.nodes[nodeOf(id)].ns, args: args,
			log: filepath.Join(c.dir, fmt.Sprintf("broker-%d.log", id))}
		c.startBroker(id)
	}
	c.waitHealthy(60 * time.Second)
	return c
}

func nodeOf(id int32) string { return "b" + strconv.Itoa(int(id)) }

func (c *cluster) startZooKeeper() {
	t := c.t
	t.Helper()
	dir := filepath.Join(c.dir, "zk")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	// tickTime 100 ms: sessions expire within 100 ms of their timeout.
	cfg := fmt.Sprintf("tickTime=100\nminSessionTimeout=200\nmaxSessionTimeout=60000\ndataDir=%s\nclientPort=%d\nclientPortAddress=%s\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n",
		filepath.Join(dir, "data"), zkPort, zkIP)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c.zk = &proc{name: "zookeeper", ns: c.nw.nodes["zk"].ns, log: filepath.Join(dir, "zookeeper.log"),
		args: []string{"java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Dzookeeper.admin.enableServer=false", "-Dzookeeper.root.logger=INFO,CONSOLE",
			"-cp", zktest.Classpath, zktest.MainClass, filepath.Join(dir, "zoo.cfg")}}
	c.zk.start(t)
	d := c.nw.dialer("cl")
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("%s:%d", zkIP, zkPort))
		cancel()
		if err == nil {
			conn.SetDeadline(time.Now().Add(2 * time.Second))
			conn.Write([]byte("ruok"))
			b, _ := io.ReadAll(conn)
			conn.Close()
			if string(b) == "imok" {
				return
			}
		}
		if !c.zk.running() || time.Now().After(deadline) {
			t.Fatalf("zookeeper did not answer ruok on %s:%d: %v\n%s", zkIP, zkPort, err, c.zk.logTail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startBroker starts broker id and waits until it has logged that it
// started (after a crash that can take a session timeout: it waits for its
// old registration to expire) and accepts connections from the client
// namespace.
func (c *cluster) startBroker(id int32) {
	t := c.t
	t.Helper()
	p := c.brokers[id]
	off := int64(0)
	if st, err := os.Stat(p.log); err == nil {
		off = st.Size()
	}
	p.start(t)
	deadline := time.Now().Add(90 * time.Second)
	d := c.nw.dialer("cl")
	for {
		if b, err := os.ReadFile(p.log); err == nil && int64(len(b)) > off && strings.Contains(string(b[off:]), "broker started") {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("%s:%d", brokerIP(id), kPort))
			cancel()
			if err == nil {
				conn.Close()
				return
			}
		}
		if !p.running() {
			t.Fatalf("broker %d exited during start\n%s", id, p.logTail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker %d did not start within 90s\n%s", id, p.logTail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopAll stops the brokers, then ZooKeeper.
func (c *cluster) stopAll() {
	for _, p := range c.brokers {
		p.kill()
	}
	if c.zk != nil {
		c.zk.stop()
	}
}

// seeds are the brokers' client addresses.
func (c *cluster) seeds() []string {
	var out []string
	for id := int32(1); id <= 3; id++ {
		out = append(out, fmt.Sprintf("%s:%d", brokerIP(id), kPort))
	}
	return out
}

// client makes a franz-go client that dials from the client namespace.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.seeds()...),
		kgo.Dialer(c.nw.dialer("cl").DialContext),
	}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// metadataFrom asks broker id alone for the metadata of topics (all when
// none).
func (c *cluster) metadataFrom(id int32, topics ...string) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("%s:%d", brokerIP(id), kPort)),
		kgo.Dialer(c.nw.dialer("cl").DialContext), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return req.RequestWith(ctx, cl)
}

// waitHealthy waits until every broker runs and answers Metadata listing
// three brokers and one controller that all agree on.
func (c *cluster) waitHealthy(within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, why := c.healthy()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("cluster not healthy within %v: %s\n%s", within, why, c.logTails())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *cluster) healthy() (bool, string) {
	ctl := int32(-2)
	for id := int32(1); id <= 3; id++ {
		if !c.brokers[id].running() {
			return false, fmt.Sprintf("broker %d not running", id)
		}
		m, err := c.metadataFrom(id)
		if err != nil {
			return false, fmt.Sprintf("broker %d: %v", id, err)
		}
		if len(m.Brokers) != 3 || m.ControllerID < 0 {
			return false, fmt.Sprintf("broker %d sees %d brokers, controller %d", id, len(m.Brokers), m.ControllerID)
		}
		if ctl != -2 && m.ControllerID != ctl {
			return false, fmt.Sprintf("brokers disagree on the controller (%d, %d)", ctl, m.ControllerID)
		}
		ctl = m.ControllerID
	}
	return true, ""
}

// controller is the controller as broker from sees it.
func (c *cluster) controller() int32 {
	for id := int32(1); id <= 3; id++ {
		if m, err := c.metadataFrom(id); err == nil && m.ControllerID >= 0 {
			return m.ControllerID
		}
	}
	c.t.Fatal("no broker names a controller")
	return -1
}

// leaders returns each partition's leader of topic as the controller's
// metadata says.
func (c *cluster) leaders(topic string) map[int32]int32 {
	c.t.Helper()
	m, err := c.metadataFrom(c.controller(), topic)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[int32]int32{}
	for _, tp := range m.Topics {
		for _, p := range tp.Partitions {
			out[p.Partition] = p.Leader
		}
	}
	return out
}

// createTopic creates topic (3 partitions, replication factor 3,
// min.insync.replicas 2) and waits until every partition has a leader and
// a full ISR in every broker's metadata.
func (c *cluster) createTopic(topic string) {
	t := c.t
	t.Helper()
	cl := c.client()
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 3, 3
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create %s: error code %d", topic, code)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready := true
		for id := int32(1); id <= 3 && ready; id++ {
			m, err := c.metadataFrom(id, topic)
			if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 3 {
				ready = false
				break
			}
			for _, p := range m.Topics[0].Partitions {
				ready = ready && p.ErrorCode == 0 && p.Leader >= 0 && len(p.ISR) == 3
			}
		}
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not online with full ISRs within 60s\n%s", topic, c.logTails())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logTails is the end of every process's log, for failures.
func (c *cluster) logTails() string {
	var b strings.Builder
	for id := int32(1); id <= 3; id++ {
		fmt.Fprintf(&b, "--- broker %d (%s)\n%s\n", id, c.brokers[id].log, c.brokers[id].logTail(25))
	}
	fmt.Fprintf(&b, "--- zookeeper\n%s\n", c.zk.logTail(10))
	return b.String()
}
