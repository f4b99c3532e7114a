package broker

// Cluster mode: zookeeper.connect is set. The broker registers with
// ZooKeeper once its listener is bound (so the advertised port is known),
// takes part in the controller election, and serves the partitions the
// controller assigns it (server.Options.Cluster). On Close it first asks the
// controller to move its leadership away (controlled.shutdown.enable), then
// stops serving, and only then leaves the cluster.

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/kconn"
)

// controlledShutdownTimeout bounds the controlled shutdown at Close.
const controlledShutdownTimeout = 30 * time.Second

// startNode joins the cluster as cfg.BrokerID, advertised at host:port.
func startNode(cfg config.Config, host string, port int32, endpoints []cluster.Endpoint, sec kconn.Security, clusterID string, log *slog.Logger) (*cluster.Node, error) {
	return cluster.Start(cluster.Options{
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

// closeNode leaves the cluster.
func (b *Broker) closeNode() {
	if b.node != nil {
		b.node.Close()
	}
}
