package tlsconf

// ssl.principal.mapping.rules, after Kafka's SslPrincipalMapper
// (clients/.../security/ssl/SslPrincipalMapper.java). The rules are a list
// separated by commas (Kafka) or newlines (Sluice also accepts them):
//
//	DEFAULT                          the distinguished name unchanged
//	RULE:pattern/replacement/        if pattern matches the whole DN, the DN
//	                                 with pattern replaced by replacement
//	RULE:pattern/replacement/L       ... lower-cased
//	RULE:pattern/replacement/U       ... upper-cased
//
// "\" escapes a "/" (or anything) inside pattern and replacement. The first
// rule that applies wins; a DN no rule applies to is an error (Kafka fails
// the authentication). Empty rules between separators are ignored.
//
// The splitter and parser are Kafka's own regular expressions: Go's regexp
// picks the same submatches as Java's backtracking matcher (leftmost-first),
// so rules split and parse as they do in Kafka, which the table tests taken
// from SslPrincipalMapperTest check.
//
// Patterns are compiled by Go's regexp (RE2) instead of java.util.regex:
// Java syntax RE2 lacks (lookaround, backreferences in the pattern,
// possessive quantifiers) is a configuration error. Replacements follow
// Java's Matcher.replaceAll syntax ($n, ${name}, \ escapes) with Kafka's
// twist that a $n beyond the pattern's groups is literal text. One
// difference remains: for an unanchored pattern that can match the empty
// string after a match (RULE:(.*)/x/), Java's replaceAll also replaces that
// empty match ("xx") and Go's does not ("x"); anchor patterns with ^...$, as
// Kafka's documentation does.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Kafka's RULE_PATTERN, character for character; group numbers as in
// SslPrincipalMapper: 1 DEFAULT, 2 pattern, 4 replacement, 6 L|U.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	// Kafka's RULE_SPLITTER with one addition: a newline separates rules
	// like a comma does (Kafka needs "," even at the end of a line).
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|\n\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// ErrNoMatchingRule is returned (wrapped) by PrincipalMapper.Name for a DN
// that no rule applies to. Kafka refuses such a client.
var ErrNoMatchingRule = errors.New("tlsconf: no ssl.principal.mapping.rules rule applies")

// PrincipalMapper maps a certificate's distinguished name to a principal
// name with ssl.principal.mapping.rules. It is immutable and safe for
// concurrent use.
type PrincipalMapper struct {
	rules []rule
}

type rule struct {
	isDefault   bool
	source      string         // the pattern as written, for String
	replacement string         // as written
	match       *regexp.Regexp // ^(?:pattern)$: Java's Matcher.matches
	re          *regexp.Regexp // pattern: Java's replaceAll
	lower       bool
	upper       bool
}

// DefaultPrincipalMappingRules is Kafka's default: the DN is the name.
const DefaultPrincipalMappingRules = "DEFAULT"

// ParsePrincipalMappingRules parses the value of ssl.principal.mapping.rules.
// An error names the offending rule.
func ParsePrincipalMappingRules(rules string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	for _, sm := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		text := sm[1]
		loc := ruleParser.FindStringSubmatchIndex(text)
		if loc == nil {
			return nil, fmt.Errorf("invalid rule: %s", text)
		}
		if loc[1] != len(text) {
			return nil, fmt.Errorf("invalid rule: `%s`, unmatched substring: `%s`", text, text[loc[1]:])
		}
		group := func(i int) (string, bool) {
			if loc[2*i] < 0 {
				return "", false
			}
			return text[loc[2*i]:loc[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, rule{isDefault: true})
			continue
		}
		pattern, ok := group(2)
		if !ok {
			continue // an empty rule: ignored, as Kafka does
		}
		replacement, _ := group(4)
		flag, _ := group(6)
		r, err := newRule(pattern, replacement, flag)
		if err != nil {
			return nil, fmt.Errorf("invalid rule %q: %w", text, err)
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

func newRule(pattern, replacement, flag string) (rule, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return rule{}, err
	}
	match, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return rule{}, err
	}
	r := rule{source: pattern, replacement: replacement, re: re, match: match, lower: flag == "L", upper: flag == "U"}
	if _, err := r.expand(nil, "", nil); err != nil {
		return rule{}, err
	}
	return r, nil
}

// Name returns the principal name for the distinguished name dn (formatted
// by FormatDN), or an error wrapping ErrNoMatchingRule.
func (m *PrincipalMapper) Name(dn string) (string, error) {
	for i := range m.rules {
		if name, ok := m.rules[i].apply(dn); ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: %q, rules %s", ErrNoMatchingRule, dn, m)
}

func (r *rule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.match.MatchString(dn) {
		return "", false
	}
	var out []byte
	last := 0
	for _, loc := range r.re.FindAllStringSubmatchIndex(dn, -1) {
		out = append(out, dn[last:loc[0]]...)
		out, _ = r.expand(out, dn, loc) // the replacement was checked by newRule
		last = loc[1]
	}
	out = append(out, dn[last:]...)
	name := string(out)
	switch {
	case r.lower:
		name = strings.ToLower(name)
	case r.upper:
		name = strings.ToUpper(name)
	}
	return name, true
}

// expand appends r.replacement to dst with the groups of the match loc in
// src substituted, with java.util.regex.Matcher.appendReplacement's syntax:
// "\c" is c; "$" then digits is a group number, taking further digits only
// while the number stays a group; "${name}" is a named group. As in Kafka
// (escapeLiteralBackReferences), a group number beyond the pattern's groups
// is literal text. With loc nil it only checks the syntax.
func (r *rule) expand(dst []byte, src string, loc []int) ([]byte, error) {
	groups := r.re.NumSubexp()
	group := func(i int) {
		if loc != nil && loc[2*i] >= 0 {
			dst = append(dst, src[loc[2*i]:loc[2*i+1]]...)
		}
	}
	s := r.replacement
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i == len(s) {
				return nil, errors.New("replacement ends in an escaping backslash")
			}
			dst = append(dst, s[i])
		case c != '$':
			dst = append(dst, c)
		case i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return nil, errors.New("replacement has ${ without }")
			}
			name := s[i+2 : i+2+end]
			idx := r.re.SubexpIndex(name)
			if idx < 0 {
				return nil, fmt.Errorf("replacement names group %q that the pattern lacks", name)
			}
			group(idx)
			i += 2 + end
		case i+1 < len(s) && isDigit(s[i+1]):
			j := i + 1
			n := int(s[j] - '0')
			j++
			if n > groups {
				// Kafka escapes it: literal "$" and the digits follow as text.
				dst = append(dst, '$')
				continue
			}
			for j < len(s) && isDigit(s[j]) {
				next := n*10 + int(s[j]-'0')
				if next > groups {
					break
				}
				n = next
				j++
			}
			group(n)
			i = j - 1
		default:
			return nil, fmt.Errorf("replacement has an illegal group reference at %q", s[i:])
		}
	}
	return dst, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// String formats the rules as Kafka's SslPrincipalMapper.toString lists
// them: "[RULE:pattern/replacement/L, DEFAULT]".
func (m *PrincipalMapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		if r.isDefault {
			parts[i] = "DEFAULT"
			continue
		}
		s := "RULE:" + r.source + "/" + r.replacement
		switch {
		case r.lower:
			s += "/L"
		case r.upper:
			s += "/U"
		}
		parts[i] = s
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
