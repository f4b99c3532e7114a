package console

import (
	"net/http"
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
func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ *request) {
	out := readyzJSON{Ready: true, Checks: map[string]checkJSON{}}
	if s.opts.Ready != nil {
		for _, c := range s.opts.Ready() {
			out.Checks[c.Name] = checkJSON{OK: c.OK, Detail: c.Detail}
			if !c.OK {
				out.Ready = false
				out.NotReady = append(out.NotReady, c.Detail)
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
