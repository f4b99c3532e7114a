package console_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/console"
)

// onlyTopic allows alice to Describe topic "mine"; the admin everything.
type onlyTopic struct{}

func (onlyTopic) Authorize(principal string, _ netip.Addr, op acl.Operation, rt acl.ResourceType, name string) bool {
	return principal == "User:admin" || (principal == "User:alice" && op == acl.OpDescribe && rt == acl.ResourceTopic && name == "mine")
}

// startConsole starts a console.Server on 127.0.0.1 with opts (listener,
// users admin and alice filled in) and attaches authz.
func startConsole(t *testing.T, opts console.Options, authz console.Authorizer) string {
	t.Helper()
	opts.Listeners = []string{"http://127.0.0.1:0"}
	opts.AuthRequired = true
	opts.PlainUsers = map[string]string{"admin": "admin-secret", "alice": "alice-secret"}
	srv, err := console.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.Attach(console.Backend{Authorizer: authz})
	return "http://" + srv.Addrs()[0]
}

// /readyz names only the offline partitions of topics the user may
// describe; the others are counted.
func TestReadyzHidesOfflineTopics(t *testing.T) {
	base := startConsole(t, console.Options{Ready: func() []console.Check {
		return []console.Check{{Name: "partitions", OK: false, Detail: "partitions: 3 of 5 partitions this broker should lead are offline",
			Offline: []console.Partition{{Topic: "mine", Partition: 0}, {Topic: "secret-payroll", Partition: 1}, {Topic: "secret-payroll", Partition: 2}}}}
	}}, onlyTopic{})
	detail := func(user string) string {
		req, _ := http.NewRequest("GET", base+"/readyz", nil)
		req.SetBasicAuth(user, user+"-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Checks map[string]struct {
				Detail string `json:"detail"`
			} `json:"checks"`
			NotReady []string `json:"notReady"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 503 {
			t.Fatalf("%s: %d %v", user, resp.StatusCode, err)
		}
		if len(out.NotReady) != 1 || out.NotReady[0] != out.Checks["partitions"].Detail {
			t.Fatalf("%s: notReady %q", user, out.NotReady)
		}
		return out.Checks["partitions"].Detail
	}
	if d := detail("alice"); strings.Contains(d, "payroll") || !strings.Contains(d, "mine-0") || !strings.Contains(d, "(and 2 of topics this user may not describe)") {
		t.Errorf("alice: %q", d)
	}
	if d := detail("admin"); !strings.Contains(d, "mine-0, secret-payroll-1, secret-payroll-2") || strings.Contains(d, "may not describe") {
		t.Errorf("admin: %q", d)
	}
}
