package schemareg

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
)

// apiError is an answer with Confluent's error code (rest/exceptions/
// Errors.java): the HTTP status is the code's first three digits.
type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("schemareg: %d: %s", e.Code, e.Message) }

func (e *apiError) status() int {
	c := e.Code
	for c >= 1000 {
		c /= 10
	}
	if c < 100 || c > 599 {
		return http.StatusInternalServerError
	}
	return c
}

// Confluent's error codes.
const (
	codeSubjectNotFound         = 40401
	codeVersionNotFound         = 40402
	codeSchemaNotFound          = 40403
	codeSubjectSoftDeleted      = 40404
	codeSubjectNotSoftDeleted   = 40405
	codeVersionSoftDeleted      = 40406
	codeVersionNotSoftDeleted   = 40407
	codeSubjectConfigNotSet     = 40408
	codeSubjectModeNotSet       = 40409
	codeIncompatible            = 409
	codeInvalidSchema           = 42201
	codeInvalidVersion          = 42202
	codeInvalidCompatibility    = 42203
	codeInvalidMode             = 42204
	codeOperationNotPermitted   = 42205
	codeReferenceExists         = 42206
	codeIDDoesNotMatch          = 42207
	codeInvalidSubject          = 42208
	codeSchemaTooLarge          = 42209
	codeStoreError              = 50001
	codeOperationTimeout        = 50002
	codeRequestForwardingFailed = 50003
	codeUnknownLeader           = 50004
)

func errSubjectNotFound(s string) *apiError {
	return &apiError{codeSubjectNotFound, fmt.Sprintf("Subject '%s' not found.", s)}
}

func errVersionNotFound(v int) *apiError {
	return &apiError{codeVersionNotFound, fmt.Sprintf("Version %d not found.", v)}
}

var levels = []string{"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}
var modes = []string{"READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT"}

// parseCache holds the parsed form of stored schemas by id, so that
// compatibility checks and "registered already?" parse each stored
// schema once.
type parseCache struct {
	mu sync.Mutex
	m  map[int]*parsedSchema
}

// pendingParse is a stored schema and what parsing it needs, copied out of
// the view under r.view.mu so that the parse (and the comparisons after
// it) run without the lock: a large schema takes seconds to parse and
// compare, and a writer queued on the lock would stall every reader
// meanwhile. Stored values are never changed in place (view.go), so the
// copy stays valid.
type pendingParse struct {
	sv   *schemaValue
	deps []resolvedRef
	err  error
}

// pendingLocked copies out what parsing sv needs (nothing when cached).
// REQUIRES: r.view.mu held.
func (r *Registry) pendingLocked(sv *schemaValue) pendingParse {
	r.parsed.mu.Lock()
	p := r.parsed.m[sv.ID]
	r.parsed.mu.Unlock()
	if p != nil {
		return pendingParse{sv: sv}
	}
	deps, err := r.resolveRefsLocked(sv.References)
	return pendingParse{sv: sv, deps: deps, err: err}
}

// parseStored returns pp's schema parsed (cached by id). It does not need
// r.view.mu.
func (r *Registry) parseStored(pp pendingParse) (*parsedSchema, error) {
	sv := pp.sv
	r.parsed.mu.Lock()
	p := r.parsed.m[sv.ID]
	r.parsed.mu.Unlock()
	if p != nil {
		return p, nil
	}
	if pp.err != nil {
		return nil, pp.err
	}
	p, err := parseSchema(schemaTypeOf(sv), sv.Schema, sv.References, pp.deps, false)
	if err != nil {
		return nil, err
	}
	r.parsed.mu.Lock()
	if r.parsed.m == nil {
		r.parsed.m = map[int]*parsedSchema{}
	}
	r.parsed.m[sv.ID] = p
	r.parsed.mu.Unlock()
	return p, nil
}

// parsedLocked returns sv parsed (cached by id).
// REQUIRES: r.view.mu held.
func (r *Registry) parsedLocked(sv *schemaValue) (*parsedSchema, error) {
	return r.parseStored(r.pendingLocked(sv))
}

// parseAll parses pending, in order; a stored schema that no longer
// parses is a 42201 naming its id.
func (r *Registry) parseAll(ctx context.Context, pending []pendingParse) ([]*parsedSchema, error) {
	out := make([]*parsedSchema, 0, len(pending))
	for _, pp := range pending {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %v", errTimeout, err)
		}
		p, err := r.parseStored(pp)
		if err != nil {
			return nil, &apiError{codeInvalidSchema, fmt.Sprintf("stored schema id %d: %v", pp.sv.ID, err)}
		}
		out = append(out, p)
	}
	return out, nil
}

