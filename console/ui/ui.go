// Package ui holds the web console's static files (HTML, CSS and JavaScript),
// embedded in the binary so that the console works offline and with no other
// install. Package console serves FS at "/"; the page reads everything it
// shows through the JSON API under /api/ (README, "HTTP").
//
// The console is one page with hash routing (#/topics/orders), so every view
// is linkable and the server needs no route but "/". It uses no framework, no
// CDN and no external font; data from the API is put into the DOM with
// textContent only, never parsed as HTML.
package ui

import (
	"embed"
	"io/fs"
)

//go:embed static
var files embed.FS

// FS is the console's files, rooted so that index.html is at its top
// ("index.html", "app.js", "style.css"). It is read-only and safe for
// concurrent use; serve it with http.FileServerFS.
var FS fs.FS = mustSub(files, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic("console/ui: " + err.Error())
	}
	return sub
}
