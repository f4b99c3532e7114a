package main

// `sluice schema`: the built-in schema registry (README, "Schema
// registry") over its REST API, Confluent Schema Registry's, so it works
// against a Confluent registry too. Every subcommand takes --registry URL
// (default defaultRegistry), basic auth as --user and --password (the
// broker's SASL users, as the registry logs them in), --ca-file for an
// https registry whose certificate the system does not trust, and
// --timeout. A registry error is printed with Confluent's code and
// message and exits 1; usage mistakes exit 2 before the registry is
// asked.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// defaultRegistry is schema.registry.listeners' default.
const defaultRegistry = "http://127.0.0.1:8081"

// maxRegistryAnswer bounds an answer read from the registry.
const maxRegistryAnswer = 64 << 20

func schemaCmd(args []string, stdout, stderr io.Writer) int {
	subs := []schemaSub{
		{"list", "[--prefix P] [--deleted]", "list subjects with their latest version, id and type", schemaList},
		{"get", "SUBJECT [--version N|latest] [--schema-only] | --id ID", "print a subject's version (or a schema by id)", schemaGet},
		{"register", "SUBJECT (--schema-file FILE | --schema TEXT) [--type AVRO|PROTOBUF|JSON] [--reference NAME=SUBJECT:VERSION]... [--normalize]",
			"register a schema under a subject; prints its id", schemaRegister},
		{"delete", "SUBJECT [--version N|latest] [--permanent]", "delete a subject, or one version (soft, then --permanent)", schemaDelete},
		{"compat", "SUBJECT (--schema-file FILE | --schema TEXT) [--type ...] [--reference ...] [--version N|latest|all]",
			"check a schema against the subject's versions (exit 1 when incompatible)", schemaCompat},
		{"config", "[SUBJECT] [--set LEVEL | --delete]", "show, set or delete the compatibility level (global, or the subject's)", schemaConfig},
	}
	printUsage := func() {
		fmt.Fprintf(stderr, "usage: sluice schema SUBCOMMAND [flags]\n\nsubcommands:\n")
		for _, s := range subs {
			fmt.Fprintf(stderr, "  %-14s %s\n", s.name, s.summary)
		}
		fmt.Fprintf(stderr, "\nrun 'sluice schema SUBCOMMAND --help' for its flags\n")
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
		c := newSchemaCmd("schema "+s.name, s.synopsis, args[1:], stdout, stderr)
		err := s.run(c)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "sluice schema %s: %s\n", s.name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
			return 2
		case errors.Is(err, errFlags):
			return 2
		default:
			fmt.Fprintf(stderr, "sluice schema %s: %v\n", s.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "sluice schema: unknown subcommand %q\n", args[0])
	printUsage()
	return 2
}

type schemaSub struct {
	name, synopsis, summary string
	run                     func(c *schemaCmdRun) error
}

// schemaCmdRun is one run of a schema subcommand: its flags (the
// connection flags registered), its arguments and where it writes.
type schemaCmdRun struct {
	flags          *flag.FlagSet
	args           []string
	stdout, stderr io.Writer

	registry       string
	user, password string
	caFile         string
	timeout        time.Duration
	hc             *http.Client
}

func newSchemaCmd(name, synopsis string, args []string, stdout, stderr io.Writer) *schemaCmdRun {
	c := &schemaCmdRun{flags: newFlagSet(name, synopsis, stderr), args: args, stdout: stdout, stderr: stderr}
	c.flags.StringVar(&c.registry, "registry", defaultRegistry, "schema registry `URL` (http:// or https://)")
	c.flags.StringVar(&c.user, "user", "", "basic auth `user`: one of the broker's SASL users (PLAIN or SCRAM)")
	c.flags.StringVar(&c.password, "password", "", "basic auth `password` (default: $SLUICE_SCHEMA_REGISTRY_PASSWORD)")
	c.flags.StringVar(&c.caFile, "ca-file", "", "PEM `file` of the CA that signed an https registry's certificate (default: the system's)")
	c.flags.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up on the registry after this long")
	return c
}

// parse parses the flags (allowed after the positional arguments) and
// returns the positional arguments once check accepts them.
func (c *schemaCmdRun) parse(check argsCheck) ([]string, error) {
	pos, err := parsePositional(c.flags, c.args, check)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(c.registry)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErr("--registry %q is not http://host:port or https://host:port", c.registry)
	}
	if c.password == "" {
		c.password = os.Getenv("SLUICE_SCHEMA_REGISTRY_PASSWORD")
	}
	if c.user == "" && c.password != "" {
		return nil, usageErr("--password without --user")
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", c.caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c.hc = &http.Client{Timeout: c.timeout, Transport: tr}
	return pos, nil
}

// registryError is an error answer of the registry, Confluent's body.
type registryError struct {
	Status  int
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *registryError) Error() string {
	msg := fmt.Sprintf("error %d: %s", e.Code, e.Message)
	switch e.Status {
	case http.StatusUnauthorized:
		msg += " (log in with --user and --password)"
	case http.StatusForbidden:
		msg += " (the user's ACLs do not allow it)"
	}
	return msg
}

// do sends method path (query and all) with body (JSON-encoded unless
// nil) and decodes the answer into out (nil: ignored).
func (c *schemaCmdRun) do(method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		enc, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.registry, "/")+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.password)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no answer from %s within %v (is the schema registry running there?)", c.registry, c.timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		return fmt.Errorf("%s %s: %w", method, c.registry+path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxRegistryAnswer))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, c.registry+path, err)
	}
	if resp.StatusCode/100 != 2 {
		re := &registryError{Status: resp.StatusCode}
		if json.Unmarshal(raw, re) != nil || re.Code == 0 {
			re.Code, re.Message = resp.StatusCode, strings.TrimSpace(string(raw))
		}
		return re
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not what a schema registry sends: %w", method, c.registry+path, err)
	}
	return nil
}

