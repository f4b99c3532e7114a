package sasl

import (
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	type entry struct {
		module, flag string
		opts         map[string]string
	}
	for _, tc := range []struct {
		name string
		text string
		want []entry
		err  string // substring of the error; "" for success
	}{
		{
			name: "kafka broker plain example",
			text: `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			want: []entry{{PlainLoginModule, "required", map[string]string{
				"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}}},
		},
		{
			name: "kafka scram client example, multi-line",
			text: "org.apache.kafka.common.security.scram.ScramLoginModule required\n    username=\"alice\"\n    password=\"alice-secret\";\n",
			want: []entry{{ScramLoginModule, "required", map[string]string{"username": "alice", "password": "alice-secret"}}},
		},
		{
			name: "escaped quotes and backslashes",
			text: `x.Module REQUIRED password="a\"b\\c" other='it\'s' nl="1\n2" oct="\101\0";`,
			want: []entry{{"x.Module", "required", map[string]string{"password": `a"b\c`, "other": "it's", "nl": "1\n2", "oct": "A\x00"}}},
		},
		{
			name: "single-quoted value with double quote inside",
			text: `m optional k='say "hi"';`,
			want: []entry{{"m", "optional", map[string]string{"k": `say "hi"`}}},
		},
		{
			name: "unquoted word values, dollar and dash",
			text: `m sufficient key=value-1.x $k=$v;`,
			want: []entry{{"m", "sufficient", map[string]string{"key": "value-1.x", "$k": "$v"}}},
		},
		{
			name: "two entries and comments",
			text: "/* a comment */ a.A required x=\"1\"; // trailing\n b.B requisite;",
			want: []entry{{"a.A", "required", map[string]string{"x": "1"}}, {"b.B", "requisite", map[string]string{}}},
		},
		{
			name: "repeated key keeps last",
			text: `m required k="1" k="2";`,
			want: []entry{{"m", "required", map[string]string{"k": "2"}}},
		},
		{
			name: "utf-8 value",
			text: `m required user_jörg="pässwört";`,
			want: []entry{{"m", "required", map[string]string{"user_jörg": "pässwört"}}},
		},
		{name: "missing semicolon", text: `m required username="admin" password="admin-secret"`, err: "not terminated by semi-colon"},
		{name: "empty", text: "  ", err: "login module not specified"},
		{name: "only comment", text: "// nothing", err: "login module not specified"},
		{name: "no flag", text: `m`, err: "control flag not specified"},
		{name: "bad flag", text: `m mandatory;`, err: "invalid login module control flag"},
		{name: "no value", text: `m required k=;`, err: `value not specified for key "k"`},
		{name: "no equals", text: `m required k "v";`, err: `value not specified for key "k"`},
		{name: "number value", text: `m required iterations=4096;`, err: "unexpected character"},
		{name: "unterminated string", text: `m required password="secret;`, err: "not closed"},
		{name: "newline in string", text: "m required password=\"sec\nret\";", err: "not closed"},
		{name: "unterminated comment", text: `m required; /*`, err: "unterminated comment"},
		{name: "stray character", text: `m required k="v" , ;`, err: "unexpected character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseJAAS(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %q quotes a value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg) != len(tc.want) {
				t.Fatalf("%d entries, want %d", len(cfg), len(tc.want))
			}
			for i, w := range tc.want {
				g := cfg[i]
				if g.LoginModule != w.module || g.ControlFlag != w.flag || !maps.Equal(g.Options, w.opts) {
					t.Fatalf("entry %d: %q %q %q, want %q %q %q", i, g.LoginModule, g.ControlFlag, g.Options, w.module, w.flag, w.opts)
				}
			}
		})
	}
}

func TestJAASPlainUsers(t *testing.T) {
	cfg, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_="x";
		other.Module required user_eve="eve";`)
	if err != nil {
		t.Fatal(err)
	}
	users := cfg.PlainUsers()
	if want := map[string]string{"admin": "admin-secret", "alice": "alice-secret"}; !maps.Equal(users, want) {
		t.Fatalf("users %v", users)
	}
	u, p, ok := cfg.Login(PlainLoginModule)
	if !ok || u != "admin" || p != "admin-secret" {
		t.Fatalf("login %q %q %v", u, p, ok)
	}
	if _, _, ok := cfg.Login(ScramLoginModule); ok {
		t.Fatal("login of an absent module")
	}
	s := cfg[0].String()
	if strings.Contains(s, "secret") || !strings.Contains(s, `username="admin"`) {
		t.Fatalf("String() = %s", s)
	}
}
