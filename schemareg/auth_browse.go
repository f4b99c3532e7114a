package schemareg

// Browsing for other packages (the console's schema pages): the subjects,
// versions and schemas a principal may read, by the REST API's rules
// (auth.go), read from this broker's view.

import (
	"context"
	"errors"
	"net/netip"
)

// ErrForbidden: the principal may not read the subject.
var ErrForbidden = errors.New("schemareg: not authorized")

// SubjectSummary is one subject as a list shows it: its live versions and
// its latest one's id and type.
type SubjectSummary struct {
	Subject  string
	Versions []int // ascending
	LatestID int
	Type     string // AVRO, PROTOBUF, JSON
}

// VersionDetail is one live version of a subject, its schema included.
type VersionDetail struct {
	Version    int
	ID         int
	Type       string
	Schema     string
	References []Reference
}

// BrowseSubjects returns the subjects with a live version that principal
// (from host) may read, sorted by name. The first call may load the view
// (bounded by ctx).
func (r *Registry) BrowseSubjects(ctx context.Context, principal string, host netip.Addr) ([]SubjectSummary, error) {
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	c := caller{principal: principal, host: host}
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	out := []SubjectSummary{}
	for _, name := range r.view.subjectNamesLocked(false) {
		if !r.mayReadSubjectAs(c, name) {
			continue
		}
		vs := r.view.versionsLocked(name, false)
		s := SubjectSummary{Subject: name}
		for _, sv := range vs {
			s.Versions = append(s.Versions, sv.Version)
		}
		latest := vs[len(vs)-1]
		s.LatestID, s.Type = latest.ID, schemaTypeOf(latest)
		out = append(out, s)
	}
	return out, nil
}

// BrowseSubject returns subject's live versions, ascending, if principal
// may read it: ErrForbidden if not (whether or not it exists), ErrNotFound
// when it has no live version.
func (r *Registry) BrowseSubject(ctx context.Context, principal string, host netip.Addr, subject string) ([]VersionDetail, error) {
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	if !r.mayReadSubjectAs(caller{principal: principal, host: host}, subject) {
		return nil, ErrForbidden
	}
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	vs := r.view.versionsLocked(subject, false)
	if len(vs) == 0 {
		return nil, ErrNotFound
	}
	out := make([]VersionDetail, 0, len(vs))
	for _, sv := range vs {
		out = append(out, VersionDetail{Version: sv.Version, ID: sv.ID, Type: schemaTypeOf(sv), Schema: sv.Schema, References: sv.References})
	}
	return out, nil
}