// subjectVersion is a version as GET /subjects/{s}/versions/{v} and GET
// /schemas answer it.
type subjectVersion struct {
	Subject    string            `json:"subject"`
	Version    int               `json:"version"`
	ID         int               `json:"id"`
	SchemaType string            `json:"schemaType,omitempty"`
	References []schemaReference `json:"references,omitempty"`
	Schema     string            `json:"schema"`
	Deleted    bool              `json:"deleted,omitempty"`
}

type schemaReference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func typeOrAvro(t string) string {
	if t == "" {
		return "AVRO"
	}
	return t
}

func schemaList(c *schemaCmdRun) error {
	var prefix string
	var deleted bool
	c.flags.StringVar(&prefix, "prefix", "", "only subjects whose name starts with `prefix`")
	c.flags.BoolVar(&deleted, "deleted", false, "include soft-deleted subjects and versions")
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	q := url.Values{"latestOnly": {"true"}}
	if prefix != "" {
		q.Set("subjectPrefix", prefix)
	}
	if deleted {
		q.Set("deleted", "true")
	}
	var vs []subjectVersion
	if err := c.do("GET", "/schemas?"+q.Encode(), nil, &vs); err != nil {
		return err
	}
	t := newTable(c.stdout, "SUBJECT", "LATEST", "ID", "TYPE")
	for _, v := range vs {
		latest := strconv.Itoa(v.Version)
		if v.Deleted {
			latest += " (deleted)"
		}
		t.row(v.Subject, latest, strconv.Itoa(v.ID), typeOrAvro(v.SchemaType))
	}
	t.flush()
	return nil
}

// versionArg checks a --version value: latest, -1 or a positive number.
func versionArg(v string, all bool) (string, error) {
	if v == "latest" || (all && v == "all") {
		return v, nil
	}
	if n, err := strconv.Atoi(v); err == nil && (n >= 1 || n == -1) {
		return v, nil
	}
	if all {
		return "", usageErr("--version %q is not a version number, latest or all", v)
	}
	return "", usageErr("--version %q is not a version number or latest", v)
}

func schemaGet(c *schemaCmdRun) error {
	var version string
	var id int
	var only bool
	c.flags.StringVar(&version, "version", "latest", "the `version`: a number or latest")
	c.flags.IntVar(&id, "id", 0, "print the schema with this `id` instead (no SUBJECT)")
	c.flags.BoolVar(&only, "schema-only", false, "print the schema text only")
	pos, err := c.parse(anyArgs)
	if err != nil {
		return err
	}
	if id != 0 {
		if len(pos) != 0 {
			return usageErr("--id takes no SUBJECT")
		}
		var s subjectVersion
		if err := c.do("GET", "/schemas/ids/"+strconv.Itoa(id), nil, &s); err != nil {
			return err
		}
		var uses []struct {
			Subject string `json:"subject"`
			Version int    `json:"version"`
		}
		if !only {
			if err := c.do("GET", "/schemas/ids/"+strconv.Itoa(id)+"/versions", nil, &uses); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "ID: %d\nType: %s\n", id, typeOrAvro(s.SchemaType))
			for _, u := range uses {
				fmt.Fprintf(c.stdout, "Used by: %s version %d\n", u.Subject, u.Version)
			}
			printReferences(c.stdout, s.References)
		}
		fmt.Fprintln(c.stdout, s.Schema)
		return nil
	}
	if err := exactlyOne("subject")(pos); err != nil {
		return err
	}
	if version, err = versionArg(version, false); err != nil {
		return err
	}
	var s subjectVersion
	if err := c.do("GET", "/subjects/"+url.PathEscape(pos[0])+"/versions/"+version, nil, &s); err != nil {
		return err
	}
	if !only {
		fmt.Fprintf(c.stdout, "Subject: %s\nVersion: %d\nID: %d\nType: %s\n", s.Subject, s.Version, s.ID, typeOrAvro(s.SchemaType))
		printReferences(c.stdout, s.References)
	}
	fmt.Fprintln(c.stdout, s.Schema)
	return nil
}

