package schemareg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The REST API: Confluent Schema Registry's paths, bodies and error codes.
// Every body is JSON of at most maxBodyBytes; a larger one gets 413 with
// error code 413. Content types application/vnd.schemaregistry.v1+json,
// application/vnd.schemaregistry+json and application/json are accepted
// and answered with application/vnd.schemaregistry.v1+json.

// maxBodyBytes bounds a request body (a schema and its envelope), and
// maxBodiesInFlight how many are read and parsed at once.
const (
	maxBodyBytes      = 4 << 20
	maxBodiesInFlight = 16
)

const contentType = "application/vnd.schemaregistry.v1+json"

// Handler returns the REST API's handler.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, write bool, fn func(w http.ResponseWriter, q *http.Request) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, q *http.Request) {
			if s := q.PathValue("s"); s != "" {
				if strings.ContainsRune(s, 0) {
					writeError(w, &apiError{codeInvalidSubject, "The specified subject is not valid: it contains NUL"})
					return
				}
				q.SetPathValue("s", validSubject(s))
			}
			if !r.authorize(w, q, write) { // auth.go
				return
			}
			ctx, cancel := context.WithTimeout(q.Context(), r.opts.Timeout)
			defer cancel()
			q = q.WithContext(ctx)
			if q.Method == http.MethodPost || q.Method == http.MethodPut {
				// At most maxBodiesInFlight bodies are read and parsed at
				// once: memory stays bounded however many clients send.
				select {
				case r.bodies <- struct{}{}:
					defer func() { <-r.bodies }()
				case <-ctx.Done():
					writeError(w, fmt.Errorf("%w: too many requests in flight", errTimeout))
					return
				}
			}
			if write && r.forwardIfNotWriter(w, q) {
				return
			}
			if err := r.load(ctx); err != nil {
				writeError(w, err)
				return
			}
			if !write && q.Method == http.MethodPost {
				r.freshen(ctx) // a lookup or a compatibility check: registry.go
			}
			v, err := fn(w, q)
			if q.Method == http.MethodGet && isNotFound(err) && r.catchUp(ctx) == nil {
				v, err = fn(w, q) // registry.go, isNotFound
			}
			if err != nil {
				writeError(w, err)
				return
			}
			if write {
				// For a registry that forwarded this write: how far its
				// own view must get to show it (forward.go).
				r.view.mu.RLock()
				applied := r.view.applied
				r.view.mu.RUnlock()
				w.Header().Set(appliedHeader, strconv.FormatInt(applied, 10))
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	h := func(pattern string, fn func(w http.ResponseWriter, q *http.Request) (any, error)) {
		handle(pattern, false, fn)
	}
	hw := func(pattern string, fn func(w http.ResponseWriter, q *http.Request) (any, error)) {
		handle(pattern, true, fn)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, q *http.Request) { writeJSON(w, 200, struct{}{}) })
	h("GET /schemas/types", func(w http.ResponseWriter, q *http.Request) (any, error) {
		return []string{typeJSON, typeProtobuf, typeAvro}, nil
	})
	h("GET /contexts", func(w http.ResponseWriter, q *http.Request) (any, error) {
		return []string{"."}, nil // the default context only
	})
	h("GET /schemas", r.getSchemas)
	h("GET /subjects", r.getSubjects)
	h("GET /subjects/{s}/versions", r.getVersions)
	hw("POST /subjects/{s}/versions", r.postVersion)
	h("GET /subjects/{s}/versions/{v}", r.getVersion)
	h("GET /subjects/{s}/versions/{v}/schema", r.getVersionSchema)
	h("GET /subjects/{s}/versions/{v}/referencedby", r.getReferencedBy)
	hw("DELETE /subjects/{s}/versions/{v}", r.deleteVersionHandler)
	h("POST /subjects/{s}", r.postLookup)
	hw("DELETE /subjects/{s}", r.deleteSubjectHandler)
	h("GET /schemas/ids/{id}", r.getByID)
	h("GET /schemas/ids/{id}/schema", r.getByIDSchema)
	h("GET /schemas/ids/{id}/subjects", r.getByIDSubjects)
	h("GET /schemas/ids/{id}/versions", r.getByIDVersions)
	h("GET /config", r.getConfig)
	h("GET /config/{s}", r.getConfig)
	hw("PUT /config", r.putConfig)
	hw("PUT /config/{s}", r.putConfig)
	hw("DELETE /config", r.deleteConfig)
	hw("DELETE /config/{s}", r.deleteConfig)
	h("GET /mode", r.getMode)
	h("GET /mode/{s}", r.getMode)
	hw("PUT /mode", r.putMode)
	hw("PUT /mode/{s}", r.putMode)
	hw("DELETE /mode/{s}", r.deleteMode)
	h("POST /compatibility/subjects/{s}/versions/{v}", r.postCompatibility)
	h("POST /compatibility/subjects/{s}/versions", r.postCompatibility)
	mux.HandleFunc("/", func(w http.ResponseWriter, q *http.Request) {
		writeError(w, &apiError{404, "HTTP 404 Not Found"})
	})
	return r.instrument(mux) // login and metrics: auth.go, metrics.go
}

