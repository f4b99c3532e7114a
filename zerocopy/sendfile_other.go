//go:build !linux

package zerocopy

import "errors"

// sendfileSupported is false off Linux: file slices are always copied.
const sendfileSupported = false

var errNoSendfile = errors.New("zerocopy: sendfile unsupported")

type sendfileState struct{}

func (w *Writer) sendfile(Slice) (int64, error) { return 0, errNoSendfile }

func (w *Writer) sendfileStep(uintptr) bool { return true }

func (w *Writer) setCork(bool) {}

func (w *Writer) corkStep(uintptr) {}
