// Package cluster is Sluice's cluster mode: Kafka's ZooKeeper mode, with
// Kafka's znode layout and JSON (see format.go), so Kafka's own tools can
// read a Sluice cluster's state.
//
// Every broker runs a Node: it registers the broker under /brokers/ids,
// takes part in the controller election, and offers the admin operations
// (CreateTopic, DeleteTopic, ...), which only write znodes. The broker that
// wins the election runs the controller (controller.go): one event loop
// that reacts to ZooKeeper watches, elects partition leaders, writes
// partition states fenced by its controller epoch, and tells brokers with
// LeaderAndIsr, UpdateMetadata and StopReplica requests. Brokers learn the
// cluster only from those requests (MetadataCache).
//
// A ZooKeeper session expiry never stops a Node: it gets a new session,
// registers again, re-runs the election and, if it wins, re-reads
// everything.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/kconn"
)

// SendFunc sends one request to a broker and returns its response.
type SendFunc func(ctx context.Context, brokerID int32, addr string, req kmsg.Request) (kmsg.Response, error)

// Options configures a Node.
type Options struct {
	BrokerID int32
	Host     string // advertised host
	Port     int32  // advertised port
	Rack     string // "" for none
	// ControlPlaneListener names the control.plane.listener.name listener
	// (KIP-291; the same on every broker, registered among Endpoints) to
	// which the controller sends its requests and brokers their
	// ControlledShutdown. "": the client listener.
	ControlPlaneListener string
	// Endpoints, when set, are every listener of this broker (client,
	// inter-broker, control plane), all registered (Kafka's endpoints and
	// listener_security_protocol_map) and sent to every broker in
	// UpdateMetadata, so each answers Metadata with the addresses of the
	// listener its client came in on.
	Endpoints []Endpoint
	// InterBrokerListener is inter.broker.listener.name: the listener
	// followers fetch from and, without ControlPlaneListener, the one the
	// controller's requests go to. "": the registration's host and port.
	InterBrokerListener string
	// ConnSecurity secures the connections the node opens to other
	// brokers (the controller's requests, ControlledShutdown): TLS and
	// SASL for the inter-broker or control-plane listener.
	ConnSecurity kconn.Security
	// ClusterID is the cluster id the broker's data dir already belongs to,
	// or "" for a new broker. The cluster's id lives in /cluster/id: the
	// first broker creates it (with this id, or a new one); a broker whose
	// ClusterID differs from it is refused with ErrInconsistentClusterID.
	ClusterID string
	// ZkConnect is zookeeper.connect: "host:port,host:port/chroot". The
	// chroot is created when missing.
	ZkConnect string
	// ZkSecurity authenticates the broker to ZooKeeper (digest, TLS) and
	// chooses the ACLs of the znodes it creates (zookeeper.set.acl).
	ZkSecurity ZkSecurity
	// SessionTimeout is the ZooKeeper session timeout (default 18 s, Kafka's
	// zookeeper.session.timeout.ms).
	SessionTimeout time.Duration
	// UncleanLeaderElection is unclean.leader.election.enable: elect an
	// out-of-sync replica when no in-sync one is live.
	UncleanLeaderElection bool
	// RequestTimeout bounds each controller-to-broker request (default 30 s).
	RequestTimeout time.Duration
	// AutoLeaderRebalance (auto.leader.rebalance.enable) makes the
	// controller move leadership back to each partition's preferred replica
	// (the first of its assignment) when it is alive and in sync, checking
	// every LeaderImbalanceCheck (default 300 s) and acting for a broker
	// when more than LeaderImbalancePercentage percent of the partitions
	// it prefers are led by another broker (0: any; the broker passes
	// leader.imbalance.per.broker.percentage, default 10): after a broker
	// restarts, leadership spreads again instead of staying on the
	// brokers that took over.
	AutoLeaderRebalance       bool
	LeaderImbalanceCheck      time.Duration
	LeaderImbalancePercentage int
	// ConfigChangeExpiration is how long a /config/changes notification is
	// kept once handled (default 15 minutes, Kafka's changeExpirationMs):
	// every broker that has handled a notification older than this deletes
	// it, so the directory does not grow forever.
	ConfigChangeExpiration time.Duration
	Logger                 *slog.Logger
	// Send carries the controller's requests and ControlledShutdown. The
	// default opens one kconn.Conn per broker address.
	Send SendFunc
	// OnSessionExpired is called (from the node's goroutine; do not block)
	// when the ZooKeeper session expired: the broker's registration is gone
	// until OnSessionReestablished.
	OnSessionExpired func()
	// OnSessionReestablished is called after a new session registered the
	// broker again, with its new broker epoch.
	OnSessionReestablished func(brokerEpoch int64)
}