// validSubject returns s with every byte that is not part of valid UTF-8
// replaced by U+FFFD, byte by byte, as encoding/json writes the name into
// the stored key: the name a request uses and the name the view holds
// after the write are then one name.
func validSubject(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		c, n := utf8.DecodeRuneInString(s)
		if c == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := jsonMarshal(v)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write(b)
}

// writeError answers err with Confluent's error body.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, errInvalidSchema):
		ae = &apiError{codeInvalidSchema, err.Error()}
	case errors.Is(err, errTimeout):
		ae = &apiError{codeOperationTimeout, err.Error()}
	default:
		ae = &apiError{codeStoreError, err.Error()}
	}
	b, _ := jsonMarshal(ae)
	recordErrorCode(w, ae.Code) // metrics.go
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(ae.status())
	w.Write(b)
}

// readBody decodes q's JSON body into v, at most maxBodyBytes.
func readBody(w http.ResponseWriter, q *http.Request, v any) error {
	if ct := q.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := strings.Cut(ct, ";")
		switch strings.TrimSpace(strings.ToLower(mt)) {
		case contentType, "application/vnd.schemaregistry+json", "application/json", "application/octet-stream":
		default:
			return &apiError{415, "HTTP 415 Unsupported Media Type"}
		}
	}
	body := http.MaxBytesReader(w, q.Body, maxBodyBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{413, fmt.Sprintf("request body larger than %d bytes", maxBodyBytes)}
		}
		return &apiError{400, "Unrecognized request body: " + err.Error()}
	}
	if _, err := io.Copy(io.Discard, body); err != nil {
		return &apiError{413, fmt.Sprintf("request body larger than %d bytes", maxBodyBytes)}
	}
	return nil
}

func boolParam(q *http.Request, name string) bool {
	v, _ := strconv.ParseBool(q.URL.Query().Get(name))
	return v
}

