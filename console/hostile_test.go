package console_test

// What a browser or an attacker could send: bad JSON, huge bodies and
// headers, cross-site form posts, path traversal, nonsense parameters.
// Every answer is a 4xx (never a 500, never a panic), and the broker keeps
// serving.

import (
	"bytes"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/broker/brokertest"
)

func TestHostileInput(t *testing.T) {
	b := brokertest.Start(t, "memory")
	a := newAPI(t, b)
	createTopic(t, b.Addr(), "t", 2)

	cases := []struct {
		name, method, path, ctype, body string
		want                            int
	}{
		{"bad JSON", "POST", "/api/topics", "application/json", `{"name":`, 400},
		{"JSON of the wrong type", "POST", "/api/topics", "application/json", `{"name":5}`, 400},
		{"unknown field", "POST", "/api/topics", "application/json", `{"name":"x","evil":1}`, 400},
		{"two values", "POST", "/api/topics", "application/json", `{"name":"x"}{"name":"y"}`, 400},
		{"deeply nested JSON", "POST", "/api/topics/t/records", "application/json", strings.Repeat("[", 200000), 400},
		{"NUL in JSON", "POST", "/api/topics", "application/json", "{\"name\":\"a\x00b\"}", 400},
		{"array body", "POST", "/api/topics/t/records", "application/json", `[1,2]`, 400},
		{"form post (CSRF)", "POST", "/api/topics", "application/x-www-form-urlencoded", `name=csrf`, 415},
		{"text/plain post (CSRF)", "POST", "/api/topics", "text/plain", `{"name":"csrf2"}`, 415},
		{"no content type", "POST", "/api/topics/t/records", "", `{"value":"v"}`, 415},
		{"bad topic name", "POST", "/api/topics", "application/json", `{"name":"a/b"}`, 400},
		{"empty topic name", "POST", "/api/topics", "application/json", `{}`, 400},
		{"negative partitions", "POST", "/api/topics", "application/json", `{"name":"neg","partitions":-3}`, 400},
		{"too many partitions", "POST", "/api/topics", "application/json", `{"name":"big","partitions":2000000000}`, 400},
		{"partition out of int32", "POST", "/api/topics", "application/json", `{"name":"x","partitions":99999999999}`, 400},
		{"negative produce partition", "POST", "/api/topics/t/records", "application/json", `{"partition":-1,"value":"v"}`, 400},
		{"produce partition out of range", "POST", "/api/topics/t/records", "application/json", `{"partition":7,"value":"v"}`, 404},
		{"produce to unknown topic", "POST", "/api/topics/nope/records", "application/json", `{"value":"v"}`, 404},
		{"bad offset", "GET", "/api/topics/t/records?offset=abc", "", "", 400},
		{"offset overflow", "GET", "/api/topics/t/records?offset=99999999999999999999", "", "", 400},
		{"negative limit", "GET", "/api/topics/t/records?limit=-5", "", "", 400},
		{"zero limit", "GET", "/api/topics/t/records?limit=0", "", "", 400},
		{"bad partition", "GET", "/api/topics/t/records?partition=x", "", "", 400},
		{"negative partition", "GET", "/api/topics/t/records?partition=-1", "", "", 400},
		{"missing partition", "GET", "/api/topics/t/records?partition=9", "", "", 404},
		{"offset and timestamp", "GET", "/api/topics/t/records?offset=1&timestamp=5", "", "", 400},
		{"negative timestamp", "GET", "/api/topics/t/records?timestamp=-1", "", "", 400},
		{"unknown topic records", "GET", "/api/topics/nope/records", "", "", 404},
		{"unknown topic", "GET", "/api/topics/nope", "", "", 404},
		{"escaped slash in topic", "GET", "/api/topics/a%2Fb", "", "", 400},
		{"dot dot topic", "GET", "/api/topics/%2e%2e", "", "", 400},
		{"long topic", "GET", "/api/topics/" + strings.Repeat("x", 300), "", "", 400},
		{"control chars in group", "GET", "/api/groups/a%00b", "", "", 400},
		{"unknown group", "GET", "/api/groups/none", "", "", 404},
		{"unknown API", "GET", "/api/nothing", "", "", 404},
		{"wrong method", "DELETE", "/api/topics/t", "", "", 404},
		{"post to the UI", "POST", "/index.html", "application/json", `{}`, 405},
		{"UI traversal", "GET", "/../../../../etc/passwd", "", "", 404},
		{"UI escaped traversal", "GET", "/%2e%2e/%2e%2e/etc/passwd", "", "", 404},
		{"UI missing file", "GET", "/nope.js", "", "", 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body *strings.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			var code int
			var got []byte
			if body != nil {
				code, got = a.do(tc.method, tc.path, tc.ctype, body)
			} else {
				code, got = a.do(tc.method, tc.path, tc.ctype, nil)
			}
			if code != tc.want && !(tc.want == 404 && code == 400 && strings.Contains(tc.path, "..")) {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, code, got, tc.want)
			}
			if strings.Contains(string(got), "root:") {
				t.Fatalf("%s %s leaked a file: %.100s", tc.method, tc.path, got)
			}
		})
	}
	var tl topicList
	a.get("/api/topics", 200, &tl)
	for _, tp := range tl.Topics {
		if strings.HasPrefix(tp.Name, "csrf") {
			t.Fatalf("a cross-site post created %s", tp.Name)
		}
	}

	t.Run("cross-site and rebinding", func(t *testing.T) {
		send := func(method, path string, hdr map[string]string, body string) int {
			req, _ := http.NewRequest(method, a.base+path, strings.NewReader(body))
			for k, v := range hdr {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := a.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		with := func(k, v string) map[string]string {
			return map[string]string{"Content-Type": "application/json", k: v}
		}
		if code := send("POST", "/api/topics", with("Sec-Fetch-Site", "cross-site"), `{"name":"csrf3"}`); code != 403 {
			t.Errorf("cross-site fetch POST: %d, want 403", code)
		}
		if code := send("POST", "/api/topics", with("Origin", "http://evil.example"), `{"name":"csrf4"}`); code != 403 {
			t.Errorf("cross-origin POST: %d, want 403", code)
		}
		if code := send("GET", "/api/topics", map[string]string{"Host": "evil.example"}, ""); code != 403 {
			t.Errorf("rebound Host on a loopback listener: %d, want 403", code)
		}
		if code := send("POST", "/api/topics", with("Host", "rebind.evil.example:9644"), `{"name":"csrf5"}`); code != 403 {
			t.Errorf("rebound Host POST: %d, want 403", code)
		}
		for _, h := range []string{"localhost", "LOCALHOST:1", "127.0.0.1", "[::1]:9644", "app.localhost"} {
			if code := send("GET", "/api/whoami", map[string]string{"Host": h}, ""); code != 200 {
				t.Errorf("Host %s: %d, want 200", h, code)
			}
		}
		// A scraper or probe may name the machine (Debian resolves its own
		// name to 127.0.1.1): the open read-only paths take any Host.
		for _, p := range []string{"/healthz", "/metrics"} {
			if code := send("GET", p, map[string]string{"Host": "myhost.example:9644"}, ""); code != 200 {
				t.Errorf("%s with Host myhost.example: %d, want 200", p, code)
			}
			// But not a browser's (it always sends Sec-Fetch-*): a page
			// whose name was rebound to 127.0.0.1 reads it as same-origin.
			for _, hdr := range []string{"Sec-Fetch-Site", "Sec-Fetch-Mode"} {
				v := map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}[hdr]
				if code := send("GET", p, map[string]string{"Host": "evil.example", hdr: v}, ""); code != 403 {
					t.Errorf("%s from a browser (%s) with Host evil.example: %d, want 403", p, hdr, code)
				}
			}
			if code := send("GET", p, map[string]string{"Host": "localhost:9644", "Sec-Fetch-Site": "none"}, ""); code != 200 {
				t.Errorf("%s from a browser at localhost: %d, want 200", p, code)
			}
		}
		if code := send("POST", "/api/topics", with("Sec-Fetch-Site", "same-origin"), `{"name":"same"}`); code != 201 {
			t.Errorf("same-origin POST: %d, want 201", code)
		}
		var tl topicList
		a.get("/api/topics", 200, &tl)
		for _, tp := range tl.Topics {
			if strings.HasPrefix(tp.Name, "csrf") {
				t.Fatalf("a cross-site post created %s", tp.Name)
			}
		}
	})
	t.Run("huge body", func(t *testing.T) {
		big := bytes.Repeat([]byte("a"), 2<<20)
		code, _ := a.do("POST", "/api/topics/t/records", "application/json", bytes.NewReader(append(append([]byte(`{"value":"`), big...), '"', '}')))
		if code != 413 {
			t.Fatalf("2 MiB body: %d, want 413", code)
		}
		// Without a Content-Length (chunked), the limit still holds.
		req, _ := http.NewRequest("POST", a.base+"/api/topics/t/records", struct{ *bytes.Reader }{bytes.NewReader(append(append([]byte(`{"value":"`), big...), '"', '}'))})
		req.Header.Set("Content-Type", "application/json")
		resp, err := a.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Fatalf("chunked 2 MiB body: %d, want 413", resp.StatusCode)
		}
	})
	t.Run("huge header", func(t *testing.T) {
		req, _ := http.NewRequest("GET", a.base+"/api/topics", nil)
		req.Header.Set("X-Big", strings.Repeat("b", 200<<10))
		resp, err := a.client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("200 KiB header: %d, want 431", resp.StatusCode)
			}
		}
	})
	t.Run("garbage bytes", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 20 {
			c, err := net.DialTimeout("tcp", b.HTTPAddr(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			junk := make([]byte, 1+rng.IntN(4096))
			for j := range junk {
				junk[j] = byte(rng.Uint32())
			}
			if i%2 == 0 {
				junk = append([]byte("GET /api/topics/"), junk...)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write(junk)
			c.Write([]byte("\r\n\r\n"))
			buf := make([]byte, 512)
			c.Read(buf)
			c.Close()
			if bytes.HasPrefix(buf, []byte("HTTP/1.1 500")) {
				t.Fatalf("junk %d answered 500", i)
			}
		}
	})
	t.Run("random paths", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		alphabet := "abc/%.?&=-_~0123456789"
		for range 200 {
			var sb strings.Builder
			sb.WriteString("/api/")
			for range rng.IntN(40) {
				sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
			req, err := http.NewRequest("GET", a.base+sb.String(), nil)
			if err != nil {
				continue // not a URL the client would send
			}
			resp, err := a.client.Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", sb.String(), err)
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("GET %s: %d", sb.String(), resp.StatusCode)
			}
		}
	})
	a.get("/healthz", 200, nil)
}
