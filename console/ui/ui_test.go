package ui

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestFSRoot checks that FS has the console's files at its top, where package
// console serves them.
func TestFSRoot(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(b) == 0 {
			t.Fatalf("%s is empty", name)
		}
	}
}

// TestOfflineAndEscaped holds the console to its two rules: it loads nothing
// from elsewhere (no CDN, no external font: it works offline and behind a
// firewall), and it puts data into the DOM as text only (no HTML parsing of
// strings, so a topic named <script> is just a name).
func TestOfflineAndEscaped(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//|@import|url\(\s*["']?(https?:)?//`)
	htmlSinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`)
	err := fs.WalkDir(FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			return err
		}
		src := string(b)
		if m := external.FindString(src); m != "" {
			t.Errorf("%s loads something from elsewhere: %q", name, m)
		}
		if strings.HasSuffix(name, ".js") {
			if m := htmlSinks.FindString(src); m != "" {
				t.Errorf("%s uses %s: put data in the DOM with textContent", name, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
