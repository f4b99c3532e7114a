// Package lifecycle starts a process's components in order and stops them in
// reverse: the one mechanism behind broker.Start and server.New, so that a
// new component (a quota manager, a tiered-storage uploader) adds one entry
// instead of a line to every error path.
//
//	var st lifecycle.Stack
//	defer func() {
//		if err != nil {
//			st.Close() // unwinds what started, newest first
//		}
//	}()
//	if err := st.Start("metastore", func() (func() error, error) {
//		m, err := metastore.Open(dir, opts)
//		if err != nil {
//			return nil, err
//		}
//		return m.Close, nil
//	}); err != nil {
//		return err
//	}
//
// A Stack is safe for concurrent use; Close runs once and later calls return
// its result.
package lifecycle

import (
	"errors"
	"fmt"
	"sync"
)

// Stack is the components started so far, oldest first. The zero value is
// an empty stack ready to use.
type Stack struct {
	mu      sync.Mutex
	entries []entry
	closed  bool
	done    chan struct{} // closed when Close has finished; made by the first Close
	err     error         // Close's result; read only after done is closed
}

type entry struct {
	name  string
	close func() error
}

// ErrClosed is returned by Push and Start after Close: the component is not
// recorded (Push closes it at once).
var ErrClosed = errors.New("lifecycle: stack already closed")

// Push records a started component's closer (nil: nothing to undo, only
// the name is kept for the order). After Close it runs close at once and
// returns ErrClosed joined with close's error.
func (s *Stack) Push(name string, close func() error) error {
	s.mu.Lock()
	if !s.closed {
		s.entries = append(s.entries, entry{name: name, close: close})
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	if close == nil {
		return ErrClosed
	}
	return errors.Join(ErrClosed, wrap(name, close()))
}

// Start runs start and, when it succeeds, records the closer it returned.
// An error from start is returned naming the component; nothing is
// recorded for it (start undoes its own partial work).
func (s *Stack) Start(name string, start func() (func() error, error)) error {
	c, err := start()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return s.Push(name, c)
}

// Go records a background loop: it is started now with a channel that
// closes when the stack unwinds to it, and Close waits for it to return.
func (s *Stack) Go(name string, loop func(stop <-chan struct{})) error {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop(stop)
	}()
	return s.Push(name, func() error {
		close(stop)
		<-done
		return nil
	})
}

// Names returns the recorded components, oldest first (for logs and tests).
func (s *Stack) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.name
	}
	return out
}

// Close runs every recorded closer, newest first, even when some fail, and
// returns their errors joined, each naming its component. It runs once;
// a later or concurrent call waits until the first has finished and returns
// the same result.
func (s *Stack) Close() error {
	s.mu.Lock()
	if s.closed {
		done := s.done
		s.mu.Unlock()
		<-done
		return s.err
	}
	s.closed = true
	s.done = make(chan struct{})
	entries := s.entries
	s.entries = nil
	s.mu.Unlock()

	var errs []error
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.close != nil {
			if err := wrap(e.name, e.close()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	s.err = errors.Join(errs...)
	close(s.done)
	return s.err
}

func wrap(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("close %s: %w", name, err)
}
