package segment

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// quietLogger logs to the test's output with -v, else nowhere.
func quietLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() && os.Getenv("SEGMENT_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
