package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// gobenchCmd renders `go test -bench` output as one markdown table and
// writes it into the marked section of -out:
//
//	benchreport gobench -out BENCHMARKS.md -section NAME -meta TEXT \
//	    -cols 'MB/s,ack-p99-ms=ack p99 ms' [-strip BenchmarkX/] FILE...
//
// A row is one benchmark (its name without the -GOMAXPROCS suffix), in the
// order of first appearance; its -count runs are folded into one cell per
// unit: the median, and the range in brackets when there was more than one
// run. A name made of key=value parts (b.Run("group=share/members=3"))
// gives a column per key; any other name is one "benchmark" column. -cols
// picks the units shown and their headers (unit or unit=header); without
// it every unit seen is shown.
func gobenchCmd(args []string) error {
	fs := flag.NewFlagSet("gobench", flag.ContinueOnError)
	out := fs.String("out", "", "markdown file whose section to rewrite (empty: print the table)")
	section := fs.String("section", "", "marker name: <!-- bench:NAME --> ... <!-- /bench:NAME -->")
	meta := fs.String("meta", "", "a line printed above the table (run date, commit, machine, command)")
	cols := fs.String("cols", "", "units to show, comma-separated, each unit or unit=header")
	strip := fs.String("strip", "", "prefix removed from every benchmark name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("no go test output files given")
	}
	t := newBenchTable()
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = t.read(f, *strip)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(t.order) == 0 {
		return errors.New("no benchmark result lines in the input")
	}
	body := t.markdown(parseCols(*cols))
	if *meta != "" {
		body = *meta + "\n\n" + body
	}
	if *out == "" {
		fmt.Print(body)
		return nil
	}
	if *section == "" {
		return errors.New("-out needs -section")
	}
	doc, err := os.ReadFile(*out)
	if err != nil {
		return err
	}
	s, err := replaceSection(string(doc), *section, body)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, []byte(s), 0o644)
}

type benchCol struct{ unit, header string }

func parseCols(s string) []benchCol {
	var cs []benchCol
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		unit, header, ok := strings.Cut(c, "=")
		if !ok {
			header = unit
		}
		cs = append(cs, benchCol{unit, header})
	}
	return cs
}

// benchTable holds every value seen per benchmark and unit.
type benchTable struct {
	order []string                        // benchmark names, first appearance
	units []string                        // units, first appearance
	vals  map[string]map[string][]float64 // name -> unit -> one value per run
}

func newBenchTable() *benchTable {
	return &benchTable{vals: make(map[string]map[string][]float64)}
}

// A result line: name, iterations, then value/unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

func (t *benchTable) read(r io.Reader, strip string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := strings.TrimPrefix(m[1], strip)
		f := strings.Fields(m[3])
		if len(f)%2 != 0 {
			continue // a benchmark's log line that happens to match
		}
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			t.add(name, f[i+1], v)
		}
	}
	return sc.Err()
}

func (t *benchTable) add(name, unit string, v float64) {
	byUnit, ok := t.vals[name]
	if !ok {
		byUnit = make(map[string][]float64)
		t.vals[name] = byUnit
		t.order = append(t.order, name)
	}
	if !slices.Contains(t.units, unit) {
		t.units = append(t.units, unit)
	}
	byUnit[unit] = append(byUnit[unit], v)
}

// nameKeys returns the key=value parts of name, or nil when it is not made
// only of them.
func nameKeys(name string) (keys, values []string) {
	for _, part := range strings.Split(name, "/") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || k == "" {
			return nil, nil
		}
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values
}

func (t *benchTable) markdown(cols []benchCol) string {
	if len(cols) == 0 {
		for _, u := range t.units {
			cols = append(cols, benchCol{u, u})
		}
	}
	// A column per key when every name is made of key=value parts (the
	// union of their keys, in order of first appearance).
	var keyCols []string
	for _, n := range t.order {
		k, _ := nameKeys(n)
		if k == nil {
			keyCols = nil
			break
		}
		for _, x := range k {
			if !slices.Contains(keyCols, x) {
				keyCols = append(keyCols, x)
			}
		}
	}
	var b strings.Builder
	head := slices.Clone(keyCols)
	if head == nil {
		head = []string{"benchmark"}
	}
	for _, c := range cols {
		head = append(head, c.header)
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for i := range head {
		if i < max(len(keyCols), 1) {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, n := range t.order {
		var row []string
		if keyCols != nil {
			k, v := nameKeys(n)
			row = make([]string, len(keyCols))
			for i, x := range k {
				row[slices.Index(keyCols, x)] = v[i]
			}
		} else {
			row = []string{n}
		}
		for _, c := range cols {
			row = append(row, cellOf(t.vals[n][c.unit]))
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String()
}

// cellOf is the median of vs, with their range when they differ.
func cellOf(vs []float64) string {
	if len(vs) == 0 {
		return "-"
	}
	s := statOf(vs)
	if len(vs) == 1 || s.min == s.max {
		return fmtBench(s.med)
	}
	return fmt.Sprintf("%s (%s-%s)", fmtBench(s.med), fmtBench(s.min), fmtBench(s.max))
}

// fmtBench prints whole numbers whole and others to about three significant
// figures, thousands separated.
func fmtBench(v float64) string {
	switch a := max(v, -v); {
	case a >= 100 || (v == math.Trunc(v) && a < 1e15):
		return commas(strconv.FormatFloat(v, 'f', 0, 64))
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func commas(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
