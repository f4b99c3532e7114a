package broker

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/tiered"
)

// remoteLogMetadata returns the cluster's topic-based remote log metadata
// manager (tiered/topicmeta.go) when tiered storage is on in cluster
// mode, nil otherwise: a Kafka client of this broker's inter-broker
// listener, as the schema registry's. The remote log manager starts and
// closes it.
func (b *Broker) remoteLogMetadata() (*tiered.TopicMetadata, error) {
	if !b.cfg.RemoteLogStorageSystemEnable || b.cfg.SingleNode() {
		return nil, nil
	}
	idx, sec, mech, err := b.selfSecurity()
	if err != nil {
		return nil, fmt.Errorf("broker: the remote log metadata manager cannot log in to the broker: %w", err)
	}
	host, _, err := b.advertised(idx)
	if err != nil {
		return nil, err
	}
	dialAddr := b.selfDialAddr(idx)
	kopts := []kgo.Opt{kgo.SeedBrokers(dialAddr), kgo.DialTimeout(5 * time.Second), kgo.MetadataMinAge(time.Second),
		kgo.ClientID(fmt.Sprintf("sluice-rlmm-%d", b.cfg.BrokerID))}
	if sec.TLS != nil {
		kopts = append(kopts, kgo.Dialer(tlsDialer(sec.TLS, dialAddr, host)))
	}
	if sec.SASL != nil {
		kopts = append(kopts, kgo.SASL(saslMechanism{mech, sec.SASL}))
	}
	// The view bounds what it holds of partitions the cluster's metadata
	// does not know (tiered/topicmeta_guard.go).
	known := func(id [16]byte, topic string) (int32, bool) {
		md := b.node.Metadata()
		if tid, ok := md.TopicID(topic); !ok || tid != id {
			return 0, false
		}
		return int32(len(md.Partitions(topic))), true
	}
	return tiered.NewTopicMetadata(tiered.TopicMetadataOptions{Kafka: kopts, BrokerID: b.cfg.BrokerID, Logger: b.log, PartitionCount: known})
}
