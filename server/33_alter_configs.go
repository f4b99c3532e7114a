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
// (engine.Log.SetConfig) and partitions (message.timestamp.type). Broker
// configs are static in Sluice: altering them is INVALID_REQUEST. In cluster
// mode the overrides are written to ZooKeeper (clustermode_configs.go).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAlterConfigs(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	s.topics.admin.Lock()
	defer s.topics.admin.Unlock()
	for _, rr := range r.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := func() error {
			if s.cm != nil {
				return s.cm.alterTopicConfigs(rr.ResourceType, rr.ResourceName, r.ValidateOnly, func(map[string]string) (map[string]string, error) {
					return alterConfigsOverrides(rr), nil
				})
			}
			t, err := s.alterTarget(rr.ResourceType, rr.ResourceName)
			if err != nil {
				return err
			}
			overrides := alterConfigsOverrides(rr)
			if err := checkTopicConfigs(overrides); err != nil {
				return err
			}
			if r.ValidateOnly {
				return nil
			}
			return s.setTopicConfigsLocked(t, overrides)
		}()
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

// alterTarget resolves the resource of an (incremental) alter configs
// request: topics only. REQUIRES: s.topics.admin held.
func (s *Server) alterTarget(typ kmsg.ConfigResourceType, name string) (*topic, error) {
	switch typ {
	case resourceTopic:
	case resourceBroker:
		return nil, fmt.Errorf("%w: broker configs are static in Sluice; change server.properties and restart", errInvalidRequest)
	default:
		return nil, fmt.Errorf("%w: unsupported resource type %d", errInvalidRequest, typ)
	}
	t := s.topics.get(name)
	if t == nil {
		if err := validateTopicName(name); err != nil {
			return nil, err
		}
		return nil, errUnknownTopicOrPartition
	}
	return t, nil
}
