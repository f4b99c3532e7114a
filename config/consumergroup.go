package config

// checkConsumerGroupBounds is Kafka's GroupCoordinatorConfig rules for the
// consumer group (KIP-848) timeouts: each value within its bounds, the
// heartbeat interval below the session timeout.
func (c *Config) checkConsumerGroupBounds() error {
	if c.GroupConsumerMinHeartbeatInterval > c.GroupConsumerMaxHeartbeatInterval {
		return keyError("group.consumer.min.heartbeat.interval.ms", "above group.consumer.max.heartbeat.interval.ms")
	}
	if c.GroupConsumerMinSessionTimeout > c.GroupConsumerMaxSessionTimeout {
		return keyError("group.consumer.min.session.timeout.ms", "above group.consumer.max.session.timeout.ms")
	}
	if h := c.GroupConsumerHeartbeatInterval; h < c.GroupConsumerMinHeartbeatInterval || h > c.GroupConsumerMaxHeartbeatInterval {
		return keyError("group.consumer.heartbeat.interval.ms", "%d is outside [%d, %d]", h.Milliseconds(),
			c.GroupConsumerMinHeartbeatInterval.Milliseconds(), c.GroupConsumerMaxHeartbeatInterval.Milliseconds())
	}
	if s := c.GroupConsumerSessionTimeout; s < c.GroupConsumerMinSessionTimeout || s > c.GroupConsumerMaxSessionTimeout {
		return keyError("group.consumer.session.timeout.ms", "%d is outside [%d, %d]", s.Milliseconds(),
			c.GroupConsumerMinSessionTimeout.Milliseconds(), c.GroupConsumerMaxSessionTimeout.Milliseconds())
	}
	if c.GroupConsumerHeartbeatInterval >= c.GroupConsumerSessionTimeout {
		return keyError("group.consumer.heartbeat.interval.ms", "must be below group.consumer.session.timeout.ms")
	}
	return nil
}

// ServesConsumerProtocol reports whether group.coordinator.rebalance.protocols
// lists `consumer` (KIP-848 consumer groups).
func (c *Config) ServesConsumerProtocol() bool {
	for _, p := range c.GroupRebalanceProtocols {
		if p == "consumer" {
			return true
		}
	}
	return false
}
