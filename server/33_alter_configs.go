package server

// AlterConfigs (key 33), served v0-v2.
//
//	v0: per resource, the complete new set of configs; validate_only
//	v1: no changes
//	v2: flexible
//
// For a topic the given configs replace every override (a config left out
// returns to the broker's value), as Kafka's legacy AlterConfigs does. They
// are validated as a whole (unknown name or bad value: INVALID_CONFIG),
// persisted in the metastore, then applied to the live logs
// (engine.Log.SetConfig) and partitions (message.timestamp.type). An
// internal topic's are refused (TOPIC_AUTHORIZATION_FAILED). A BROKER
// resource replaces its whole dynamic layer (brokerconfig.go), a GROUP
// resource (type 32) the group's configs (groupconfig.go). In cluster
// mode the overrides are written to ZooKeeper, and every broker applies them
// to its replicas when it sees the change notification.

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/sluice/sluice/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAlterConfigs(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range r.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := s.az.configAuthz(rc, acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		switch {
		case err != nil:
		case rr.ResourceType == resourceBroker:
			err = s.alterBrokerConfigsLegacy(rr, r.ValidateOnly)
		case rr.ResourceType == resourceGroup:
			err = s.alterGroupConfigsLegacy(rr, r.ValidateOnly) // groupconfig.go
		default:
			s.rm.Lock()
			err = s.alterTopicConfigs(rr.ResourceType, rr.ResourceName, r.ValidateOnly, func(map[string]string) (map[string]string, error) {
				return alterConfigsOverrides(rr), nil
			})
			s.rm.Unlock()
		}
		if err != nil {
			sr.ErrorCode = errorCode(err)
			sr.ErrorMessage = errorMessage(err)
			if sr.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: alter configs", "resource", rr.ResourceName, "err", err)
			}
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return kresp(resp), nil
}

// alterBrokerConfigsLegacy serves a BROKER resource of AlterConfigs: the
// given configs replace the whole dynamic layer (brokerconfig.go); a
// config named twice or with a null value is INVALID_REQUEST, as Kafka's
// ConfigAdminManager answers.
func (s *Server) alterBrokerConfigsLegacy(rr kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	names := make([]string, len(rr.Configs))
	nulls := make([]bool, len(rr.Configs))
	for i, c := range rr.Configs {
		names[i], nulls[i] = c.Name, c.Value == nil
	}
	if err := checkConfigNames(names, nulls, func(int) bool { return false }); err != nil {
		return err
	}
	return s.alterBrokerConfigs(rr.ResourceName, validateOnly, func(map[string]string) (map[string]string, error) {
		return alterConfigsOverrides(rr), nil
	})
}

// alterConfigsOverrides returns the complete set of overrides rr asks for.
func alterConfigsOverrides(rr kmsg.AlterConfigsRequestResource) map[string]string {
	overrides := map[string]string{}
	for _, c := range rr.Configs {
		if c.Value == nil {
			continue // null: back to the default
		}
		overrides[c.Name] = *c.Value
	}
	return overrides
}

// alterTopicConfigs serves one resource of AlterConfigs or
// IncrementalAlterConfigs: next turns the current overrides (a copy, never
// nil) into the new ones, which are validated as a whole and, unless
// validateOnly, stored through the control plane (in cluster mode, written
// to ZooKeeper) and applied to the local replicas.
// REQUIRES: s.rm.Lock held.
func (s *Server) alterTopicConfigs(typ kmsg.ConfigResourceType, name string, validateOnly bool, next func(cur map[string]string) (map[string]string, error)) error {
	switch typ {
	case resourceTopic:
	default:
		return fmt.Errorf("%w: unsupported resource type %d", errInvalidRequest, typ)
	}
	if isInternalTopic(name) {
		return fmt.Errorf("%w: %s is an internal topic; its configs are the broker's", errTopicAuthorization, name)
	}
	cur, err := s.admin.topicConfigs(name)
	if err != nil {
		return err
	}
	overrides, err := next(maps.Clone(cur))
	if err != nil {
		return err
	}
	if err := checkTopicConfigs(overrides); err != nil {
		return err
	}
	if err := s.checkBackendUnchanged(cur, overrides); err != nil {
		return err
	}
	if err := s.checkTopicConfigRelations(overrides); err != nil {
		return err
	}
	if err := s.checkTieredTurnOff(cur, overrides); err != nil { // tiered.go
		return err
	}
	if validateOnly {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), configWriteTimeout)
	defer cancel()
	return s.admin.setTopicConfigs(ctx, name, overrides)
}

// configWriteTimeout bounds the write of an alter (in cluster mode, to
// ZooKeeper).
const configWriteTimeout = 10 * time.Second