// registerRequest is the body of POST /subjects/{s}/versions and of the
// lookup and compatibility calls.
type registerRequest struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	// ID is the caller's schema id (IMPORT mode only): missing or negative
	// means none, 0 is a real id. Version <= 0 means the next version.
	// Both are 64-bit here so that a value outside Java's int is refused
	// (checkIDVersion) instead of wrapping: the wire framing carries a
	// 4-byte id.
	ID      *int64 `json:"id,omitempty"`
	Version int64  `json:"version,omitempty"`
}

// id returns the caller's id, -1 for none.
func (req *registerRequest) id() int64 {
	if req.ID == nil || *req.ID < 0 {
		return -1
	}
	return *req.ID
}

// checkIDVersion refuses an id or version Confluent's registry (a Java
// int) could not hold.
func (req *registerRequest) checkIDVersion() error {
	if id := req.id(); id > math.MaxInt32 {
		return &apiError{codeInvalidSchema, fmt.Sprintf("Schema id %d is out of range: ids are between [0, 2^31-1]", id)}
	}
	if req.Version > math.MaxInt32 {
		return &apiError{codeInvalidVersion, fmt.Sprintf("The specified version '%d' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", req.Version)}
	}
	return nil
}

// requestDepsLocked resolves req's references.
// REQUIRES: r.view.mu held.
func (r *Registry) requestDepsLocked(req *registerRequest) ([]resolvedRef, error) {
	deps, err := r.resolveRefsLocked(req.References)
	if err != nil {
		return nil, &apiError{codeInvalidSchema, err.Error()}
	}
	return deps, nil
}

// parseRequest parses req's schema with its resolved references; it does
// not need r.view.mu.
func parseRequest(req *registerRequest, deps []resolvedRef, normalize bool) (*parsedSchema, error) {
	if req.Schema == "" {
		return nil, &apiError{codeInvalidSchema, "Empty schema"}
	}
	p, err := parseSchema(req.SchemaType, req.Schema, req.References, deps, normalize)
	if err != nil {
		return nil, &apiError{codeInvalidSchema, err.Error()}
	}
	return p, nil
}

// livePendingLocked copies out subject's live versions, oldest first.
// REQUIRES: r.view.mu held.
func (r *Registry) livePendingLocked(subject string) []pendingParse {
	var out []pendingParse
	for _, sv := range r.view.versionsLocked(subject, false) {
		out = append(out, r.pendingLocked(sv))
	}
	return out
}

// maxSchemaBytes bounds a schema's text: its record in the _schemas topic
// must fit the producer's and the topic's default limits (about 1 MB).
// A longer one is refused before it is parsed, under no lock; one just
// under it that still does not fit fails at the append, with the same
// answer (errSchemaTooLarge).
const maxSchemaBytes = 1 << 20

// errSchemaTooLarge is Confluent's SchemaTooLargeException.
func errSchemaTooLarge() *apiError {
	return &apiError{codeSchemaTooLarge, "Write failed because schema is too large"}
}

