package server

// IncrementalAlterConfigs (key 44), served v0-v1.
//
//	v0: per resource, operations on single configs; validate_only
//	v1: flexible
//
// Operations: SET (0) and DELETE (1, back to the broker's value) on any
// topic config; APPEND (2) and SUBTRACT (3) on the list config
// cleanup.policy only (others: INVALID_CONFIG, as Kafka answers). The result
// is validated as a whole, persisted, then applied to the live logs. The
// overrides are read and written through the control plane (see
// 33_alter_configs.go). A BROKER resource changes its dynamic layer
// (brokerconfig.go, incrementalAlterBrokerConfigs). A GROUP resource
// (type 32) changes the group's configs (groupconfig.go).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	opSet      = kmsg.IncrementalAlterConfigOp(0)
	opDelete   = kmsg.IncrementalAlterConfigOp(1)
	opAppend   = kmsg.IncrementalAlterConfigOp(2)
	opSubtract = kmsg.IncrementalAlterConfigOp(3)
)

func handleIncrementalAlterConfigs(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range r.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := s.az.configAuthz(rc, acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		switch {
		case err != nil:
		case rr.ResourceType == resourceBroker:
			err = s.incrementalAlterBrokerConfigs(rr, r.ValidateOnly)
		case rr.ResourceType == resourceGroup:
			err = s.incrementalAlterGroupConfigs(rr, r.ValidateOnly) // groupconfig.go
		default:
			s.rm.Lock()
			err = s.alterTopicConfigs(rr.ResourceType, rr.ResourceName, r.ValidateOnly, func(overrides map[string]string) (map[string]string, error) {
				for _, c := range rr.Configs {
					if err := s.applyConfigOp(overrides, c); err != nil {
						return nil, err
					}
				}
				return overrides, nil
			})
			s.rm.Unlock()
		}
		if err != nil {
			sr.ErrorCode = errorCode(err)
			sr.ErrorMessage = errorMessage(err)
			if sr.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: incremental alter configs", "resource", rr.ResourceName, "err", err)
			}
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return kresp(resp), nil
}

// incrementalAlterBrokerConfigs serves a BROKER resource: the operations
// apply to the stored dynamic layer (brokerconfig.go), as Kafka's
// prepareIncrementalConfigs: SET, DELETE, and APPEND/SUBTRACT on list
// keys from the layer's value or the key's default. A config named twice,
// a null value for other than DELETE or an unknown operation is
// INVALID_REQUEST.
func (s *Server) incrementalAlterBrokerConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if err := checkIncrementalOps(rr.Configs); err != nil {
		return err
	}
	return s.alterBrokerConfigs(rr.ResourceName, validateOnly, func(props map[string]string) (map[string]string, error) {
		return applyIncrementalOps(props, rr.Configs, brokerListOp)
	})
}

// checkIncrementalOps refuses, as Kafka's ConfigAdminManager.preprocess
// does for BROKER and GROUP resources, an unknown operation, a config
// named twice, or a null value for other than DELETE (INVALID_REQUEST).
func checkIncrementalOps(configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	names := make([]string, len(configs))
	nulls := make([]bool, len(configs))
	for i, c := range configs {
		names[i], nulls[i] = c.Name, c.Value == nil
		if c.Op < opSet || c.Op > opSubtract {
			return fmt.Errorf("%w: Unknown operations type %d", errInvalidRequest, c.Op)
		}
	}
	return checkConfigNames(names, nulls, func(i int) bool { return configs[i].Op == opDelete })
}

// applyIncrementalOps applies configs to props in order: SET and DELETE
// here, APPEND and SUBTRACT by listOp. It returns props.
func applyIncrementalOps(props map[string]string, configs []kmsg.IncrementalAlterConfigsRequestResourceConfig,
	listOp func(map[string]string, kmsg.IncrementalAlterConfigsRequestResourceConfig) error) (map[string]string, error) {
	for _, c := range configs {
		switch c.Op {
		case opSet:
			props[c.Name] = *c.Value
		case opDelete:
			delete(props, c.Name)
		default:
			if err := listOp(props, c); err != nil {
				return nil, err
			}
		}
	}
	return props, nil
}

// applyConfigOp applies one operation to overrides.
func (s *Server) applyConfigOp(overrides map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	d, ok := findTopicConfig(c.Name)
	if !ok {
		return fmt.Errorf("%w: unknown topic config %q", errInvalidConfig, c.Name)
	}
	switch c.Op {
	case opSet:
		if c.Value == nil {
			return fmt.Errorf("%w: null value for %q", errInvalidConfig, c.Name)
		}
		overrides[c.Name] = *c.Value
	case opDelete:
		delete(overrides, c.Name)
	case opAppend, opSubtract:
		if d.Type != config.TypeList {
			return fmt.Errorf("%w: %q is not a list config", errInvalidConfig, c.Name)
		}
		if c.Value == nil {
			return fmt.Errorf("%w: null value for %q", errInvalidConfig, c.Name)
		}
		cur, _ := s.configValue(overrides, c.Name)
		items := splitList(cur)
		for _, v := range splitList(*c.Value) {
			i := slices.Index(items, v)
			switch {
			case c.Op == opAppend && i < 0:
				items = append(items, v)
			case c.Op == opSubtract && i >= 0:
				items = slices.Delete(items, i, i+1)
			}
		}
		overrides[c.Name] = strings.Join(items, ",")
	default:
		return fmt.Errorf("%w: unknown operation %d", errInvalidRequest, c.Op)
	}
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
