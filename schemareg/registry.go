// Package schemareg is Sluice's built-in schema registry: Confluent Schema
// Registry's REST API (README, "Schema registry") served from the broker's
// process, its state stored in the compacted _schemas topic in Confluent's
// own record format (format.go), so a Confluent registry and Sluice's can
// read each other's topic.
//
// State is a materialized view (view.go) of that topic, replayed from
// offset 0 by one Kafka client of this broker's own listener (store.go).
// Writes are serialized by one mutex (the single writer), appended at
// acks=all, and answered only once the view has applied them, so the
// writing client reads its own write. Ids are the largest id in the topic
// plus one.
//
// Reads for other packages go through SchemaByID and SubjectVersions
// (broker-side validation) and BrowseSubjects and BrowseSubject, which
// apply the REST API's ACL rules (the console; auth_browse.go).
//
// The REST API logs its clients in with the broker's users and authorizes
// them by the topic and cluster ACLs when the broker asks (auth.go); the
// broker binds it to loopback by default (schema.registry.listeners).
package schemareg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/net/netutil"
)

// maxConnections bounds the REST API's open connections.
const maxConnections = 1024

// Sentinel errors; the HTTP side turns them into Confluent's codes
// (errors.go).
var (
	errInvalidSchema = errors.New("schemareg: invalid schema")
	errStore         = errors.New("schemareg: store error")
	errTimeout       = errors.New("schemareg: timed out")
	// ErrNotFound: SchemaByID found no schema with that id.
	ErrNotFound = errors.New("schemareg: not found")
)

// Options configure a Registry.
type Options struct {
	// Kafka are the options of the registry's Kafka client (seed broker,
	// TLS dialer, SASL); the registry adds its own partitioner and
	// client id.
	Kafka []kgo.Opt
	// Topic is the storage topic; "" means "_schemas".
	Topic string
	// ReplicationFactor of the topic when the registry creates it; 0 means
	// the broker's default.replication.factor.
	ReplicationFactor int16
	// Listener is where the REST API is served; the registry closes it.
	Listener net.Listener
	// Cluster: this broker is one of a cluster's; it writes only while it
	// leads partition 0 of the topic (then it is the one writer) and
	// forwards writes otherwise (WriterURL).
	Cluster  bool
	BrokerID int32
	// WriterURL, in a cluster, returns the registry URL of broker id (the
	// writer), to which a write this broker cannot make is forwarded
	// (forward.go); nil answers such writes with 50004.
	WriterURL func(ctx context.Context, id int32) (string, error)
	// ForwardClient sends forwarded writes; nil means http.DefaultClient.
	ForwardClient *http.Client
	// Security is who may use the REST API (auth.go); nil: everyone,
	// everything, as User:ANONYMOUS.
	Security *Security
	// Timeout bounds one request's Kafka work; 0 means 30s.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Registry is a running schema registry. Its methods are safe for
// concurrent use.
type Registry struct {
	opts Options
	log  *slog.Logger
	cl   *kgo.Client
	view *view
	http *http.Server

	// writeMu makes this registry the single writer: a registration reads
	// the view and appends under it, so two cannot pick the same id or
	// version.
	writeMu sync.Mutex
	// syncedEpoch is the leader epoch of the topic's partition 0 in which
	// this registry, as the writer, last made its view whole with a NOOP
	// append (store.go, beginWrite); -1 before the first. Guarded by
	// writeMu.
	syncedEpoch int32

	parsed parseCache
	bodies chan struct{} // a slot per request body being read (http.go)

	metrics requestMetrics // of the REST API (metrics.go)

	// loadMu guards the replay loop's start (load, createTopic).
	loadMu         sync.Mutex
	consuming      bool      // the replay loop runs
	loadedTo       int64     // the end offset load saw; the view is loaded past it
	checkedMissing bool      // load found no topic ...
	missingAt      time.Time // ... then

	ctx       context.Context // ends at Close
	cancel    context.CancelFunc
	done      chan struct{} // closed when run returns (at once if it never ran)
	serveDone chan struct{}
	closeOnce sync.Once
}

// Start starts the registry's REST API on opts.Listener. The first request
// loads the view from the topic (store.go, load); the first write creates
// the topic if there is none.
func Start(opts Options) (*Registry, error) {
	if opts.Topic == "" {
		opts.Topic = "_schemas"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	kopts := append([]kgo.Opt{kgo.ClientID("sluice-schema-registry"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.AllISRAcks())}, opts.Kafka...)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("schemareg: kafka client: %w", err)
	}
	r := &Registry{opts: opts, log: opts.Logger, cl: cl, view: newView(), syncedEpoch: -1,
		done: make(chan struct{}), serveDone: make(chan struct{}), bodies: make(chan struct{}, maxBodiesInFlight)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	// A client that trickles its body loses its slot (maxBodiesInFlight)
	// after ReadTimeout; at most maxConnections are open at once.
	r.http = &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 2 * opts.Timeout, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	if opts.Listener != nil {
		ln := netutil.LimitListener(opts.Listener, maxConnections)
		go func() {
			defer close(r.serveDone)
			if err := r.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				r.log.Error("schemareg: serve", "err", err)
			}
		}()
	} else {
		close(r.serveDone)
	}
	return r, nil
}

// Addr is the REST API's address; "" without a listener.
func (r *Registry) Addr() string {
	if r.opts.Listener == nil {
		return ""
	}
	return r.opts.Listener.Addr().String()
}

// Close stops the REST API (requests in flight are cut after 5s), the
// replay loop and the Kafka client. Safe to call more than once.
func (r *Registry) Close() error {
	var err error
	r.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if e := r.http.Shutdown(ctx); e != nil {
			r.http.Close()
		}
		<-r.serveDone
		r.cancel()
		r.loadMu.Lock()
		if r.consuming {
			<-r.done
		}
		r.loadMu.Unlock()
		r.cl.Close()
	})
	return err
}

