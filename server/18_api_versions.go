package server

// ApiVersions (key 18), served v0-v4.
//
//	v0: the list of API keys with their version ranges
//	v1: throttle time
//	v2: no changes
//	v3: flexible; the request names the client software (KIP-511); the
//	    response may carry feature tags (Sluice sends none)
//	v4: no changes (the client may expect ranges for newer APIs)
//
// A request at a version above v4 is answered in the v0 format with
// UNSUPPORTED_VERSION and our ranges, so the client retries at the highest
// version we serve (KIP-511). The response header never carries tagged
// fields (see appendKmsgFrame).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleApiVersions(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = s.apis.versions()
	return kresp(resp), nil
}

// unsupported is the v0-format answer to an ApiVersions request at a
// version we do not serve, listing the same APIs as a supported one.
func (t apiTable) unsupported() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = t.versions()
	return resp
}

// versions lists the APIs of t with their version ranges, sorted by key:
// a single node's table has no inter-broker APIs to list.
func (t apiTable) versions() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(t))
	for k, a := range t {
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: a.min, MaxVersion: a.max})
	}
	slices.SortFunc(keys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return keys
}
