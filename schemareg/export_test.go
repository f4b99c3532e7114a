package schemareg

// SetCompatHook runs fn at the start of every compatibility check until
// the returned func is called.
func SetCompatHook(fn func()) (restore func()) {
	testHookCompat.Store(&fn)
	return func() { testHookCompat.Store(nil) }
}

// ViewLockFree reports whether r's view lock is free right now (nobody
// holds it, not even for reading).
func (r *Registry) ViewLockFree() bool {
	if r.view.mu.TryLock() {
		r.view.mu.Unlock()
		return true
	}
	return false
}
