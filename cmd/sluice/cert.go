package main

// `sluice cert`: a certificate authority, broker certificates and client
// certificates for TLS listeners, for local use and tests (package
// auth/certs). It prints the properties that use the files it wrote.

import (
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice/sluice/auth/certs"
)

const certUsage = `usage: sluice cert SUBCOMMAND [flags]

subcommands:
  ca       --out DIR [--cn NAME] [--days N] [--key-type ecdsa|rsa] [--force]
           create a CA: DIR/ca.crt and DIR/ca.key
  broker   --ca DIR --hosts HOST,IP,... --out DIR [--name broker] [--days N] [--key-type ecdsa|rsa]
           issue a broker certificate for the hosts (DNS names and IP addresses)
  client   --ca DIR --name CN --out DIR [--ou OU] [--org O] [--days N] [--key-type ecdsa|rsa]
           issue a client certificate; the broker sees User:CN=CN[,OU=OU][,O=O]

Each of broker and client writes into --out: NAME.keystore.pem (key and
certificate, for ssl.keystore.location with ssl.keystore.type=PEM), NAME.crt
and NAME.key (ssl.certificate.location and ssl.key.location of librdkafka
clients) and ca.crt (ssl.truststore.location, ssl.ca.location). Keys are
written unencrypted with mode 0600. A running broker picks up a rewritten
keystore on its own.

run 'sluice cert SUBCOMMAND --help' for its flags
`

func certCmd(args []string, stdout, stderr io.Writer) int {
	err := runCert(args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errFlags):
		return 2
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "sluice cert: %s\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return 2
	default:
		fmt.Fprintf(stderr, "sluice cert: %v\n", err)
		return 1
	}
}

// runCert runs "sluice cert args...": see certUsage.
func runCert(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, certUsage)
		return usageErr("name a subcommand: ca, broker or client")
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, certUsage)
		return nil
	}
	sub := args[0]
	var synopsis string
	switch sub {
	case "ca":
		synopsis = "--out DIR [--cn NAME] [--days N] [--key-type ecdsa|rsa] [--force]"
	case "broker":
		synopsis = "--ca DIR --hosts HOST,IP,... --out DIR [--name broker] [--days N] [--key-type ecdsa|rsa]"
	case "client":
		synopsis = "--ca DIR --name CN --out DIR [--ou OU] [--org O] [--days N] [--key-type ecdsa|rsa]"
	default:
		fmt.Fprint(stderr, certUsage)
		return usageErr("unknown subcommand %q", sub)
	}
	fs := newFlagSet("cert "+sub, synopsis, stderr)
	out := fs.String("out", "", "write the files into `DIR` (created if missing)")
	days := fs.Int("days", 0, "validity in `days` (default 3650 for a CA, 365 otherwise)")
	keyType := fs.String("key-type", "ecdsa", "key algorithm: `ecdsa` (P-256) or rsa (2048 bits)")
	var caDir, hosts, name, ou, org, cn *string
	var force *bool
	switch sub {
	case "ca":
		cn = fs.String("cn", "Sluice CA", "the CA's common `name`")
		force = fs.Bool("force", false, "replace an existing CA in --out (certificates it issued stop being trusted)")
	case "broker":
		caDir = fs.String("ca", "", "`DIR` holding ca.crt and ca.key")
		hosts = fs.String("hosts", "", "comma-separated DNS names and IP addresses the broker answers on; the first is its CN")
		name = fs.String("name", "broker", "file `name` prefix")
	case "client":
		caDir = fs.String("ca", "", "`DIR` holding ca.crt and ca.key")
		name = fs.String("name", "", "the client's common `name` (and file name prefix)")
		ou = fs.String("ou", "", "organizational `unit` in the subject")
		org = fs.String("org", "", "`organization` in the subject")
	}
	pos, err := parseInterspersed(fs, args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		return err
	case err != nil:
		return errFlags
	case len(pos) != 0:
		return usageErr("unexpected argument %q", pos[0])
	case *out == "":
		return usageErr("%s: --out is required", sub)
	case *days < 0:
		return usageErr("--days must be positive")
	}
	kt, err := certs.ParseKeyType(*keyType)
	if err != nil {
		return usageErr("--key-type: %v", err)
	}
	opts := certs.Options{KeyType: kt, Validity: time.Duration(*days) * 24 * time.Hour}
	if sub == "ca" {
		return certCA(stdout, *out, *cn, *force, opts)
	}
	if *caDir == "" {
		return usageErr("%s: --ca is required", sub)
	}
	if *name == "" {
		return usageErr("%s: --name is required", sub)
	}
	var hostList []string
	if sub == "broker" {
		for _, h := range strings.Split(*hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hostList = append(hostList, h)
			}
		}
		if len(hostList) == 0 {
			return usageErr("broker: --hosts is required")
		}
	}
	ca, err := certs.LoadCA(*caDir)
	if err != nil {
		return err
	}
	var b *certs.Bundle
	if sub == "broker" {
		b, err = ca.IssueServer(hostList, opts)
	} else {
		subject := pkix.Name{CommonName: *name}
		if *ou != "" {
			subject.OrganizationalUnit = []string{*ou}
		}
		if *org != "" {
			subject.Organization = []string{*org}
		}
		b, err = ca.IssueClient(subject, opts)
	}
	if err != nil {
		return err
	}
	paths, err := b.WriteFiles(*out, *name, ca)
	if err != nil {
		return err
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	fmt.Fprintf(stdout, "wrote %s, %s, %s and %s\n", paths.Keystore, paths.Cert, paths.Key, paths.CA)
	fmt.Fprintf(stdout, "subject %s, valid until %s\n\n", b.Cert.Subject, b.Cert.NotAfter.Format(time.RFC3339))
	if sub == "broker" {
		fmt.Fprintf(stdout, "# server.properties\nssl.keystore.type=PEM\nssl.keystore.location=%s\nssl.truststore.type=PEM\nssl.truststore.location=%s\n",
			abs(paths.Keystore), abs(paths.CA))
		return nil
	}
	fmt.Fprintf(stdout, "# client properties (--command-config, kcat -F)\nsecurity.protocol=SSL\nssl.ca.location=%s\nssl.certificate.location=%s\nssl.key.location=%s\n",
		abs(paths.CA), abs(paths.Cert), abs(paths.Key))
	return nil
}

func certCA(stdout io.Writer, dir, cn string, force bool, opts certs.Options) error {
	if _, err := os.Stat(filepath.Join(dir, certs.CAKeyFile)); err == nil && !force {
		return fmt.Errorf("%s already exists; pass --force to replace the CA", filepath.Join(dir, certs.CAKeyFile))
	}
	ca, err := certs.NewCA(cn, opts)
	if err != nil {
		return err
	}
	if err := ca.WriteCA(dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s (keep ca.key private)\nsubject %s, valid until %s\n",
		filepath.Join(dir, certs.CACertFile), filepath.Join(dir, certs.CAKeyFile), ca.Cert.Subject, ca.Cert.NotAfter.Format(time.RFC3339))
	return nil
}
