package schemareg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Forwarding, in a cluster: a write that reaches a registry other than the
// writer's (the leader of _schemas-0) is sent on to the writer's registry,
// whose answer is passed back unchanged, as Confluent's followers forward
// to their leader. A forwarded request carries forwardedHeader and is
// never forwarded again: if leadership moved meanwhile, it gets 50004.

const forwardedHeader = "X-Sluice-Schema-Registry-Forwarded"

// appliedHeader, on the writer's answer to a write, is the offset below
// which its view holds every record of the topic, its write included. The
// forwarding registry answers only once its own view has got as far, so
// the writing client reads its write from the broker it wrote through.
const appliedHeader = "X-Sluice-Schema-Registry-Applied"

// maxForwardedAnswer bounds the writer's answer read back.
const maxForwardedAnswer = 8 << 20

// forwardIfNotWriter forwards q to the writer and answers w when this
// broker is not the writer; it reports whether it answered.
func (r *Registry) forwardIfNotWriter(w http.ResponseWriter, q *http.Request) bool {
	if !r.opts.Cluster || r.opts.WriterURL == nil || q.Header.Get(forwardedHeader) != "" {
		return false
	}
	ctx := q.Context()
	if err := r.createTopic(ctx); err != nil {
		writeError(w, err)
		return true
	}
	leader, _, err := r.writerID(ctx)
	if err != nil {
		writeError(w, err)
		return true
	}
	if leader == r.opts.BrokerID {
		return false
	}
	if err := r.forward(ctx, w, q, leader); err != nil {
		writeError(w, err)
	}
	return true
}

func (r *Registry) forward(ctx context.Context, w http.ResponseWriter, q *http.Request, leader int32) error {
	base, err := r.opts.WriterURL(ctx, leader)
	if err != nil {
		return &apiError{codeRequestForwardingFailed, fmt.Sprintf("Error while forwarding the request to the primary: the registry address of broker %d: %v", leader, err)}
	}
	var body []byte
	if q.Body != nil {
		body, err = io.ReadAll(http.MaxBytesReader(w, q.Body, maxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return &apiError{413, fmt.Sprintf("request body larger than %d bytes", maxBodyBytes)}
			}
			return &apiError{400, "reading the request body: " + err.Error()}
		}
	}
	req, err := http.NewRequestWithContext(ctx, q.Method, strings.TrimSuffix(base, "/")+q.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return &apiError{codeRequestForwardingFailed, "Error while forwarding the request to the primary: " + err.Error()}
	}
	if ct := q.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if a := q.Header.Get("Authorization"); a != "" {
		// The writer logs the client in and authorizes it again (auth.go).
		req.Header.Set("Authorization", a)
	}
	req.Header.Set(forwardedHeader, "1")
	hc := r.opts.ForwardClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return &apiError{codeRequestForwardingFailed, fmt.Sprintf("Error while forwarding the request to the primary (broker %d at %s): %v", leader, base, err)}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardedAnswer))
	if err != nil {
		return &apiError{codeRequestForwardingFailed, fmt.Sprintf("Error while forwarding the request to the primary (broker %d): %v", leader, err)}
	}
	if off, err := strconv.ParseInt(resp.Header.Get(appliedHeader), 10, 64); err == nil && resp.StatusCode == http.StatusOK {
		if err := r.load(ctx); err == nil {
			err = r.waitApplied(ctx, off)
		}
		if err != nil {
			// The write is made; answer it, the view will catch up.
			r.log.Warn("schemareg: a forwarded write is not in this broker's view yet", "offset", off, "err", err)
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
	return nil
}