// Node is one broker's membership in the cluster. Its methods are safe for
// concurrent use.
type Node struct {
	opts      Options
	log       *slog.Logger
	zk        *zkClient
	cache     *MetadataCache
	clusterID string // immutable after Start
	// unclean is unclean.leader.election.enable as the controller uses
	// it: Options.UncleanLeaderElection until a dynamic broker config
	// changes it (SetUncleanLeaderElection).
	unclean atomic.Bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	qmu   sync.Mutex
	queue []event
	qsig  chan struct{}

	expired     atomic.Bool
	brokerEpoch atomic.Int64
	// registered is set by a successful register and cleared when the
	// session expires (the ephemeral /brokers/ids/<id> is gone with it),
	// until register succeeds again on the new session.
	registered   atomic.Bool
	isController atomic.Bool
	// controllerID and controllerEpoch are the controller as last seen in
	// ZooKeeper; changed together under ctlMu (noteController).
	ctlMu           sync.Mutex
	controllerID    atomic.Int32
	controllerEpoch atomic.Int32
	// verify backs the checks of inter-broker requests (verify.go).
	verify verifier

	// ctl is the controller state while this node is the controller.
	// Owned by the event loop goroutine.
	ctl  *controller
	term uint64 // controller terms started by this node; owned by the loop

	connsMu sync.Mutex
	conns   map[string]*kconn.Conn

	// ctlStats is the controller's counts for metrics (stats.go).
	ctlStats controllerStats
}