// register registers req under subject and returns its id; the same schema
// registered again under the subject returns the id it has.
func (r *Registry) register(ctx context.Context, subject string, req *registerRequest, normalize bool) (int, error) {
	if subject == "" {
		return 0, &apiError{codeInvalidSubject, "Subject name is empty"}
	}
	if len(req.Schema) > maxSchemaBytes {
		return 0, errSchemaTooLarge()
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if err := r.beginWrite(ctx); err != nil {
		return 0, err
	}
	r.view.mu.RLock()
	plan, err := r.planRegisterLocked(subject, req)
	r.view.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	// Only this registry writes while r.writeMu is held: the view plan
	// was copied from stays as it was while the schemas are parsed and
	// compared without r.view.mu.
	sv, existing, err := r.prepareRegister(ctx, plan, req, normalize)
	if err != nil {
		return 0, err
	}
	if sv == nil { // registered already
		return existing, nil
	}
	if err := r.writeLocked(ctx, schemaKey(subject, sv.Version), sv); err != nil {
		return 0, err
	}
	return sv.ID, nil
}

// registerPlan is what registering needs from the view, copied out under
// r.view.mu.
type registerPlan struct {
	subject string
	mode    string
	level   string
	deps    []resolvedRef  // the request's references
	live    []pendingParse // the subject's live versions, oldest first
	next    int            // the subject's next version
	taken   map[int]bool   // the subject's versions, soft-deleted too
	ids     map[int]pendingParse
	maxID   int
}

// planRegisterLocked checks the mode rules, Confluent's (KafkaSchemaRegistry's
// checkRegisterMode): a caller's id needs IMPORT, no id needs READWRITE;
// then copies out what prepareRegister needs.
// REQUIRES: r.view.mu held, r.writeMu held.
func (r *Registry) planRegisterLocked(subject string, req *registerRequest) (*registerPlan, error) {
	mode := r.view.modeLocked(subject)
	if mode == "READONLY" || mode == "READONLY_OVERRIDE" {
		return nil, &apiError{codeOperationNotPermitted, fmt.Sprintf("Subject %s is in read-only mode", subject)}
	}
	reqID := req.id()
	if reqID >= 0 && mode != "IMPORT" {
		return nil, &apiError{codeOperationNotPermitted, fmt.Sprintf("Subject %s is not in import mode", subject)}
	}
	if reqID < 0 && mode != "READWRITE" {
		return nil, &apiError{codeOperationNotPermitted, fmt.Sprintf("Subject %s is not in read-write mode", subject)}
	}
	if err := req.checkIDVersion(); err != nil {
		return nil, err
	}
	if req.Schema == "" {
		return nil, &apiError{codeInvalidSchema, "Empty schema"}
	}
	deps, err := r.requestDepsLocked(req)
	if err != nil {
		return nil, err
	}
	plan := &registerPlan{subject: subject, mode: mode, level: r.view.compatibilityLocked(subject), deps: deps,
		live: r.livePendingLocked(subject), next: 1, taken: map[int]bool{}, ids: map[int]pendingParse{}, maxID: r.view.maxID}
	for _, sv := range r.view.versionsLocked(subject, true) {
		plan.taken[sv.Version] = true
		plan.next = sv.Version + 1
	}
	for id, is := range r.view.ids {
		plan.ids[id] = r.pendingLocked(is.schema)
	}
	return plan, nil
}

// prepareRegister decides what registering req means: nil and the
// existing id when the subject has the schema already, else the value to
// append. Outside IMPORT a caller's version must be the next one
// (Confluent's register). It parses and compares without r.view.mu.
// REQUIRES: r.writeMu held.
func (r *Registry) prepareRegister(ctx context.Context, plan *registerPlan, req *registerRequest, normalize bool) (*schemaValue, int, error) {
	subject, mode, reqID := plan.subject, plan.mode, req.id()
	p, err := parseRequest(req, plan.deps, normalize)
	if err != nil {
		return nil, 0, err
	}
	for _, pp := range plan.live {
		if old, err := r.parseStored(pp); err == nil && old.same == p.same {
			id := pp.sv.ID
			if reqID >= 0 && reqID != int64(id) {
				return nil, 0, &apiError{codeIDDoesNotMatch, fmt.Sprintf("Schema already registered with id %d instead of input id %d", id, reqID)}
			}
			return nil, id, nil
		}
	}
	if mode != "IMPORT" {
		prev, err := r.parseAll(ctx, plan.live) // cached by now
		if err != nil {
			return nil, 0, err
		}
		if msgs := compatibility(plan.level, p, prev); len(msgs) > 0 {
			return nil, 0, &apiError{codeIncompatible, "Schema being registered is incompatible with an earlier schema for subject \"" + subject + "\", details: " + fmt.Sprint(msgs)}
		}
	}
	version := int(req.Version)
	if version <= 0 {
		version = plan.next
	} else if version != plan.next && mode != "IMPORT" {
		return nil, 0, &apiError{codeInvalidSchema, "Version is not one more than previous version"}
	} else if plan.taken[version] {
		return nil, 0, &apiError{codeInvalidVersion, fmt.Sprintf("Version %d already exists in subject %s", version, subject)}
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errTimeout, err)
	}
	// The id: the caller's (IMPORT), else the id this schema has under
	// another subject, else the largest id plus one, never past Java's
	// int (the wire framing's 4-byte id).
	id := int(reqID)
	if id >= 0 {
		if pp, ok := plan.ids[id]; ok {
			old, err := r.parseStored(pp)
			if err != nil || old.same != p.same {
				return nil, 0, &apiError{codeIDDoesNotMatch, fmt.Sprintf("Overwrite new schema with id %d is not permitted.", id)}
			}
		}
	} else {
		for existing, pp := range plan.ids {
			if id >= 0 && existing > id {
				continue
			}
			old, err := r.parseStored(pp)
			if err == nil && old.same == p.same {
				id = existing
			}
		}
		if id < 0 {
			if plan.maxID >= math.MaxInt32 {
				return nil, 0, &apiError{codeStoreError, "Error while registering the schema: no schema id left below 2^31-1"}
			}
			id = plan.maxID + 1
		}
	}
	sv := &schemaValue{Subject: subject, Version: version, ID: id, References: req.References, Schema: p.text}
	if p.typ != typeAvro {
		sv.SchemaType = p.typ
	}
	return sv, 0, nil
}