// versionParam parses {v}: "latest" or -1 is -1, else 1..2^31-1.
func versionParam(q *http.Request) (int, error) {
	s := q.PathValue("v")
	if s == "" {
		return -1, nil
	}
	if s == "latest" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || (v < 1 && v != -1) {
		return 0, &apiError{codeInvalidVersion, fmt.Sprintf("The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)}
	}
	return int(v), nil
}

func idParam(q *http.Request) (int, error) {
	id, err := strconv.ParseInt(q.PathValue("id"), 10, 32)
	if err != nil || id < 0 {
		return 0, &apiError{codeSchemaNotFound, fmt.Sprintf("Schema %s not found", q.PathValue("id"))}
	}
	return int(id), nil
}

// versionBody is a subject version as GET /subjects/{s}/versions/{v}
// answers it.
type versionBody struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"deleted,omitempty"`
}

func toVersionBody(sv *schemaValue) versionBody {
	return versionBody{Subject: sv.Subject, Version: sv.Version, ID: sv.ID, SchemaType: sv.SchemaType,
		References: sv.References, Schema: sv.Schema, Deleted: sv.Deleted}
}

func (r *Registry) getSubjects(w http.ResponseWriter, q *http.Request) (any, error) {
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	deletedOnly := boolParam(q, "deletedOnly")
	names := r.view.subjectNamesLocked(boolParam(q, "deleted") || deletedOnly)
	prefix := q.URL.Query().Get("subjectPrefix")
	out := []string{}
	for _, n := range names {
		if deletedOnly && len(r.view.versionsLocked(n, false)) > 0 {
			continue // deletedOnly: only subjects every version of which is soft-deleted
		}
		if strings.HasPrefix(n, prefix) && r.mayReadSubject(q, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// getSchemas lists every subject version (GET /schemas), with
// subjectPrefix, deleted and latestOnly.
func (r *Registry) getSchemas(w http.ResponseWriter, q *http.Request) (any, error) {
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	deleted, latest := boolParam(q, "deleted"), boolParam(q, "latestOnly")
	prefix := q.URL.Query().Get("subjectPrefix")
	out := []versionBody{}
	for _, name := range r.view.subjectNamesLocked(deleted) {
		if !strings.HasPrefix(name, prefix) || !r.mayReadSubject(q, name) {
			continue
		}
		vs := r.view.versionsLocked(name, deleted)
		if latest && len(vs) > 0 {
			vs = vs[len(vs)-1:]
		}
		for _, sv := range vs {
			out = append(out, toVersionBody(sv))
		}
	}
	return out, nil
}

func (r *Registry) getVersions(w http.ResponseWriter, q *http.Request) (any, error) {
	s := q.PathValue("s")
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	vs := r.view.versionsLocked(s, boolParam(q, "deleted"))
	if len(vs) == 0 {
		return nil, errSubjectNotFound(s)
	}
	out := make([]int, 0, len(vs))
	for _, sv := range vs {
		out = append(out, sv.Version)
	}
	return out, nil
}

func (r *Registry) postVersion(w http.ResponseWriter, q *http.Request) (any, error) {
	var req registerRequest
	if err := readBody(w, q, &req); err != nil {
		return nil, err
	}
	s := q.PathValue("s")
	r.view.mu.RLock()
	normalize := boolParam(q, "normalize") || r.view.normalizeLocked(s)
	r.view.mu.RUnlock()
	id, err := r.register(q.Context(), s, &req, normalize)
	if err != nil {
		return nil, err
	}
	return map[string]int{"id": id}, nil
}

func (r *Registry) versionFor(q *http.Request) (*schemaValue, error) {
	v, err := versionParam(q)
	if err != nil {
		return nil, err
	}
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	return r.versionLocked(q.PathValue("s"), v, boolParam(q, "deleted"))
}

func (r *Registry) getVersion(w http.ResponseWriter, q *http.Request) (any, error) {
	sv, err := r.versionFor(q)
	if err != nil {
		return nil, err
	}
	return toVersionBody(sv), nil
}

func (r *Registry) getVersionSchema(w http.ResponseWriter, q *http.Request) (any, error) {
	sv, err := r.versionFor(q)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(sv.Schema), nil
}

func (r *Registry) getReferencedBy(w http.ResponseWriter, q *http.Request) (any, error) {
	sv, err := r.versionFor(q)
	if err != nil {
		return nil, err
	}
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	out := r.referencedByLocked(sv.Subject, sv.Version, false)
	if out == nil {
		out = []int{}
	}
	return out, nil
}

func (r *Registry) deleteVersionHandler(w http.ResponseWriter, q *http.Request) (any, error) {
	v, err := versionParam(q)
	if err != nil {
		return nil, err
	}
	return r.deleteVersion(q.Context(), q.PathValue("s"), v, boolParam(q, "permanent"))
}

func (r *Registry) postLookup(w http.ResponseWriter, q *http.Request) (any, error) {
	var req registerRequest
	if err := readBody(w, q, &req); err != nil {
		return nil, err
	}
	s := q.PathValue("s")
	r.view.mu.RLock()
	normalize := boolParam(q, "normalize") || r.view.normalizeLocked(s)
	r.view.mu.RUnlock()
	sv, err := r.lookup(q.Context(), s, &req, normalize, boolParam(q, "deleted"))
	if err != nil {
		return nil, err
	}
	return toVersionBody(sv), nil
}

func (r *Registry) deleteSubjectHandler(w http.ResponseWriter, q *http.Request) (any, error) {
	return r.deleteSubject(q.Context(), q.PathValue("s"), boolParam(q, "permanent"))
}

func (r *Registry) idState(q *http.Request) (*idState, error) {
	id, err := idParam(q)
	if err != nil {
		return nil, err
	}
	is := r.view.ids[id]
	if is == nil {
		return nil, &apiError{codeSchemaNotFound, fmt.Sprintf("Schema %d not found", id)}
	}
	if !r.mayReadIDLocked(q, is) { // auth.go
		return nil, denied("Read", "Schema", strconv.Itoa(id))
	}
	return is, nil
}

func (r *Registry) getByID(w http.ResponseWriter, q *http.Request) (any, error) {
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	is, err := r.idState(q)
	if err != nil {
		return nil, err
	}
	return struct {
		SchemaType string      `json:"schemaType,omitempty"`
		References []Reference `json:"references,omitempty"`
		Schema     string      `json:"schema"`
	}{is.schema.SchemaType, is.schema.References, is.schema.Schema}, nil
}

func (r *Registry) getByIDSchema(w http.ResponseWriter, q *http.Request) (any, error) {
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	is, err := r.idState(q)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(is.schema.Schema), nil
}

type subjectVersionBody struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func (r *Registry) idUses(q *http.Request) ([]subjectVersionBody, error) {
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	is, err := r.idState(q)
	if err != nil {
		return nil, err
	}
	deleted := boolParam(q, "deleted")
	out := []subjectVersionBody{}
	for u := range is.uses {
		sv := r.view.subjects[u.subject].versions[u.version]
		if (deleted || !sv.Deleted) && r.mayReadSubject(q, u.subject) {
			out = append(out, subjectVersionBody{u.subject, u.version})
		}
	}
	sortUses(out)
	return out, nil
}

func sortUses(out []subjectVersionBody) {
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && (out[j].Subject < out[j-1].Subject || out[j].Subject == out[j-1].Subject && out[j].Version < out[j-1].Version); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
}

func (r *Registry) getByIDVersions(w http.ResponseWriter, q *http.Request) (any, error) {
	return r.idUses(q)
}

func (r *Registry) getByIDSubjects(w http.ResponseWriter, q *http.Request) (any, error) {
	uses, err := r.idUses(q)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, u := range uses {
		if len(out) == 0 || out[len(out)-1] != u.Subject {
			out = append(out, u.Subject)
		}
	}
	return out, nil
}

func (r *Registry) getConfig(w http.ResponseWriter, q *http.Request) (any, error) {
	s := q.PathValue("s")
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	level := r.view.compatibilityLocked(s)
	if s != "" && !boolParam(q, "defaultToGlobal") {
		c, ok := r.view.subjectConfig[s]
		if !ok || c.CompatibilityLevel == "" {
			return nil, &apiError{codeSubjectConfigNotSet, fmt.Sprintf("Subject '%s' does not have subject-level compatibility configured", s)}
		}
		level = c.CompatibilityLevel
	}
	out := map[string]any{"compatibilityLevel": level}
	if r.view.normalizeLocked(s) {
		out["normalize"] = true
	}
	return out, nil
}

func (r *Registry) putConfig(w http.ResponseWriter, q *http.Request) (any, error) {
	var req struct {
		Compatibility string `json:"compatibility"`
		Normalize     *bool  `json:"normalize,omitempty"`
	}
	if err := readBody(w, q, &req); err != nil {
		return nil, err
	}
	level := strings.ToUpper(req.Compatibility)
	if err := r.setConfig(q.Context(), q.PathValue("s"), level, req.Normalize); err != nil {
		return nil, err
	}
	return map[string]string{"compatibility": level}, nil
}

func (r *Registry) deleteConfig(w http.ResponseWriter, q *http.Request) (any, error) {
	s := q.PathValue("s")
	r.view.mu.RLock()
	old := r.view.compatibilityLocked(s)
	_, has := r.view.subjectConfig[s]
	if s == "" {
		has = r.view.globalConfig.CompatibilityLevel != ""
	}
	r.view.mu.RUnlock()
	if !has && s != "" {
		return nil, errSubjectNotFound(s)
	}
	if has {
		if err := r.clearKey(q.Context(), configKey(s)); err != nil {
			return nil, err
		}
	}
	return map[string]string{"compatibilityLevel": old}, nil
}

func (r *Registry) getMode(w http.ResponseWriter, q *http.Request) (any, error) {
	s := q.PathValue("s")
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	if s != "" && !boolParam(q, "defaultToGlobal") {
		if m, ok := r.view.subjectMode[s]; !ok || m == "" {
			return nil, &apiError{codeSubjectModeNotSet, fmt.Sprintf("Subject '%s' does not have subject-level mode configured", s)}
		}
	}
	return map[string]string{"mode": r.view.modeLocked(s)}, nil
}

func (r *Registry) putMode(w http.ResponseWriter, q *http.Request) (any, error) {
	var req struct {
		Mode string `json:"mode"`
	}
	if err := readBody(w, q, &req); err != nil {
		return nil, err
	}
	mode := strings.ToUpper(req.Mode)
	if err := r.setMode(q.Context(), q.PathValue("s"), mode, boolParam(q, "force")); err != nil {
		return nil, err
	}
	return map[string]string{"mode": mode}, nil
}

func (r *Registry) deleteMode(w http.ResponseWriter, q *http.Request) (any, error) {
	s := q.PathValue("s")
	r.view.mu.RLock()
	old := r.view.modeLocked(s)
	_, has := r.view.subjectMode[s]
	r.view.mu.RUnlock()
	if !has {
		return nil, errSubjectNotFound(s)
	}
	if err := r.clearKey(q.Context(), modeKey(s)); err != nil {
		return nil, err
	}
	return map[string]string{"mode": old}, nil
}

// postCompatibility checks a schema against one version of the subject
// ({v}) or, without {v}, against the versions its level names.
func (r *Registry) postCompatibility(w http.ResponseWriter, q *http.Request) (any, error) {
	var req registerRequest
	if err := readBody(w, q, &req); err != nil {
		return nil, err
	}
	s := q.PathValue("s")
	var v int
	if q.PathValue("v") != "" {
		var err error
		if v, err = versionParam(q); err != nil {
			return nil, err
		}
	}
	// What the check needs is copied out under r.view.mu; the parse and
	// the comparisons run without it (ops.go, pendingParse).
	r.view.mu.RLock()
	level := r.view.compatibilityLocked(s)
	var pending []pendingParse
	var err error
	if req.Schema == "" {
		err = &apiError{codeInvalidSchema, "Empty schema"}
	}
	var deps []resolvedRef
	if err == nil {
		deps, err = r.requestDepsLocked(&req)
	}
	if err == nil && q.PathValue("v") != "" {
		var sv *schemaValue
		sv, err = r.versionLocked(s, v, false)
		var ae *apiError
		if err != nil && v == -1 && errors.As(err, &ae) && ae.Code == codeSubjectNotFound {
			err = nil // nothing to be incompatible with
		} else if err == nil {
			pending = []pendingParse{r.pendingLocked(sv)}
		}
	} else if err == nil {
		pending = r.livePendingLocked(s)
	}
	r.view.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	p, err := parseRequest(&req, deps, boolParam(q, "normalize"))
	if err != nil {
		return nil, err
	}
	prev, err := r.parseAll(q.Context(), pending)
	if err != nil {
		return nil, err
	}
	msgs := compatibility(level, p, prev)
	out := struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages,omitempty"`
	}{IsCompatible: len(msgs) == 0}
	if boolParam(q, "verbose") {
		out.Messages = msgs
		if out.Messages == nil {
			out.Messages = []string{}
		}
	}
	return out, nil
}
