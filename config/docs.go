package config

import (
	"fmt"
	"strings"
)

//go:generate go run ./cmd/configdoc ../README.md

// README's configuration tables are generated from the definition table
// (`go run ./config/cmd/configdoc` rewrites them between their markers)
// and checked against it by TestReadmeMatchesTable, which reads them back
// with ParseDocTables.

// Markers around the generated tables in README.md.
const (
	BrokerTableBegin = "<!-- broker keys: generated from config/keys.go by `go run ./config/cmd/configdoc` -->"
	BrokerTableEnd   = "<!-- end of broker keys -->"
	TopicTableBegin  = "<!-- topic keys: generated from config/topickeys.go by `go run ./config/cmd/configdoc` -->"
	TopicTableEnd    = "<!-- end of topic keys -->"
)

// Headers of the two tables; ParseDocTables tells them apart by these.
const (
	brokerTableHeader = "| key | type | default | dynamic | meaning |"
	topicTableHeader  = "| topic key | type | default | meaning |"
)

// BrokerTable renders the broker keys as README's Markdown table, one row
// per key in the table's order (grouped by subject); the dynamic column is
// the key's Scope (empty: static).
func BrokerTable() string {
	var b strings.Builder
	b.WriteString(brokerTableHeader + "\n|---|---|---|---|---|\n")
	for _, k := range brokerKeys {
		def := "none"
		switch {
		case k.NoDefault:
		case k.Default == "":
			def = "empty"
		default:
			def = "`" + k.Default + "`"
		}
		doc := k.Doc
		if k.Sensitive {
			doc += " (sensitive: described without its value)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Name, k.Type, def, k.Dynamic, mdCell(doc))
	}
	return b.String()
}

// TopicTable renders the topic keys as README's Markdown table: a topic
// key's default is its broker synonym's value.
func TopicTable() string {
	var b strings.Builder
	b.WriteString(topicTableHeader + "\n|---|---|---|---|\n")
	for _, k := range TopicKeys() {
		def := "`" + k.Default + "`"
		if bk, ok := k.Synonym(); ok {
			def = "from `" + bk.Name + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.Name, k.Type, def, mdCell(k.Doc))
	}
	return b.String()
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// DocRow is one row of a configuration table read back from Markdown.
type DocRow struct {
	Key     string // the first cell without its backticks
	Type    string
	Default string // the default cell as written
	Line    int
}

// ParseDocTables reads the broker and topic tables of the "##
// Configuration" section of md (README.md), told apart by their headers.
// A row whose first cell is not exactly one `key` is an error.
func ParseDocTables(md string) (broker, topic []DocRow, err error) {
	lines := strings.Split(md, "\n")
	in := false
	var cur *[]DocRow
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Configuration"
			cur = nil
			continue
		case !in:
			continue
		case strings.HasPrefix(line, brokerTableHeader):
			cur = &broker
			continue
		case strings.HasPrefix(line, topicTableHeader):
			cur = &topic
			continue
		case !strings.HasPrefix(line, "|"):
			cur = nil
			continue
		case cur == nil || strings.HasPrefix(line, "|---"):
			continue
		}
		cells := splitRow(line)
		want := 4
		if cur == &broker {
			want = 5 // the broker table's dynamic column
		}
		if len(cells) != want {
			return nil, nil, fmt.Errorf("README line %d: %d cells, want %d", i+1, len(cells), want)
		}
		key := cells[0]
		if len(key) < 3 || key[0] != '`' || key[len(key)-1] != '`' || strings.Count(key, "`") != 2 {
			return nil, nil, fmt.Errorf("README line %d: first cell %q is not one `key`", i+1, key)
		}
		*cur = append(*cur, DocRow{Key: key[1 : len(key)-1], Type: cells[1], Default: cells[2], Line: i + 1})
	}
	return broker, topic, nil
}

// splitRow splits "| a | b \| c |" into trimmed cells, keeping escaped
// pipes.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// ReplaceDocTables returns readme with the text between each pair of
// markers replaced by the generated table.
func ReplaceDocTables(readme string) (string, error) {
	var err error
	readme, err = replaceBetween(readme, BrokerTableBegin, BrokerTableEnd, BrokerTable())
	if err != nil {
		return "", err
	}
	return replaceBetween(readme, TopicTableBegin, TopicTableEnd, TopicTable())
}

func replaceBetween(s, begin, end, body string) (string, error) {
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("config: README has no %q ... %q markers", begin, end)
	}
	return s[:i+len(begin)] + "\n" + body + s[j:], nil
}