// lookup finds the version of subject that holds req's schema. The parse
// runs without r.view.mu.
func (r *Registry) lookup(ctx context.Context, subject string, req *registerRequest, normalize, deleted bool) (*schemaValue, error) {
	r.view.mu.RLock()
	var pending []pendingParse
	for _, sv := range r.view.versionsLocked(subject, deleted) {
		pending = append(pending, r.pendingLocked(sv))
	}
	var deps []resolvedRef
	var err error
	if len(pending) > 0 {
		deps, err = r.requestDepsLocked(req)
	}
	r.view.mu.RUnlock()
	if len(pending) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	if err != nil {
		return nil, err
	}
	p, err := parseRequest(req, deps, normalize)
	if err != nil {
		return nil, err
	}
	for _, pp := range pending {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %v", errTimeout, ctx.Err())
		}
		if old, err := r.parseStored(pp); err == nil && old.same == p.same {
			return pp.sv, nil
		}
	}
	return nil, &apiError{codeSchemaNotFound, "Schema not found"}
}

// versionLocked resolves v (-1: latest) in subject.
// REQUIRES: r.view.mu held.
func (r *Registry) versionLocked(subject string, v int, deleted bool) (*schemaValue, error) {
	all := r.view.versionsLocked(subject, true)
	live := r.view.versionsLocked(subject, false)
	if len(all) == 0 || (len(live) == 0 && !deleted) {
		return nil, errSubjectNotFound(subject)
	}
	if v == -1 {
		src := live
		if deleted {
			src = all
		}
		if len(src) == 0 {
			return nil, errVersionNotFound(v)
		}
		return src[len(src)-1], nil
	}
	for _, sv := range all {
		if sv.Version == v && (deleted || !sv.Deleted) {
			return sv, nil
		}
	}
	return nil, errVersionNotFound(v)
}

