package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// errorJSON is every error's body.
type errorJSON struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}

// writeJSON answers code with v as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v) // the client went away: nothing to do
}

// writeError answers code with the error body; kafkaCode may be "".
func writeError(w http.ResponseWriter, code int, msg, kafkaCode string) {
	writeJSON(w, code, errorJSON{Error: msg, Code: kafkaCode})
}

// readJSON decodes the request body into v: it must be declared
// application/json (so that a cross-site HTML form, which cannot send
// that type without a CORS preflight, cannot post), at most MaxBodyBytes,
// one JSON value with no unknown fields. It answers the error itself and
// returns false on failure.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "the body must be Content-Type: application/json", "")
		return false
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxBodyBytes), "")
			return false
		}
		writeError(w, http.StatusBadRequest, "bad JSON body: "+err.Error(), "")
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, http.StatusBadRequest, "bad JSON body: more than one value", "")
		return false
	}
	return true
}
