package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/internal/zktest"
)

// Helpers of the schema registry's e2e tests (schema_registry_*_test.go):
// brokers started with schema.registry.listeners on a port of their own,
// and a small client of Confluent's REST API.

// srBroker starts a single broker whose schema registry listens on a free
// loopback port, and returns it with the registry's base URL.
func srBroker(t *testing.T, sets ...string) (*brokerProc, string) {
	t.Helper()
	port := freePort(t)
	b := startBroker(t, t.TempDir(), append([]string{fmt.Sprintf("schema.registry.listeners=http://127.0.0.1:%d", port),
		"group.initial.rebalance.delay.ms=0"}, sets...)...)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitListening(t, url)
	return b, url
}

// srCluster is a ZooKeeper cluster of brokers each serving the schema
// registry; urls[id] is broker id's registry.
type srCluster struct {
	*testCluster
	urls map[int32]string
	kcl  map[int32]*kgo.Client // srProduceTo's clients, by broker
}

// startSRCluster starts ZooKeeper and n brokers (ids 1..n), each with its
// own schema.registry.listeners port, with extra --set values, and waits
// until every broker's metadata lists all n and every registry listens.
func startSRCluster(t *testing.T, n int, sets ...string) *srCluster {
	t.Helper()
	zk := zktest.Start(t)
	c := &srCluster{testCluster: &testCluster{t: t, zk: zk, brokers: map[int32]*brokerProc{}}, urls: map[int32]string{}, kcl: map[int32]*kgo.Client{}}
	for id := int32(1); id <= int32(n); id++ {
		dir := filepath.Join(t.TempDir(), "broker-"+strconv.Itoa(int(id)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		port := freePort(t)
		all := append([]string{
			"broker.id=" + strconv.Itoa(int(id)),
			"zookeeper.connect=" + zk.Addr() + "/sluice",
			"zookeeper.session.timeout.ms=3000",
			"group.initial.rebalance.delay.ms=0",
			fmt.Sprintf("schema.registry.listeners=http://127.0.0.1:%d", port),
		}, sets...)
		c.brokers[id] = startBroker(t, dir, all...)
		c.urls[id] = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	c.waitBrokers(n, 30*time.Second)
	for _, u := range c.urls {
		waitListening(t, u)
	}
	return c
}

// waitListening waits (bounded) until the registry at url accepts
// connections.
func waitListening(t *testing.T, url string) {
	t.Helper()
	addr := url[len("http://"):]
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the schema registry at %s does not listen: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// srHTTP is a client of the REST API with a bound on each request.
var srHTTP = &http.Client{Timeout: 20 * time.Second}

// srCall sends method path (body JSON-encoded unless nil) to the registry
// at base and decodes the answer into out when it is 200. It returns the
// status, the raw body and a transport error.
func srCall(base, method, path string, body, out any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := srHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, raw, err
	}
	if resp.StatusCode == 200 && out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, raw, fmt.Errorf("decoding %s: %w", raw, err)
		}
	}
	return resp.StatusCode, raw, nil
}

// srRegister registers an Avro schema under subject through base and
// returns its id.
func srRegister(base, subject, schema string) (int, error) {
	var out struct {
		ID int `json:"id"`
	}
	st, raw, err := srCall(base, "POST", "/subjects/"+subject+"/versions", map[string]string{"schema": schema}, &out)
	if err != nil {
		return 0, err
	}
	if st != 200 || out.ID <= 0 {
		return 0, fmt.Errorf("register %s: %d %s", subject, st, raw)
	}
	return out.ID, nil
}

// srSchemaByID reads /schemas/ids/id through base: the schema text, or
// found false on 404.
func srSchemaByID(base string, id int) (schema string, found bool, err error) {
	var out struct {
		Schema string `json:"schema"`
	}
	st, raw, err := srCall(base, "GET", fmt.Sprintf("/schemas/ids/%d", id), nil, &out)
	switch {
	case err != nil:
		return "", false, err
	case st == 404:
		return "", false, nil
	case st != 200:
		return "", false, fmt.Errorf("GET /schemas/ids/%d: %d %s", id, st, raw)
	}
	return out.Schema, true, nil
}
