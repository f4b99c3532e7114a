package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The sluice binary a test binary builds, once, for all its tests.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// SluiceBinary builds cmd/sluice once per test binary into a temp dir and
// returns its path; under `go test -short` it skips t (NeedsProcess). The
// package's TestMain calls RemoveBinary after m.Run.
func SluiceBinary(t testing.TB) string {
	t.Helper()
	NeedsProcess(t, "a built sluice binary")
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-test-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sluice")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/sluice/sluice/cmd/sluice").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// RemoveBinary removes what SluiceBinary built, so that tests leave no
// files outside their temp dirs.
func RemoveBinary() {
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
}
