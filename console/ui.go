package console

import (
	"io/fs"
	"net/http"
	"strings"
)

// placeholder is served at / when the broker has no console files.
const placeholder = `<!doctype html>
<html><head><meta charset="utf-8"><title>Sluice</title></head>
<body><h1>Sluice</h1><p>This broker serves its JSON API under <a href="/api/cluster">/api/</a>,
its metrics at <a href="/metrics">/metrics</a> and its health at <a href="/readyz">/readyz</a>.</p></body></html>
`

// ui serves the web console's files (Options.UI). Paths are cleaned by
// http.FileServerFS and fs.FS refuses any that leave the tree, so ".."
// cannot reach outside it.
func (s *Server) ui(w http.ResponseWriter, r *http.Request, _ *request) {
	if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api" {
		writeError(w, http.StatusNotFound, "no such API endpoint: "+r.Method+" "+r.URL.Path, "")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method not allowed", "")
		return
	}
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
	if s.opts.UI == nil {
		if r.URL.Path != "/" {
			writeError(w, http.StatusNotFound, "not found", "")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(placeholder))
		return
	}
	s.uiFiles.ServeHTTP(w, r)
}

// newUIFiles returns the file server of ui.
func newUIFiles(ui fs.FS) http.Handler { return http.FileServerFS(ui) }
