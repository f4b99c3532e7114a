package console

// The schema registry's subjects, versions and schemas (README, "Schema
// registry"), read from this broker's registry view: GET /api/schemas
// lists the subjects the principal may read, GET /api/schemas/{subject}
// a subject's live versions with their schemas. What a principal may
// read is the registry's rule (schemareg/auth.go: Describe on the topic
// of <topic>-key and <topic>-value, else on the cluster).

import (
	"context"
	"errors"
	"net/http"

	"github.com/sluice/sluice/schemareg"
)

type schemaSubjectJSON struct {
	Subject  string `json:"subject"`
	Versions []int  `json:"versions"`
	LatestID int    `json:"latestId"`
	Type     string `json:"type"`
}

type schemaListJSON struct {
	// Enabled is false when the broker runs no schema registry.
	Enabled  bool                `json:"enabled"`
	Subjects []schemaSubjectJSON `json:"subjects"`
}

type schemaReferenceJSON struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

type schemaVersionJSON struct {
	Version    int                   `json:"version"`
	ID         int                   `json:"id"`
	Type       string                `json:"type"`
	Schema     string                `json:"schema"`
	References []schemaReferenceJSON `json:"references"`
}

type schemaSubjectDetailJSON struct {
	Subject  string              `json:"subject"`
	Versions []schemaVersionJSON `json:"versions"`
}

// schemaRegistry is the running registry, nil when there is none (yet).
func (q *request) schemaRegistry() *schemareg.Registry {
	if q.backend == nil || q.backend.SchemaRegistry == nil {
		return nil
	}
	return q.backend.SchemaRegistry()
}

func (s *Server) listSchemas(w http.ResponseWriter, r *http.Request, q *request) {
	reg := q.schemaRegistry()
	if reg == nil {
		writeJSON(w, http.StatusOK, schemaListJSON{Subjects: []schemaSubjectJSON{}})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), KafkaTimeout)
	defer cancel()
	subjects, err := reg.BrowseSubjects(ctx, q.principal, q.host)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the schema registry cannot read its topic: "+err.Error(), "")
		return
	}
	out := schemaListJSON{Enabled: true, Subjects: make([]schemaSubjectJSON, 0, len(subjects))}
	for _, sj := range subjects {
		out.Subjects = append(out.Subjects, schemaSubjectJSON{Subject: sj.Subject, Versions: sj.Versions, LatestID: sj.LatestID, Type: sj.Type})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) describeSchemaSubject(w http.ResponseWriter, r *http.Request, q *request) {
	subject := r.PathValue("subject")
	reg := q.schemaRegistry()
	if reg == nil {
		writeError(w, http.StatusNotFound, "this broker runs no schema registry (schema.registry.listeners)", "")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), KafkaTimeout)
	defer cancel()
	vs, err := reg.BrowseSubject(ctx, q.principal, q.host, subject)
	switch {
	case errors.Is(err, schemareg.ErrForbidden):
		writeError(w, http.StatusForbidden, "not authorized to read subject "+subject, "")
		return
	case errors.Is(err, schemareg.ErrNotFound):
		writeError(w, http.StatusNotFound, "no subject "+subject, "")
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "the schema registry cannot read its topic: "+err.Error(), "")
		return
	}
	out := schemaSubjectDetailJSON{Subject: subject, Versions: make([]schemaVersionJSON, 0, len(vs))}
	for _, v := range vs {
		vj := schemaVersionJSON{Version: v.Version, ID: v.ID, Type: v.Type, Schema: v.Schema, References: []schemaReferenceJSON{}}
		for _, ref := range v.References {
			vj.References = append(vj.References, schemaReferenceJSON{Name: ref.Name, Subject: ref.Subject, Version: ref.Version})
		}
		out.Versions = append(out.Versions, vj)
	}
	writeJSON(w, http.StatusOK, out)
}