// Start connects to ZooKeeper, creates the chroot and Kafka's persistent
// paths when missing, registers the broker (waiting for the registration
// of a crashed previous process to expire; ErrBrokerIDInUse if a live
// broker holds the id) and starts the controller election.
func Start(opts Options) (*Node, error) {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 18 * time.Second
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.LeaderImbalanceCheck <= 0 {
		opts.LeaderImbalanceCheck = 300 * time.Second
	}
	if opts.ConfigChangeExpiration <= 0 {
		opts.ConfigChangeExpiration = 15 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	servers, chroot, err := parseConnect(opts.ZkConnect)
	if err != nil {
		return nil, err
	}
	n := &Node{
		opts:  opts,
		log:   opts.Logger.With("broker", opts.BrokerID),
		cache: NewMetadataCache(),
		qsig:  make(chan struct{}, 1),
		conns: map[string]*kconn.Conn{},
	}
	n.controllerID.Store(-1)
	n.unclean.Store(opts.UncleanLeaderElection)
	if n.opts.Send == nil {
		n.opts.Send = n.kconnSend
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())

	z, err := connectZK(servers, opts.SessionTimeout, opts.ZkSecurity, n.log, n.onZkEvent)
	if err != nil {
		n.cancel()
		return nil, err
	}
	n.zk = z
	fail := func(err error) (*Node, error) {
		n.cancel()
		z.conn.Close()
		return nil, err
	}
	if chroot != "" {
		if err := z.ensureAbs(chroot); err != nil {
			return fail(fmt.Errorf("cluster: chroot %s: %w", chroot, err))
		}
		z.chroot = chroot
	}
	for _, p := range persistentPaths {
		if err := n.zk.ensurePath(p); err != nil {
			return fail(fmt.Errorf("cluster: create %s: %w", p, err))
		}
	}
	if n.clusterID, err = n.zk.ensureClusterID(opts.ClusterID); err != nil {
		return fail(err)
	}
	if err := n.register(); err != nil {
		return fail(err)
	}
	n.wg.Add(1)
	go n.loop()
	n.post(event{kind: evControllerChange})
	return n, nil
}

// Close resigns as controller, stops the node and closes the ZooKeeper
// session, which removes the broker's registration (other brokers see it
// fail). It does not move leadership first: call ControlledShutdown for that.
func (n *Node) Close() error {
	n.cancel()
	n.wg.Wait()
	n.zk.conn.Close()
	n.connsMu.Lock()
	for _, c := range n.conns {
		c.Close()
	}
	n.conns = nil
	n.connsMu.Unlock()
	return nil
}

// ClusterID is the cluster's id, from /cluster/id.
func (n *Node) ClusterID() string { return n.clusterID }

// BrokerID is this broker's id.
func (n *Node) BrokerID() int32 { return n.opts.BrokerID }

// BrokerEpoch is the creation zxid of this broker's current registration.
func (n *Node) BrokerEpoch() int64 { return n.brokerEpoch.Load() }

// Registered reports whether this broker's /brokers/ids/<id> is live: false
// from the session's expiry until the new session registers again
// (BrokerEpoch keeps the last registration's epoch meanwhile).
func (n *Node) Registered() bool { return n.registered.Load() }

// IsController reports whether this node is the active controller.
func (n *Node) IsController() bool { return n.isController.Load() }

// ControllerID is the id of the controller as this node last saw
// /controller, or -1.
func (n *Node) ControllerID() int32 { return n.controllerID.Load() }

// Metadata is the broker's metadata cache. The broker applies every
// UpdateMetadata request it receives to it (Metadata().Apply).
func (n *Node) Metadata() *MetadataCache { return n.cache }

// onZkEvent runs on go-zookeeper's goroutine for every session event.
func (n *Node) onZkEvent(e zk.Event) {
	if e.Type != zk.EventSession {
		return
	}
	switch e.State {
	case zk.StateExpired:
		n.registered.Store(false)
		if !n.expired.Swap(true) {
			n.log.Warn("cluster: zookeeper session expired")
			if f := n.opts.OnSessionExpired; f != nil {
				f()
			}
		}
	case zk.StateHasSession:
		if n.expired.Swap(false) {
			n.post(event{kind: evSessionRenewed})
		}
	}
}

// register creates /brokers/ids/<id> for the current session. When the
// znode exists and belongs to another session, it waits for that
// registration to go (see awaitOldRegistration) and tries again; it
// returns ErrBrokerIDInUse when the znode outlives that wait.
func (n *Node) register() error {
	id := n.opts.BrokerID
	reg := newBrokerRegistration(n.opts.Host, n.opts.Port, n.opts.Rack)
	if len(n.opts.Endpoints) > 0 {
		reg.Endpoints, reg.ListenerSecurityProtocolMap = nil, map[string]string{}
		for _, ep := range n.opts.Endpoints {
			reg.Endpoints = append(reg.Endpoints, ep.Listener+"://"+net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))))
			reg.ListenerSecurityProtocolMap[ep.Listener] = cmp.Or(ep.Protocol, "PLAINTEXT")
		}
	}
	data, _ := jsonMarshal(reg)
	deadline := time.Now().Add(registrationWait(n.opts.SessionTimeout))
	for {
		_, err := n.zk.create(brokerPath(id), data, zk.FlagEphemeral)
		if errors.Is(err, zk.ErrNodeExists) {
			done, err := n.awaitOldRegistration(deadline)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
			continue // the old registration is gone: create ours
		}
		if err != nil {
			return fmt.Errorf("cluster: register %s: %w", brokerPath(id), err)
		}
		break
	}
	_, stat, err := n.zk.get(brokerPath(id))
	if err != nil {
		return fmt.Errorf("cluster: register %s: %w", brokerPath(id), err)
	}
	n.brokerEpoch.Store(stat.Czxid)
	n.registered.Store(true)
	n.log.Info("cluster: registered broker", "path", brokerPath(id), "broker_epoch", stat.Czxid)
	return nil
}

// registrationWait is how long register waits for another session's
// /brokers/ids/<id> to go before it decides a live broker holds the id.
//
// A broker restarted after a crash (SIGKILL, power loss) finds the
// registration of its previous process, whose session ZooKeeper keeps until
// the session timeout passes without a heartbeat. Kafka's ZooKeeper mode
// refuses to start then (KafkaZkClient.registerBroker: the znode's
// ephemeral owner is not our session) and relies on a supervisor to retry;
// Sluice waits instead. A znode whose session is not dead is only told
// apart from a dead one by outliving it: so the wait is the session
// timeout (the previous process ran with the same
// zookeeper.session.timeout.ms) plus a margin for ZooKeeper's expiry
// rounding (sessions expire on tickTime boundaries, 2 s by default, and a
// timeout below 2 ticks is raised to 2 ticks) and for its own connection.
func registrationWait(sessionTimeout time.Duration) time.Duration {
	return sessionTimeout + max(sessionTimeout/2, 4*time.Second)
}