// referencedByLocked lists the ids of live schemas that reference
// subject's version v.
// REQUIRES: r.view.mu held.
func (r *Registry) referencedByLocked(subject string, v int, includeDeleted bool) []int {
	var out []int
	for _, s := range r.view.subjects {
		for _, sv := range s.versions {
			if sv.Deleted && !includeDeleted {
				continue
			}
			for _, ref := range sv.References {
				if ref.Subject == subject && ref.Version == v && !slices.Contains(out, sv.ID) {
					out = append(out, sv.ID)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// deleteVersion soft- or permanently deletes subject's version v.
func (r *Registry) deleteVersion(ctx context.Context, subject string, v int, permanent bool) (int, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if err := r.beginWrite(ctx); err != nil {
		return 0, err
	}
	r.view.mu.RLock()
	sv, err := r.prepareDeleteVersionLocked(subject, v, permanent)
	last := len(r.view.versionsLocked(subject, false)) == 1
	_, hasConfig := r.view.subjectConfig[subject]
	_, hasMode := r.view.subjectMode[subject]
	r.view.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	if permanent {
		return sv.Version, r.writeLocked(ctx, schemaKey(subject, sv.Version), nil)
	}
	c := *sv
	c.Deleted = true
	if err := r.writeLocked(ctx, schemaKey(subject, sv.Version), &c); err != nil {
		return 0, err
	}
	if last { // the subject is gone: so are its mode and config, as Confluent
		if err := r.clearModeConfigLocked(ctx, subject, hasMode, hasConfig); err != nil {
			return 0, err
		}
	}
	return sv.Version, nil
}

// clearModeConfigLocked tombstones subject's mode and config, as
// Confluent's deleteSubject (deleteMode, deleteConfig) when a subject's
// last live version goes.
// REQUIRES: r.writeMu held, and beginWrite returned nil under it.
func (r *Registry) clearModeConfigLocked(ctx context.Context, subject string, hasMode, hasConfig bool) error {
	if hasMode {
		if err := r.writeLocked(ctx, modeKey(subject), nil); err != nil {
			return err
		}
	}
	if hasConfig {
		if err := r.writeLocked(ctx, configKey(subject), nil); err != nil {
			return err
		}
	}
	return nil
}

// REQUIRES: r.view.mu held.
func (r *Registry) prepareDeleteVersionLocked(subject string, v int, permanent bool) (*schemaValue, error) {
	if m := r.view.modeLocked(subject); m == "READONLY" || m == "READONLY_OVERRIDE" {
		return nil, &apiError{codeOperationNotPermitted, fmt.Sprintf("Subject %s is in read-only mode", subject)}
	}
	sv, err := r.versionLocked(subject, v, permanent)
	if err != nil {
		return nil, err
	}
	if permanent && !sv.Deleted {
		return nil, &apiError{codeVersionNotSoftDeleted, fmt.Sprintf("Subject '%s' Version %d was not deleted first before being permanently deleted", subject, sv.Version)}
	}
	if !permanent && sv.Deleted {
		return nil, &apiError{codeVersionSoftDeleted, fmt.Sprintf("Subject '%s' Version %d was soft deleted. Set permanent=true to delete permanently", subject, sv.Version)}
	}
	if refs := r.referencedByLocked(subject, sv.Version, permanent); len(refs) > 0 {
		return nil, &apiError{codeReferenceExists, fmt.Sprintf("One or more references exist to the schema {subject=%s,version=%d}", subject, sv.Version)}
	}
	return sv, nil
}

// deleteSubject soft- or permanently deletes every version of subject.
func (r *Registry) deleteSubject(ctx context.Context, subject string, permanent bool) ([]int, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if err := r.beginWrite(ctx); err != nil {
		return nil, err
	}
	r.view.mu.RLock()
	versions, err := r.prepareDeleteSubjectLocked(subject, permanent)
	_, hasConfig := r.view.subjectConfig[subject]
	_, hasMode := r.view.subjectMode[subject]
	r.view.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if !permanent {
		if err := r.writeLocked(ctx, deleteSubjectKey(subject), &deleteSubjectValue{Subject: subject, Version: versions[len(versions)-1]}); err != nil {
			return nil, err
		}
	} else {
		for i := len(versions) - 1; i >= 0; i-- {
			if err := r.writeLocked(ctx, schemaKey(subject, versions[i]), nil); err != nil {
				return nil, err
			}
		}
	}
	if err := r.clearModeConfigLocked(ctx, subject, hasMode, hasConfig); err != nil {
		return nil, err
	}
	return versions, nil
}

// REQUIRES: r.view.mu held.
func (r *Registry) prepareDeleteSubjectLocked(subject string, permanent bool) ([]int, error) {
	if m := r.view.modeLocked(subject); m == "READONLY" || m == "READONLY_OVERRIDE" {
		return nil, &apiError{codeOperationNotPermitted, fmt.Sprintf("Subject %s is in read-only mode", subject)}
	}
	all := r.view.versionsLocked(subject, true)
	live := r.view.versionsLocked(subject, false)
	if len(all) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	if !permanent && len(live) == 0 {
		return nil, &apiError{codeSubjectSoftDeleted, fmt.Sprintf("Subject '%s' was soft deleted. Set permanent=true to delete permanently", subject)}
	}
	if permanent && len(live) > 0 {
		return nil, &apiError{codeSubjectNotSoftDeleted, fmt.Sprintf("Subject '%s' was not deleted first before being permanently deleted", subject)}
	}
	src := live
	if permanent {
		src = all
	}
	var versions []int
	for _, sv := range src {
		for _, id := range r.referencedByLocked(subject, sv.Version, permanent) {
			if is := r.view.ids[id]; is != nil {
				for u := range is.uses {
					if u.subject != subject {
						return nil, &apiError{codeReferenceExists, fmt.Sprintf("One or more references exist to the schema {subject=%s,version=%d}", subject, sv.Version)}
					}
				}
			}
		}
		versions = append(versions, sv.Version)
	}
	return versions, nil
}

// setConfig sets subject's compatibility level ("" subject: global).
func (r *Registry) setConfig(ctx context.Context, subject, level string, normalize *bool) error {
	if !slices.Contains(levels, level) {
		return &apiError{codeInvalidCompatibility, "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"}
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if err := r.beginWrite(ctx); err != nil {
		return err
	}
	return r.writeLocked(ctx, configKey(subject), &configValue{Subject: subject, CompatibilityLevel: level, Normalize: normalize})
}

// setMode sets subject's mode ("" subject: global). IMPORT needs an empty
// registry (or subject) unless force.
func (r *Registry) setMode(ctx context.Context, subject, mode string, force bool) error {
	if !slices.Contains(modes, mode) {
		return &apiError{codeInvalidMode, "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE and IMPORT."}
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if err := r.beginWrite(ctx); err != nil {
		return err
	}
	if mode == "IMPORT" && !force {
		r.view.mu.RLock()
		var n int
		if subject == "" {
			n = len(r.view.subjectNamesLocked(false))
		} else {
			n = len(r.view.versionsLocked(subject, false))
		}
		r.view.mu.RUnlock()
		if n > 0 {
			return &apiError{codeOperationNotPermitted, "Cannot import since found existing subjects"}
		}
	}
	return r.writeLocked(ctx, modeKey(subject), &modeValue{Subject: subject, Mode: mode})
}

// clearKey tombstones a subject's config or mode.
func (r *Registry) clearKey(ctx context.Context, k storeKey) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if err := r.beginWrite(ctx); err != nil {
		return err
	}
	return r.writeLocked(ctx, k, nil)
}
