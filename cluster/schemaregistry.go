package cluster

// Where each broker's schema registry (package schemareg) listens, so a
// registry that is not the writer can forward a write to the one that is:
// /schema_registry/brokers/<id> = {"version":1,"url":"http://host:port"},
// persistent, rewritten by the broker at every start. Sluice's own znode
// (Kafka has no schema registry). Who the writer is is not stored here:
// it is the leader of _schemas partition 0, which the controller elects.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"
)

const schemaRegistryBrokersPath = "/schema_registry/brokers"

type schemaRegistryZnode struct {
	Version int    `json:"version"`
	URL     string `json:"url"`
}

// PublishSchemaRegistry records url as this broker's schema registry.
func (n *Node) PublishSchemaRegistry(url string) error {
	p := schemaRegistryBrokersPath + "/" + strconv.Itoa(int(n.opts.BrokerID))
	data, err := json.Marshal(schemaRegistryZnode{Version: 1, URL: url})
	if err != nil {
		return err
	}
	if _, err := n.zk.set(p, data, -1); errors.Is(err, zk.ErrNoNode) {
		if _, err = n.zk.createParents(p, data, 0); errors.Is(err, zk.ErrNodeExists) {
			_, err = n.zk.set(p, data, -1)
		}
		if err != nil {
			return fmt.Errorf("cluster: publish %s: %w", p, err)
		}
	} else if err != nil {
		return fmt.Errorf("cluster: publish %s: %w", p, err)
	}
	return nil
}

// SchemaRegistryURL returns the schema registry URL broker id published;
// ErrNoNode-wrapped when it published none.
func (n *Node) SchemaRegistryURL(id int32) (string, error) {
	p := schemaRegistryBrokersPath + "/" + strconv.Itoa(int(id))
	data, _, err := n.zk.get(p)
	if err != nil {
		return "", fmt.Errorf("cluster: %s: %w", p, err)
	}
	var z schemaRegistryZnode
	if err := json.Unmarshal(data, &z); err != nil || z.URL == "" {
		return "", fmt.Errorf("%w: %s: %q", ErrCorruptZnode, p, data)
	}
	return z.URL, nil
}