// awaitOldRegistration handles a create of /brokers/ids/<id> that found the
// znode. It returns done when the znode is this session's own (a retried
// create whose first answer was lost), false when the znode is gone and the
// create should be tried again, and ErrBrokerIDInUse when the znode is
// another session's and still there at deadline (or is not ephemeral at
// all). It waits on an exists watch, logging whose registration it waits
// for.
func (n *Node) awaitOldRegistration(deadline time.Time) (done bool, err error) {
	id := n.opts.BrokerID
	path := brokerPath(id)
	logged := false
	for {
		ok, stat, ch, err := n.zk.existsW(path)
		if err != nil {
			return false, fmt.Errorf("cluster: register %s: %w", path, err)
		}
		if !ok {
			if logged {
				n.log.Info("cluster: previous registration expired; registering", "path", path)
			}
			return false, nil
		}
		if stat.EphemeralOwner == n.zk.conn.SessionID() {
			_, stat, err := n.zk.get(path)
			if err != nil {
				return false, fmt.Errorf("cluster: register %s: %w", path, err)
			}
			n.brokerEpoch.Store(stat.Czxid)
			n.registered.Store(true)
			return true, nil
		}
		wait := time.Until(deadline)
		if stat.EphemeralOwner == 0 || wait <= 0 {
			b, _, _ := n.zk.get(path)
			return false, fmt.Errorf("%w: broker.id %d at %s is live (session 0x%x, %s); stop it or pick another broker.id",
				ErrBrokerIDInUse, id, path, stat.EphemeralOwner, b)
		}
		if !logged {
			logged = true
			n.log.Warn("cluster: broker id registered by another ZooKeeper session; waiting for it to expire (a restart after a crash) before registering",
				"path", path, "session", fmt.Sprintf("0x%x", stat.EphemeralOwner), "registered_zxid", stat.Czxid, "wait", wait.Round(time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		case <-n.ctx.Done():
			t.Stop()
			return false, ErrClosed
		}
		t.Stop()
	}
}

// onSessionRenewed re-registers and re-elects after a session expiry.
// Runs on the event loop.
func (n *Node) onSessionRenewed() {
	if n.ctl != nil && n.ctl.session != n.zk.conn.SessionID() {
		n.resign("session expired")
	}
	for {
		err := n.register()
		if err == nil {
			break
		}
		n.log.Error("cluster: re-register after session expiry", "err", err)
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	n.log.Info("cluster: new zookeeper session; re-registered", "broker_epoch", n.BrokerEpoch())
	if f := n.opts.OnSessionReestablished; f != nil {
		f(n.BrokerEpoch())
	}
	n.elect()
}

// elect reads /controller (arming a watch) and, when nobody holds it,
// tries to become controller: one multi-op creates the ephemeral
// /controller and bumps /controller_epoch under its version guard, so two
// brokers can never both win one epoch. Runs on the event loop.
func (n *Node) elect() {
	for attempt := 0; ; attempt++ {
		if n.ctx.Err() != nil {
			return
		}
		ok, stat, ch, err := n.zk.existsW(controllerPath)
		if err != nil {
			n.retryLater(event{kind: evControllerChange}, "read /controller", err)
			return
		}
		n.watch(ch, event{kind: evControllerChange})
		if ok {
			data, _, err := n.zk.get(controllerPath)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				n.retryLater(event{kind: evControllerChange}, "read /controller", err)
				return
			}
			id, err := decodeControllerID(data)
			if err != nil {
				n.log.Error("cluster: bad /controller", "err", err)
				return
			}
			// /controller is created in one multi-op with the epoch bump,
			// so the epoch read now is at least this controller's.
			epoch, _, err := n.readControllerEpoch()
			if err != nil {
				n.retryLater(event{kind: evControllerChange}, "read /controller_epoch", err)
				return
			}
			n.noteController(id, epoch)
			if id == n.opts.BrokerID && stat.EphemeralOwner == n.zk.conn.SessionID() {
				if n.ctl == nil {
					// Ours, but we are not acting: we were fenced. Give
					// the seat up and run a fresh election.
					n.log.Warn("cluster: /controller is ours but this controller was fenced; re-electing")
					if err := n.zk.delete(controllerPath, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
						n.retryLater(event{kind: evControllerChange}, "delete /controller", err)
						return
					}
					continue
				}
				return
			}
			n.resign("another broker is controller")
			return
		}
		n.resign("no controller")
		epoch, epochVersion, err := n.readControllerEpoch()
		if err != nil {
			n.retryLater(event{kind: evControllerChange}, "read /controller_epoch", err)
			return
		}
		cz, _ := jsonMarshal(controllerZNode{Version: 1, BrokerID: n.opts.BrokerID, Timestamp: nowMillis()})
		res, err := n.zk.multi(
			&zk.CreateRequest{Path: controllerPath, Data: cz, Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: controllerEpochPath, Data: []byte(strconv.Itoa(int(epoch + 1))), Version: epochVersion},
		)
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) {
			continue // someone else won or is winning; read again
		}
		if err != nil {
			n.retryLater(event{kind: evControllerChange}, "elect", err)
			return
		}
		n.noteController(n.opts.BrokerID, epoch+1)
		n.becomeController(epoch+1, res[1].Stat.Version)
		return
	}
}

func (n *Node) readControllerEpoch() (int32, int32, error) {
	for {
		data, stat, err := n.zk.get(controllerEpochPath)
		if errors.Is(err, zk.ErrNoNode) {
			// Kafka creates it with 0 before the first election.
			if _, err := n.zk.create(controllerEpochPath, []byte("0"), 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return 0, 0, err
			}
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		e, err := parseControllerEpoch(data)
		return e, stat.Version, err
	}
}

// decodeControllerID returns the broker id in /controller. An error wraps
// ErrCorruptZnode; "null" or an object without a brokerid is one, not
// broker 0.
func decodeControllerID(data []byte) (int32, error) {
	var c struct {
		BrokerID *int32 `json:"brokerid"`
	}
	if err := jsonUnmarshal(data, &c); err != nil {
		// Kafka before 0.9 wrote a bare id.
		if id, err2 := strconv.ParseInt(string(data), 10, 32); err2 == nil && id >= 0 {
			return int32(id), nil
		}
		return -1, fmt.Errorf("%w: %s: %v", ErrCorruptZnode, controllerPath, err)
	}
	if c.BrokerID == nil || *c.BrokerID < 0 {
		return -1, fmt.Errorf("%w: %s: %q has no broker id", ErrCorruptZnode, controllerPath, data)
	}
	return *c.BrokerID, nil
}

// watch posts e when the one-shot watch ch fires.
func (n *Node) watch(ch <-chan zk.Event, e event) {
	go func() {
		select {
		case <-ch:
			n.post(e)
		case <-n.ctx.Done():
		}
	}()
}

// retryLater logs err and posts e again after a short pause: a ZooKeeper
// read failed (disconnected), so a watch may not be armed.
func (n *Node) retryLater(e event, what string, err error) {
	if n.ctx.Err() != nil || errors.Is(err, zk.ErrClosing) {
		return
	}
	n.log.Warn("cluster: zookeeper operation failed; retrying", "op", what, "err", err)
	go func() {
		select {
		case <-time.After(500 * time.Millisecond):
			n.post(e)
		case <-n.ctx.Done():
		}
	}()
}

// kconnSend is the default SendFunc: one kconn.Conn per address.
func (n *Node) kconnSend(ctx context.Context, _ int32, addr string, req kmsg.Request) (kmsg.Response, error) {
	n.connsMu.Lock()
	if n.conns == nil {
		n.connsMu.Unlock()
		return nil, ErrClosed
	}
	c := n.conns[addr]
	if c == nil {
		c = kconn.NewSecure(addr, "sluice-broker-"+strconv.Itoa(int(n.opts.BrokerID)), n.opts.RequestTimeout, n.opts.ConnSecurity)
		n.conns[addr] = c
	}
	n.connsMu.Unlock()
	return c.Request(ctx, req)
}

type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug("zookeeper client: " + fmt.Sprintf(format, args...))
}
