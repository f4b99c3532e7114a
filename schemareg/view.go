package schemareg

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
)

// view is the materialized view of the _schemas topic: every record the
// replay loop has applied, in offset order. It is the one source of the
// registry's answers; writers change it only by appending a record and
// waiting for the loop to apply it (read-your-writes).
//
// Concurrency: mu guards every field; applied is also read under mu by
// waitApplied, which sleeps on cond.
type view struct {
	mu   sync.RWMutex
	cond *sync.Cond // signalled (with mu held for writing) when applied moves

	// applied is the offset of the next record to apply: every record
	// below it is in the view. Invariant: applied only grows.
	applied int64
	// failed, once set, is why the replay loop stopped; waiters get it.
	failed error

	subjects map[string]*subjectState
	ids      map[int]*idState
	// maxID is the largest id ever seen in the topic; the writer's next
	// id is maxID+1. Never lowered, not even when the id's last version
	// is permanently deleted: an id is never handed out twice.
	maxID int

	globalConfig  configValue
	subjectConfig map[string]configValue
	globalMode    string // "" means READWRITE
	subjectMode   map[string]string
}

// subjectState is one subject's versions by version number, soft-deleted
// ones included.
type subjectState struct {
	versions map[int]*schemaValue
}

// idState is one schema id: its text, type and references (those of the
// first version registered with it) and the subject-versions that use it.
type idState struct {
	schema *schemaValue
	uses   map[subjectVersion]struct{}
}

type subjectVersion struct {
	subject string
	version int
}

func newView() *view {
	v := &view{subjects: map[string]*subjectState{}, ids: map[int]*idState{},
		subjectConfig: map[string]configValue{}, subjectMode: map[string]string{}}
	v.cond = sync.NewCond(&v.mu)
	return v
}

// applyLocked applies one record at offset off. Records it cannot parse are
// skipped (returned as an error for the caller to log): a topic written by
// a newer registry must not stop the replay.
// REQUIRES: v.mu held for writing.
func (v *view) applyLocked(key, value []byte, off int64) error {
	defer func() { v.applied = off + 1 }()
	k, err := decodeKey(key)
	if err != nil {
		return err
	}
	switch k.KeyType {
	case keySchema:
		v.removeVersionLocked(k.Subject, k.Version)
		if value == nil {
			return nil
		}
		var sv schemaValue
		if err := json.Unmarshal(value, &sv); err != nil {
			return err
		}
		// The key names the version (compaction and tombstones go by
		// it); a value that says otherwise does not move it.
		sv.Subject, sv.Version = k.Subject, k.Version
		if sv.ID < 0 || sv.ID > math.MaxInt32 || sv.Version < 1 || sv.Version > math.MaxInt32 {
			// Outside Java's int: no Confluent client can name it.
			return fmt.Errorf("schemareg: subject %q version %d: id %d out of range", sv.Subject, sv.Version, sv.ID)
		}
		v.addVersionLocked(&sv)
	case keyConfig:
		if value == nil {
			if k.Subject == "" {
				v.globalConfig = configValue{}
			}
			delete(v.subjectConfig, k.Subject)
			return nil
		}
		var cv configValue
		if err := json.Unmarshal(value, &cv); err != nil {
			return err
		}
		if k.Subject == "" {
			v.globalConfig = cv
		} else {
			v.subjectConfig[k.Subject] = cv
		}
	case keyMode:
		var mv modeValue
		if value != nil {
			if err := json.Unmarshal(value, &mv); err != nil {
				return err
			}
		}
		if k.Subject == "" {
			v.globalMode = mv.Mode
		} else if mv.Mode == "" {
			delete(v.subjectMode, k.Subject)
		} else {
			v.subjectMode[k.Subject] = mv.Mode
		}
	case keyDeleteSubject:
		if value == nil {
			return nil
		}
		var dv deleteSubjectValue
		if err := json.Unmarshal(value, &dv); err != nil {
			return err
		}
		if s := v.subjects[k.Subject]; s != nil {
			for ver, sv := range s.versions {
				if ver <= dv.Version && !sv.Deleted {
					c := *sv
					c.Deleted = true
					s.versions[ver] = &c
				}
			}
		}
	case keyClearSubject:
		// Every version of the subject has been tombstoned before this
		// record; nothing is left to clear in this view.
	}
	return nil
}

// REQUIRES: v.mu held for writing.
func (v *view) removeVersionLocked(subject string, version int) {
	s := v.subjects[subject]
	if s == nil {
		return
	}
	old := s.versions[version]
	if old == nil {
		return
	}
	delete(s.versions, version)
	if len(s.versions) == 0 {
		delete(v.subjects, subject)
	}
	if is := v.ids[old.ID]; is != nil {
		delete(is.uses, subjectVersion{subject, version})
		if len(is.uses) == 0 {
			delete(v.ids, old.ID)
		}
	}
}

// REQUIRES: v.mu held for writing.
func (v *view) addVersionLocked(sv *schemaValue) {
	s := v.subjects[sv.Subject]
	if s == nil {
		s = &subjectState{versions: map[int]*schemaValue{}}
		v.subjects[sv.Subject] = s
	}
	s.versions[sv.Version] = sv
	is := v.ids[sv.ID]
	if is == nil {
		is = &idState{schema: sv, uses: map[subjectVersion]struct{}{}}
		v.ids[sv.ID] = is
	}
	is.uses[subjectVersion{sv.Subject, sv.Version}] = struct{}{}
	if sv.ID > v.maxID {
		v.maxID = sv.ID
	}
}

// versionsLocked returns subject's versions in ascending order, soft-deleted
// ones only when deleted is set.
// REQUIRES: v.mu held.
func (v *view) versionsLocked(subject string, deleted bool) []*schemaValue {
	s := v.subjects[subject]
	if s == nil {
		return nil
	}
	out := make([]*schemaValue, 0, len(s.versions))
	for _, sv := range s.versions {
		if deleted || !sv.Deleted {
			out = append(out, sv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// subjectNamesLocked lists the subjects with a live version (or any
// version when deleted is set), sorted.
// REQUIRES: v.mu held.
func (v *view) subjectNamesLocked(deleted bool) []string {
	var out []string
	for name, s := range v.subjects {
		for _, sv := range s.versions {
			if deleted || !sv.Deleted {
				out = append(out, name)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// compatibilityLocked is subject's effective compatibility level: its own,
// else the global one, else BACKWARD (Confluent's default).
// REQUIRES: v.mu held.
func (v *view) compatibilityLocked(subject string) string {
	if c, ok := v.subjectConfig[subject]; ok && c.CompatibilityLevel != "" {
		return c.CompatibilityLevel
	}
	if v.globalConfig.CompatibilityLevel != "" {
		return v.globalConfig.CompatibilityLevel
	}
	return "BACKWARD"
}

// modeLocked is subject's effective mode: its own, else the global one,
// else READWRITE.
// REQUIRES: v.mu held.
func (v *view) modeLocked(subject string) string {
	if m, ok := v.subjectMode[subject]; ok && m != "" {
		return m
	}
	if v.globalMode != "" {
		return v.globalMode
	}
	return "READWRITE"
}

// normalizeLocked reports whether registrations under subject are
// normalized without being asked (the "normalize" of its config, else of
// the global config).
// REQUIRES: v.mu held.
func (v *view) normalizeLocked(subject string) bool {
	if c, ok := v.subjectConfig[subject]; ok && c.Normalize != nil {
		return *c.Normalize
	}
	return v.globalConfig.Normalize != nil && *v.globalConfig.Normalize
}