func printReferences(w io.Writer, refs []schemaReference) {
	for _, r := range refs {
		fmt.Fprintf(w, "Reference: %s=%s:%d\n", r.Name, r.Subject, r.Version)
	}
}

// schemaInput is the schema a register or compat command sends.
type schemaInput struct {
	file, text, typ string
	refs            stringList
	normalize       bool
}

func (in *schemaInput) register(fs *flag.FlagSet) {
	fs.StringVar(&in.file, "schema-file", "", "read the schema from `file` (- for stdin)")
	fs.StringVar(&in.text, "schema", "", "the schema `text`")
	fs.StringVar(&in.typ, "type", "AVRO", "schema `type`: AVRO, PROTOBUF or JSON")
	fs.Var(&in.refs, "reference", "a reference `NAME=SUBJECT:VERSION` (repeatable; VERSION may be latest)")
	fs.BoolVar(&in.normalize, "normalize", false, "normalize the schema before comparing it with those registered")
}

// body reads the schema and builds the request body.
func (in *schemaInput) body(stdin io.Reader) (map[string]any, error) {
	if (in.file == "") == (in.text == "") {
		return nil, usageErr("give the schema with exactly one of --schema-file and --schema")
	}
	text := in.text
	if in.file != "" {
		var b []byte
		var err error
		if in.file == "-" {
			b, err = io.ReadAll(io.LimitReader(stdin, maxRegistryAnswer))
		} else {
			b, err = os.ReadFile(in.file)
		}
		if err != nil {
			return nil, fmt.Errorf("--schema-file: %w", err)
		}
		text = string(b)
	}
	typ := strings.ToUpper(in.typ)
	switch typ {
	case "AVRO", "PROTOBUF", "JSON":
	default:
		return nil, usageErr("--type %q is not AVRO, PROTOBUF or JSON", in.typ)
	}
	body := map[string]any{"schema": text}
	if typ != "AVRO" {
		body["schemaType"] = typ
	}
	var refs []schemaReference
	for _, r := range in.refs {
		name, rest, ok1 := strings.Cut(r, "=")
		i := strings.LastIndexByte(rest, ':') // a subject may hold ':'
		ok2 := i >= 0
		var subject, version string
		if ok2 {
			subject, version = rest[:i], rest[i+1:]
		}
		v, err := strconv.Atoi(version)
		if version == "latest" {
			v, err = -1, nil
		}
		if !ok1 || !ok2 || name == "" || subject == "" || err != nil || (v < 1 && v != -1) {
			return nil, usageErr("--reference %q is not NAME=SUBJECT:VERSION", r)
		}
		refs = append(refs, schemaReference{Name: name, Subject: subject, Version: v})
	}
	if len(refs) > 0 {
		body["references"] = refs
	}
	return body, nil
}

func schemaRegister(c *schemaCmdRun) error {
	var in schemaInput
	in.register(c.flags)
	pos, err := c.parse(exactlyOne("subject"))
	if err != nil {
		return err
	}
	body, err := in.body(os.Stdin)
	if err != nil {
		return err
	}
	path := "/subjects/" + url.PathEscape(pos[0]) + "/versions"
	if in.normalize {
		path += "?normalize=true"
	}
	var out struct {
		ID int `json:"id"`
	}
	if err := c.do("POST", path, body, &out); err != nil {
		return err
	}
	// The version it has: a lookup of the same schema (registering it
	// again would answer the same id and no version).
	var sv subjectVersion
	lookup := "/subjects/" + url.PathEscape(pos[0])
	if in.normalize {
		lookup += "?normalize=true"
	}
	if err := c.do("POST", lookup, body, &sv); err != nil {
		fmt.Fprintf(c.stdout, "Registered under subject %s: id %d.\n", pos[0], out.ID)
		return nil
	}
	fmt.Fprintf(c.stdout, "Registered under subject %s: version %d, id %d.\n", pos[0], sv.Version, out.ID)
	return nil
}

