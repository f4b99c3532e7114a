package main

// Helpers shared by the admin commands (`sluice topic`, `sluice group`):
// flag parsing that lets flags follow positional arguments, as Kafka's tools
// allow, the kadm client built from --bootstrap-server, aligned tables, and
// turning protocol errors into messages an operator can act on.

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// errUsage marks a command-line mistake: the command prints it with its
// usage and exits 2. Other errors exit 1.
var errUsage = errors.New("usage")

// usageErr returns an error for a command-line mistake.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// adminFlags are the connection flags every admin subcommand takes.
type adminFlags struct {
	bootstrap string
	timeout   time.Duration
	cl        *kgo.Client // set by connect
}

func (a *adminFlags) register(fs *flag.FlagSet) {
	const def = "localhost:9092"
	fs.StringVar(&a.bootstrap, "bootstrap-server", def, "broker `host:port` to connect to (comma-separated list allowed)")
	fs.StringVar(&a.bootstrap, "brokers", def, "alias of --bootstrap-server")
	fs.DurationVar(&a.timeout, "timeout", 30*time.Second, "give up on the broker after this long")
}

// connect returns an admin client for the brokers in a, and a context that
// ends after a.timeout. The caller closes the client and cancels the context.
func (a *adminFlags) connect() (*kadm.Client, context.Context, context.CancelFunc, error) {
	var seeds []string
	for _, s := range strings.Split(a.bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, nil, nil, usageErr("--bootstrap-server is empty")
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("sluice-admin"),
		kgo.DialTimeout(5*time.Second),
	)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("client for %s: %w", a.bootstrap, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(a.timeout, time.Minute).Milliseconds()))
	a.cl = cl
	return adm, ctx, cancel, nil
}

// client is the kgo client under the admin client connect returned, for
// requests kadm has no call for. Closing the admin client closes it.
func (a *adminFlags) client() *kgo.Client { return a.cl }

// brokerErr explains a request that failed as a whole (not per topic or
// group): usually an unreachable broker or an API the broker does not serve.
func (a *adminFlags) brokerErr(what string, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: no answer from %s within %v (is a broker running there?)", what, a.bootstrap, a.timeout)
	case strings.Contains(err.Error(), "broker is too old"):
		// kgo's error for an API missing from the broker's ApiVersions;
		// it exports no sentinel, so the text is all there is.
		return fmt.Errorf("%s: the broker at %s does not serve this request (missing from its ApiVersions)", what, a.bootstrap)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// parseInterspersed parses args with fs, allowing flags after positional
// arguments ("topic create NAME --partitions 3"), and returns the positional
// arguments in order. A "--" ends the flags; everything after it is
// positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first non-flag or just after "--"; tell them
		// apart by what precedes rest in args.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// table writes aligned columns, like Kafka's tools: each row is its cells
// separated by two spaces at least. Cells must not hold tabs or newlines.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() { t.tw.Flush() }

// int32s formats broker ids as Kafka does: "1,2,3".
func int32s(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// topicIDString formats a topic id as Kafka's Uuid.toString does: URL-safe
// base64 without padding (kadm's String uses standard base64 with padding,
// which is not what Kafka's tools print).
func topicIDString(id kadm.TopicID) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// errText is a per-topic or per-group error as the operator should see it:
// the Kafka error name, then the broker's message when it sent one (else
// Kafka's generic description of the code).
func errText(err error, msg string) string {
	var ke *kerr.Error
	if msg != "" && errors.As(err, &ke) {
		return ke.Message + ": " + msg
	}
	return err.Error()
}

// subcommand is one verb of an admin command ("topic create").
type subcommand struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

// runSubcommand dispatches args[0] among subs for the command named cmd,
// and turns the returned error into an exit status: 2 for usage mistakes,
// 1 for anything else.
func runSubcommand(cmd string, subs []subcommand, args []string, stdout, stderr io.Writer) int {
	printUsage := func() {
		fmt.Fprintf(stderr, "usage: sluice %s SUBCOMMAND [flags]\n\nsubcommands:\n", cmd)
		for _, s := range subs {
			fmt.Fprintf(stderr, "  %-14s %s\n", s.name, s.summary)
		}
		fmt.Fprintf(stderr, "\nrun 'sluice %s SUBCOMMAND --help' for its flags\n", cmd)
	}
	if len(args) == 0 {
		printUsage()
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage()
		return 0
	}
	for _, s := range subs {
		if s.name != args[0] {
			continue
		}
		err := s.run(args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "sluice %s %s: %s\n", cmd, s.name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
			return 2
		case errors.Is(err, errFlags):
			return 2 // the flag package printed the problem and the defaults
		default:
			fmt.Fprintf(stderr, "sluice %s %s: %v\n", cmd, s.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "sluice %s: unknown subcommand %q\n", cmd, args[0])
	printUsage()
	return 2
}

// errFlags marks a flag.Parse failure, already reported by the flag set.
var errFlags = errors.New("bad flags")

// newFlagSet returns a flag set for "sluice cmd sub" that reports its own
// parse errors to stderr, with usage line synopsis.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: sluice %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags is parseInterspersed with its error classified for
// runSubcommand.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, err
	}
	if err != nil {
		return nil, errFlags
	}
	return pos, nil
}
