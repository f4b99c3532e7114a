package sasl

// A parser for Kafka's sasl.jaas.config value (Kafka's JaasConfig, which
// drives java.io.StreamTokenizer):
//
//	config  = entry { entry }
//	entry   = module flag { key "=" value } ";"
//	flag    = required | requisite | sufficient | optional   (any case)
//	module, key, unquoted value = word: a letter, '_', '-', '$' or a byte
//	          >= 0x80, then those, digits and '.'
//	value   = word | "..." | '...'   (backslash escapes \" \' \\ \n \t \r
//	          \b \f \v \a and octal \ooo; any other \c is c)
//
// with // line comments and /* block comments */ anywhere between tokens.
// Where StreamTokenizer is lax this parser refuses: an unterminated quoted
// string, a value starting with a digit (Kafka fails on it too, as a
// number token has no string value).

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Login modules whose options this package reads.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// JAASEntry is one login module entry of a JAAS configuration.
type JAASEntry struct {
	LoginModule string
	// ControlFlag is the flag in lower case: "required", "requisite",
	// "sufficient" or "optional".
	ControlFlag string
	// Options holds the key="value" options; a repeated key keeps its last
	// value, as in Kafka.
	Options map[string]string
}

// String prints e with every option value that may be a secret (password,
// user_<name>) redacted.
func (e JAASEntry) String() string {
	var b strings.Builder
	b.WriteString(e.LoginModule + " " + e.ControlFlag)
	for _, k := range slices.Sorted(maps.Keys(e.Options)) {
		v := e.Options[k]
		if k == "password" || strings.HasPrefix(k, "user_") {
			v = "[redacted]"
		}
		fmt.Fprintf(&b, " %s=%q", k, v)
	}
	return b.String() + ";"
}

// JAASConfig is a parsed sasl.jaas.config value: its entries in order.
type JAASConfig []JAASEntry

// ParseJAAS parses a sasl.jaas.config value. Errors name the position and
// the key, never a value.
func ParseJAAS(text string) (JAASConfig, error) {
	p := jaasParser{s: text}
	var cfg JAASConfig
	for {
		tok, err := p.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		e, err := p.entry(tok)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, e)
	}
	if len(cfg) == 0 {
		return nil, fmt.Errorf("sasl: JAAS config: login module not specified")
	}
	return cfg, nil
}

// Option returns the value of key in the first entry of loginModule that
// has it (Kafka's JaasContext.configEntryOption).
func (c JAASConfig) Option(loginModule, key string) (string, bool) {
	for _, e := range c {
		if e.LoginModule != loginModule {
			continue
		}
		if v, ok := e.Options[key]; ok {
			return v, true
		}
	}
	return "", false
}

// PlainUsers returns the users PLAIN accepts: the user_<name>="<password>"
// options of the PlainLoginModule entries (Kafka's
// PlainServerCallbackHandler), for Config.PlainUsers. Never nil.
func (c JAASConfig) PlainUsers() map[string]string {
	users := map[string]string{}
	for i := len(c) - 1; i >= 0; i-- { // earlier entries win, as in Option
		if c[i].LoginModule != PlainLoginModule {
			continue
		}
		for k, v := range c[i].Options {
			if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
				users[name] = v
			}
		}
	}
	return users
}

// Login returns the username and password options of loginModule's entry:
// the broker's own identity for inter-broker connections. ok is false when
// either is missing.
func (c JAASConfig) Login(loginModule string) (username, password string, ok bool) {
	u, ok1 := c.Option(loginModule, "username")
	p, ok2 := c.Option(loginModule, "password")
	return u, p, ok1 && ok2
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokEquals
	tokSemi
)

type token struct {
	kind tokKind
	val  string
	pos  int // byte offset in the text
}

type jaasParser struct {
	s string
	i int
}