func schemaDelete(c *schemaCmdRun) error {
	var version string
	var permanent bool
	c.flags.StringVar(&version, "version", "", "delete only this `version` (a number or latest)")
	c.flags.BoolVar(&permanent, "permanent", false, "delete permanently (after a soft delete), as permanent=true")
	pos, err := c.parse(exactlyOne("subject"))
	if err != nil {
		return err
	}
	q := ""
	if permanent {
		q = "?permanent=true"
	}
	s := url.PathEscape(pos[0])
	how := "Soft-deleted"
	if permanent {
		how = "Permanently deleted"
	}
	if version != "" {
		if version, err = versionArg(version, false); err != nil {
			return err
		}
		var v int
		if err := c.do("DELETE", "/subjects/"+s+"/versions/"+version+q, nil, &v); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s subject %s version %d.\n", how, pos[0], v)
		return nil
	}
	var vs []int
	if err := c.do("DELETE", "/subjects/"+s+q, nil, &vs); err != nil {
		return err
	}
	strs := make([]string, len(vs))
	for i, v := range vs {
		strs[i] = strconv.Itoa(v)
	}
	fmt.Fprintf(c.stdout, "%s subject %s: versions %s.\n", how, pos[0], strings.Join(strs, ","))
	return nil
}

// errIncompatible: compat found the schema incompatible (exit 1).
var errIncompatible = errors.New("the schema is incompatible")

func schemaCompat(c *schemaCmdRun) error {
	var in schemaInput
	in.register(c.flags)
	var version string
	c.flags.StringVar(&version, "version", "all", "check against this `version` (a number or latest), or all: the versions the subject's level names")
	pos, err := c.parse(exactlyOne("subject"))
	if err != nil {
		return err
	}
	if version, err = versionArg(version, true); err != nil {
		return err
	}
	body, err := in.body(os.Stdin)
	if err != nil {
		return err
	}
	path := "/compatibility/subjects/" + url.PathEscape(pos[0]) + "/versions"
	if version != "all" {
		path += "/" + version
	}
	path += "?verbose=true"
	if in.normalize {
		path += "&normalize=true"
	}
	var out struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages"`
	}
	if err := c.do("POST", path, body, &out); err != nil {
		return err
	}
	if out.IsCompatible {
		fmt.Fprintln(c.stdout, "Compatible.")
		return nil
	}
	fmt.Fprintln(c.stdout, "Incompatible:")
	for _, m := range out.Messages {
		fmt.Fprintf(c.stdout, "  %s\n", m)
	}
	return errIncompatible
}

var compatibilityLevels = []string{"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}

func schemaConfig(c *schemaCmdRun) error {
	var set string
	var del bool
	c.flags.StringVar(&set, "set", "", "set the compatibility `level`: "+strings.Join(compatibilityLevels, ", "))
	c.flags.BoolVar(&del, "delete", false, "delete the level (a subject then follows the global one; the global one returns to BACKWARD)")
	pos, err := c.parse(anyArgs)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErr("at most one subject, got %d", len(pos))
	}
	if set != "" && del {
		return usageErr("--set and --delete together")
	}
	path, what := "/config", "Global"
	if len(pos) == 1 {
		path, what = "/config/"+url.PathEscape(pos[0]), "Subject "+pos[0]
	}
	switch {
	case set != "":
		level := strings.ToUpper(set)
		ok := false
		for _, l := range compatibilityLevels {
			ok = ok || l == level
		}
		if !ok {
			return usageErr("--set %q is not one of %s", set, strings.Join(compatibilityLevels, ", "))
		}
		if err := c.do("PUT", path, map[string]string{"compatibility": level}, nil); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s compatibility: %s.\n", what, level)
	case del:
		var out struct {
			Level string `json:"compatibilityLevel"`
		}
		if err := c.do("DELETE", path, nil, &out); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s compatibility deleted (was %s).\n", what, out.Level)
	default:
		var out struct {
			Level string `json:"compatibilityLevel"`
		}
		q := ""
		if len(pos) == 1 {
			// The subject's own level, else the global one it follows.
			if err := c.do("GET", path, nil, &out); err == nil {
				fmt.Fprintf(c.stdout, "%s compatibility: %s.\n", what, out.Level)
				return nil
			} else if re := (*registryError)(nil); !errors.As(err, &re) || re.Code != 40408 {
				return err
			}
			q = "?defaultToGlobal=true"
			what += " (the global level)"
		}
		if err := c.do("GET", path+q, nil, &out); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s compatibility: %s.\n", what, out.Level)
	}
	return nil
}
