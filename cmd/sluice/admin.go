package main

// The scaffolding of the admin commands (`sluice topic`, `sluice group`,
// `sluice acl`, `sluice user`), so that topic.go, group.go, acl.go and
// user.go hold only what each subcommand does:
// subcommand dispatch and exit codes (runSubcommand), the connection flags
// and flag parsing that lets flags follow positional arguments as Kafka's
// tools allow (adminCmd.parse), the kadm client built from
// --bootstrap-server and --command-config (adminCmd.connect,
// clientconfig.go), per-topic and per-group failures gathered into one
// error (eachNamed), aligned tables, and protocol errors turned into
// messages an operator can act on.

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

// adminCmd is one run of an admin subcommand ("sluice topic create ..."):
// its command line, its flag set with the connection flags every admin
// subcommand takes already registered, and where it writes. The subcommand
// registers its own flags on flags, then calls run, or parse, checks its
// flags and calls connect: usage mistakes are reported before any broker
// is contacted.
type adminCmd struct {
	flags          *flag.FlagSet
	args           []string
	stdout, stderr io.Writer

	bootstrap     string        // --bootstrap-server (or --brokers); after connect, the seeds used
	commandConfig string        // --command-config: client properties file (clientconfig.go)
	timeout       time.Duration // --timeout
	cl            *kgo.Client   // set by connect while its fn runs
}

// newAdminCmd returns the adminCmd for "sluice name args...", whose usage
// line is "usage: sluice name synopsis".
func newAdminCmd(name, synopsis string, args []string, stdout, stderr io.Writer) *adminCmd {
	c := &adminCmd{flags: newFlagSet(name, synopsis, stderr), args: args, stdout: stdout, stderr: stderr}
	c.flags.StringVar(&c.bootstrap, "bootstrap-server", "", "broker `host:port` to connect to, comma-separated list allowed (default: bootstrap.servers of --command-config, else "+defaultBootstrap+")")
	c.flags.StringVar(&c.bootstrap, "brokers", "", "alias of --bootstrap-server")
	c.flags.StringVar(&c.commandConfig, "command-config", "", "client properties `file` in librdkafka's names, as kcat -F reads (security.protocol, sasl.*, ssl.*, bootstrap.servers)")
	c.flags.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up on the broker after this long")
	return c
}

// argsCheck checks the positional arguments of a subcommand, returning a
// usageErr when there are too many or too few.
type argsCheck func(pos []string) error

func noArgs(pos []string) error {
	if len(pos) != 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	return nil
}

func anyArgs([]string) error { return nil }

// exactlyOne wants one positional argument, a noun ("topic name").
func exactlyOne(noun string) argsCheck {
	return func(pos []string) error {
		if len(pos) != 1 {
			return usageErr("want exactly one %s, got %d", noun, len(pos))
		}
		return nil
	}
}

// oneOrMore wants at least one positional argument, each a noun ("topic").
func oneOrMore(noun string) argsCheck {
	return func(pos []string) error {
		if len(pos) == 0 {
			return usageErr("name at least one %s", noun)
		}
		return nil
	}
}

// parse parses the command line, allowing flags after positional arguments
// as Kafka's tools do, and returns the positional arguments once check
// accepts them. Call it after registering the subcommand's flags.
func (c *adminCmd) parse(check argsCheck) ([]string, error) {
	return parsePositional(c.flags, c.args, check)
}

// parsePositional parses args into flags, allowing flags after positional
// arguments, and returns the positional arguments once check accepts
// them: flag.ErrHelp for -h, errFlags for a bad flag (the flag package has
// printed why).
func parsePositional(flags *flag.FlagSet, args []string, check argsCheck) ([]string, error) {
	pos, err := parseInterspersed(flags, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, err
	case err != nil:
		return nil, errFlags
	}
	if err := check(pos); err != nil {
		return nil, err
	}
	return pos, nil
}

// connect calls fn with an admin client for --bootstrap-server (secured
// as --command-config says) and a context that ends after --timeout, and
// closes the client when fn returns.
func (c *adminCmd) connect(fn func(adm *kadm.Client, ctx context.Context) error) error {
	cc, err := loadClientConfig(c.commandConfig, c.stderr)
	if err != nil {
		return err
	}
	seeds := clientSeeds(c.bootstrap, cc)
	if len(seeds) == 0 {
		return usageErr("--bootstrap-server is empty")
	}
	c.bootstrap = strings.Join(seeds, ",")
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("sluice-admin"),
		kgo.DialTimeout(5 * time.Second),
	}
	cl, err := kgo.NewClient(append(opts, cc.opts...)...)
	if err != nil {
		return fmt.Errorf("client for %s: %w", c.bootstrap, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(c.timeout, time.Minute).Milliseconds()))
	c.cl = cl
	defer func() { c.cl = nil }()
	return fn(adm, ctx)
}

// run is parse, then connect with the positional arguments: the whole
// scaffolding of a subcommand whose flags need no further checks.
func (c *adminCmd) run(check argsCheck, fn func(adm *kadm.Client, ctx context.Context, pos []string) error) error {
	pos, err := c.parse(check)
	if err != nil {
		return err
	}
	return c.connect(func(adm *kadm.Client, ctx context.Context) error { return fn(adm, ctx, pos) })
}

// client is the kgo client under the admin client connect passes to its
// fn, for requests kadm has no call for. It is valid only while fn runs.
func (c *adminCmd) client() *kgo.Client { return c.cl }

// brokerErr explains a request that failed as a whole (not per topic or
// group): usually an unreachable broker or an API the broker does not serve.
func (c *adminCmd) brokerErr(what string, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: no answer from %s within %v (is a broker running there?)", what, c.bootstrap, c.timeout)
	case strings.Contains(err.Error(), "broker is too old"):
		// kgo's error for an API missing from the broker's ApiVersions;
		// it exports no sentinel, so the text is all there is.
		return fmt.Errorf("%s: the broker at %s does not serve this request (missing from its ApiVersions)", what, c.bootstrap)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// failures collects what went wrong with some of the topics or groups a
// subcommand was given, so that it does what it can for the others and
// then fails with every reason.
type failures []string

func (f *failures) add(format string, args ...any) { *f = append(*f, fmt.Sprintf(format, args...)) }

// err is nil when nothing failed, else every failure joined by "; ".
func (f failures) err() error {
	if len(f) == 0 {
		return nil
	}
	return errors.New(strings.Join(f, "; "))
}

// eachNamed calls fn with the broker's answer for each of names, in order.
// A name the answer does not mention fails, as does one fn returns an
// error for; the error returned lists every failure.
func eachNamed[R any](names []string, resps map[string]R, fn func(name string, r R) error) error {
	var failed failures
	for _, name := range names {
		r, ok := resps[name]
		if !ok {
			failed.add("%s: the broker's answer does not mention it", name)
			continue
		}
		if err := fn(name, r); err != nil {
			failed.add("%v", err)
		}
	}
	return failed.err()
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

// orDash is s, or "-" for an empty cell as Kafka's tools print it.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

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
	name     string
	synopsis string // its arguments, for its usage line
	summary  string
	run      func(c *adminCmd) error
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
		err := s.run(newAdminCmd(cmd+" "+s.name, s.synopsis, args[1:], stdout, stderr))
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