// entry parses one entry whose first token (the login module) is first.
func (p *jaasParser) entry(first token) (JAASEntry, error) {
	if first.kind != tokWord && first.kind != tokQuoted {
		return JAASEntry{}, p.errorf(first.pos, "expected a login module class")
	}
	e := JAASEntry{LoginModule: first.val, Options: map[string]string{}}
	flag, err := p.next()
	if err != nil {
		return JAASEntry{}, err
	}
	if flag.kind == tokEOF {
		return JAASEntry{}, p.errorf(flag.pos, "login module control flag not specified")
	}
	switch f := strings.ToLower(flag.val); {
	case flag.kind == tokWord && (f == "required" || f == "requisite" || f == "sufficient" || f == "optional"):
		e.ControlFlag = f
	default:
		return JAASEntry{}, p.errorf(flag.pos, "invalid login module control flag")
	}
	for {
		key, err := p.next()
		if err != nil {
			return JAASEntry{}, err
		}
		switch key.kind {
		case tokSemi:
			return e, nil
		case tokEOF:
			return JAASEntry{}, p.errorf(key.pos, "JAAS config entry not terminated by semi-colon")
		case tokWord, tokQuoted:
		default:
			return JAASEntry{}, p.errorf(key.pos, "expected an option key")
		}
		eq, err := p.next()
		if err != nil {
			return JAASEntry{}, err
		}
		if eq.kind != tokEquals {
			return JAASEntry{}, p.errorf(eq.pos, "value not specified for key %q", key.val)
		}
		val, err := p.next()
		if err != nil {
			return JAASEntry{}, err
		}
		if val.kind != tokWord && val.kind != tokQuoted {
			return JAASEntry{}, p.errorf(val.pos, "value not specified for key %q", key.val)
		}
		e.Options[key.val] = val.val
	}
}

func (p *jaasParser) errorf(pos int, format string, args ...any) error {
	return fmt.Errorf("sasl: JAAS config at byte %d: %s", pos, fmt.Sprintf(format, args...))
}

func isWordStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-' || c == '$' || c >= 0x80
}

func isWordPart(c byte) bool { return isWordStart(c) || c >= '0' && c <= '9' || c == '.' }

// next returns the next token, skipping whitespace and comments.
func (p *jaasParser) next() (token, error) {
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c <= ' ':
			p.i++
		case strings.HasPrefix(p.s[p.i:], "//"):
			if nl := strings.IndexAny(p.s[p.i:], "\r\n"); nl >= 0 {
				p.i += nl
			} else {
				p.i = len(p.s)
			}
		case strings.HasPrefix(p.s[p.i:], "/*"):
			end := strings.Index(p.s[p.i+2:], "*/")
			if end < 0 {
				return token{}, p.errorf(p.i, "unterminated comment")
			}
			p.i += 2 + end + 2
		case c == '=' || c == ';':
			p.i++
			if c == '=' {
				return token{tokEquals, "=", p.i - 1}, nil
			}
			return token{tokSemi, ";", p.i - 1}, nil
		case c == '"' || c == '\'':
			return p.quoted()
		case isWordStart(c):
			start := p.i
			for p.i < len(p.s) && isWordPart(p.s[p.i]) {
				p.i++
			}
			return token{tokWord, p.s[start:p.i], start}, nil
		default:
			return token{}, p.errorf(p.i, "unexpected character %q", c)
		}
	}
	return token{kind: tokEOF, pos: len(p.s)}, nil
}

// quoted reads a quoted string starting at p.i with StreamTokenizer's
// escapes. The error for an unterminated string does not quote it.
func (p *jaasParser) quoted() (token, error) {
	start := p.i
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return token{tokQuoted, b.String(), start}, nil
		case c == '\n' || c == '\r':
			return token{}, p.errorf(start, "quoted string not closed before the end of the line")
		case c == '\\' && p.i+1 < len(p.s):
			p.i++
			e := p.s[p.i]
			p.i++
			switch e {
			case 'a':
				b.WriteByte(7)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			default:
				if e >= '0' && e <= '7' {
					// Up to three octal digits, the value kept below 256
					// (StreamTokenizer takes a third digit only after 0-3).
					v := int(e - '0')
					maxDigits := 2
					if e <= '3' {
						maxDigits = 3
					}
					for n := 1; n < maxDigits && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; n++ {
						v = v*8 + int(p.s[p.i]-'0')
						p.i++
					}
					b.WriteRune(rune(v))
				} else {
					b.WriteByte(e)
				}
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return token{}, p.errorf(start, "quoted string not closed")
}
