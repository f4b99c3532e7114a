package broker

// Cluster mode: zookeeper.connect is set. The broker registers with
// ZooKeeper once its listener is bound (so the advertised port is known),
// takes part in the controller election, and serves the partitions the
// controller assigns it (server.Options.Cluster). On Close it first asks the
// controller to move its leadership away (controlled.shutdown.enable), then
// stops serving, and only then leaves the cluster.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/kconn"
)

// controlledShutdownTimeout bounds the controlled shutdown at Close.
const controlledShutdownTimeout = 30 * time.Second

// joinCluster starts the node: it registers this broker with its
// listeners' advertised endpoints (host:port for the client listener) and
// takes the cluster's id from /cluster/id, refusing a log dir that belongs
// to another cluster (localCID). Its entry closes after the server and the
// security watches, which use it, and before the background goroutines are
// waited for.
func (b *Broker) joinCluster(host string, port int32, localCID string) error {
	cfg := &b.cfg
	var eps []cluster.Endpoint
	for i, name := range b.lnNames {
		h, p, err := b.advertised(i)
		if err != nil {
			return err
		}
		eps = append(eps, cluster.Endpoint{Listener: name, Host: h, Port: p, Protocol: cfg.ListenerProtocol(name)})
	}
	// The controller's requests and ControlledShutdown travel on the
	// control-plane listener, else on the inter-broker one.
	ctlSec, err := b.connSecurity(cmp.Or(cfg.ControlPlaneListenerName, cfg.InterBrokerListenerName))
	if err != nil {
		return err
	}
	node, err := startNode(*cfg, host, port, eps, ctlSec, localCID, b.log)
	if err != nil {
		if errors.Is(err, cluster.ErrInconsistentClusterID) {
			// Kafka refuses too (InconsistentClusterIdException). Data
			// dirs written in cluster mode before /cluster/id was kept
			// hold a per-broker id and land here once.
			return fmt.Errorf("broker: %w (log dir %s belongs to that other cluster: empty it to join this one, or point zookeeper.connect at its own ZooKeeper)", err, cfg.LogDirs[0])
		}
		return fmt.Errorf("broker: %w", err)
	}
	b.node = node
	return b.stack.Push("cluster node", node.Close)
}

// startNode joins the cluster as cfg.BrokerID, advertised at host:port.
func startNode(cfg config.Config, host string, port int32, endpoints []cluster.Endpoint, sec kconn.Security, clusterID string, log *slog.Logger) (*cluster.Node, error) {
	zsec, err := cluster.ZkSecurityFrom(&cfg)
	if err != nil {
		return nil, err
	}
	return cluster.Start(cluster.Options{
		ZkSecurity:                zsec,
		BrokerID:                  cfg.BrokerID,
		ClusterID:                 clusterID,
		Host:                      host,
		Port:                      port,
		Endpoints:                 endpoints,
		ControlPlaneListener:      cfg.ControlPlaneListenerName,
		InterBrokerListener:       cfg.InterBrokerListenerName,
		ConnSecurity:              sec,
		Rack:                      cfg.RackID,
		ZkConnect:                 cfg.ZooKeeperConnect,
		SessionTimeout:            cfg.ZooKeeperSessionTimeout,
		UncleanLeaderElection:     cfg.UncleanLeaderElection,
		AutoLeaderRebalance:       cfg.AutoLeaderRebalance,
		LeaderImbalanceCheck:      cfg.LeaderImbalanceCheck,
		LeaderImbalancePercentage: cfg.LeaderImbalancePercentage,
		Logger:                    log,
	})
}

// controlledShutdown moves this broker's leadership to other in-sync
// replicas before it stops; failures are logged and the shutdown goes on.
func (b *Broker) controlledShutdown() {
	if b.node == nil || !b.cfg.ControlledShutdownEnable {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), controlledShutdownTimeout)
	defer cancel()
	start := time.Now()
	remaining, err := b.node.ControlledShutdown(ctx)
	if err != nil {
		b.log.Warn("broker: controlled shutdown incomplete; stopping anyway", "remaining", len(remaining), "err", err)
		return
	}
	b.log.Info("broker: controlled shutdown done", "took", time.Since(start))
}
