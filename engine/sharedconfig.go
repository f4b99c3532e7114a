package engine

import "unique"

// SharedLogConfig is a LogConfig with its defaults filled (WithDefaults),
// interned: every log of the process with the same configuration holds
// the same copy, so a log keeps a pointer-sized handle instead of its own
// 104-byte LogConfig. At 100,000 partitions in topics of 100 that is
// ~10 MB of heap, and more in RSS (the collector lets the heap grow to
// twice what it marked). A topic's partitions share one copy; a config
// change (AlterConfigs) interns the new one and each log swaps its handle.
// The copies are held weakly (package unique): one no log uses any more
// is collected.
//
// The zero SharedLogConfig is not valid: get one from ShareLogConfig.
// Safe for concurrent use; the value it holds never changes.
type SharedLogConfig struct{ h unique.Handle[LogConfig] }

// ShareLogConfig returns the interned copy of cfg.WithDefaults(). It does
// not allocate when that configuration is already interned.
func ShareLogConfig(cfg LogConfig) SharedLogConfig {
	return SharedLogConfig{unique.Make(cfg.WithDefaults())}
}

// Get returns the configuration (a copy: 104 bytes on the stack).
func (c SharedLogConfig) Get() LogConfig { return c.h.Value() }

// Same reports whether c and d hold the same interned copy, which is true
// exactly when their configurations are equal.
func (c SharedLogConfig) Same(d SharedLogConfig) bool { return c.h == d.h }
