package console

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sluice/sluice/acl"
)

// healthz answers 200 while the process serves.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// checkJSON is one readiness check in /readyz's body.
type checkJSON struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// readyzJSON is /readyz's body.
type readyzJSON struct {
	Ready    bool                 `json:"ready"`
	Checks   map[string]checkJSON `json:"checks"`
	NotReady []string             `json:"notReady,omitempty"`
}

// readyz answers 200 when every readiness check passes, else 503, with
// each check and what is not ready.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request, q *request) {
	out := readyzJSON{Ready: true, Checks: map[string]checkJSON{}}
	if s.opts.Ready != nil {
		for _, c := range s.opts.Ready() {
			detail := c.Detail + offlineDetail(q, c.Offline)
			out.Checks[c.Name] = checkJSON{OK: c.OK, Detail: detail}
			if !c.OK {
				out.Ready = false
				out.NotReady = append(out.NotReady, detail)
			}
		}
	}
	code := http.StatusOK
	if !out.Ready {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, code, out)
}

// offlineDetail lists the partitions of ps whose topic q may Describe and
// counts the others: /readyz needs only a user, and the names of topics
// are not every user's to see.
func offlineDetail(q *request, ps []Partition) string {
	if len(ps) == 0 {
		return ""
	}
	var shown []string
	hidden := 0
	for _, p := range ps {
		if q.allowed(acl.OpDescribe, acl.ResourceTopic, p.Topic) {
			shown = append(shown, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
		} else {
			hidden++
		}
	}
	var b strings.Builder
	if len(shown) > 0 {
		b.WriteString(": " + strings.Join(shown, ", "))
	}
	if hidden > 0 {
		fmt.Fprintf(&b, " (and %d of topics this user may not describe)", hidden)
	}
	return b.String()
}
