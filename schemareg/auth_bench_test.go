package schemareg_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice/sluice/broker"
)

// BenchmarkRegistryRead measures one GET /subjects/{s}/versions/latest over
// a kept-alive connection: without login, and with basic auth as a PLAIN
// user and as a SCRAM user (derived once, then answered from the login
// cache), each with the ACL authorizer deciding.
func BenchmarkRegistryRead(b *testing.B) {
	for _, bc := range []struct {
		name       string
		user, pass string
	}{
		{"auth=none", "", ""},
		{"auth=plain", "alice", "alice-secret"},
		{"auth=scram", "carol", "carol-secret"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var br *broker.Broker
			if bc.user == "" {
				br, _ = startRegistry(b, b.TempDir())
			} else {
				var adm *kadm.Client
				br, adm = securedRegistry(b)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}}); err != nil {
					b.Fatal(err)
				}
				for _, u := range []string{"User:alice", "User:carol"} {
					if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow(u).Topics("bench").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite)); err != nil {
						b.Fatal(err)
					}
				}
			}
			url := "http://" + br.SchemaRegistry().Addr() + "/subjects/bench-value/versions"
			do := func(method, body string) int {
				req, _ := http.NewRequest(method, url, stringReader(body))
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				if bc.user != "" {
					req.SetBasicAuth(bc.user, bc.pass)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			if st := do("POST", `{"schema":"\"string\""}`); st != 200 {
				b.Fatalf("register: %d", st)
			}
			url += "/latest"
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if st := do("GET", ""); st != 200 {
					b.Fatalf("GET: %d", st)
				}
			}
		})
	}
}

func stringReader(s string) io.Reader {
	if s == "" {
		return nil
	}
	return &stringsReader{s: s}
}

type stringsReader struct{ s string }

func (r *stringsReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}