// Schema is a registered schema as other packages see it.
type Schema struct {
	ID         int
	Type       string // AVRO, PROTOBUF, JSON
	Schema     string
	References []Reference
}

// SchemaByID returns the schema registered with id, or ErrNotFound. The
// first call may load the view (a Kafka round trip, bounded by ctx);
// later ones read it only.
func (r *Registry) SchemaByID(ctx context.Context, id int) (Schema, error) {
	if err := r.load(ctx); err != nil {
		return Schema{}, err
	}
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	is := r.view.ids[id]
	if is == nil {
		return Schema{}, ErrNotFound
	}
	return Schema{ID: id, Type: schemaTypeOf(is.schema), Schema: is.schema.Schema, References: is.schema.References}, nil
}

// SubjectVersion is one live version of a subject.
type SubjectVersion struct {
	Version int
	ID      int
}

// SubjectVersions returns subject's live (not soft-deleted) versions in
// ascending order; none for an unknown subject. Loads as SchemaByID.
func (r *Registry) SubjectVersions(ctx context.Context, subject string) ([]SubjectVersion, error) {
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	var out []SubjectVersion
	for _, sv := range r.view.versionsLocked(subject, false) {
		out = append(out, SubjectVersion{Version: sv.Version, ID: sv.ID})
	}
	return out, nil
}

func schemaTypeOf(sv *schemaValue) string {
	if sv.SchemaType == "" {
		return typeAvro
	}
	return sv.SchemaType
}

// SubjectHasID reports whether id is the schema id of a live (not
// soft-deleted) version of subject: broker-side schema validation asks it
// for each (topic, id) pair it has not accepted yet. A miss brings the view
// up to the topic's end (catchUp) and looks again: a schema registered
// through another broker is in the topic before that broker answers, but
// this broker's view may not have applied it yet, and a client that
// registers a schema and produces at once must not be refused. A record
// with an id registered nowhere therefore costs a ListOffsets to this
// broker's own listener each time.
func (r *Registry) SubjectHasID(ctx context.Context, subject string, id int) (bool, error) {
	if err := r.load(ctx); err != nil {
		return false, err
	}
	if r.subjectHasID(subject, id) {
		return true, nil
	}
	if err := r.catchUp(ctx); err != nil {
		return false, err
	}
	return r.subjectHasID(subject, id), nil
}

func (r *Registry) subjectHasID(subject string, id int) bool {
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	for _, sv := range r.view.versionsLocked(subject, false) {
		if sv.ID == id {
			return true
		}
	}
	return false
}

// isNotFound reports whether err is a 404 answer (subject, version or
// schema not found). A read that gets one catches the view up (catchUp)
// and is answered again (http.go): what another broker wrote a moment ago
// is in the topic before that broker answers, and a client that reads an
// id it was just given, through any broker, must find it.
func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status() == http.StatusNotFound
}

// freshen catches the view up (catchUp) before a read made with a POST, a
// lookup or a compatibility check, which cannot be answered again on a
// miss as a GET is (its body is read once): it then sees every write
// committed before it, through whichever broker. When the topic's end
// cannot be read (no leader of partition 0 at the moment), the view
// answers as it is.
func (r *Registry) freshen(ctx context.Context) {
	if err := r.catchUp(ctx); err != nil {
		r.log.Debug("schemareg: answering from the view as it is", "err", err)
	}
}
