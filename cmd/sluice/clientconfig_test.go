package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/auth/certs"
)

func TestClientConfig(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("test CA", certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, certs.CACertFile)

	for _, tc := range []struct {
		name      string
		file      string
		wantSeeds []string
		wantOpts  int    // kgo options beyond the seeds
		wantErr   string // substring of the error: the key at fault
		wantWarn  string
	}{
		{name: "empty", file: ""},
		{name: "plaintext", file: "bootstrap.servers=a:1, b:2\nsecurity.protocol=plaintext\n", wantSeeds: []string{"a:1", "b:2"}},
		{name: "metadata.broker.list", file: "metadata.broker.list=a:1\n", wantSeeds: []string{"a:1"}},
		{name: "client.id", file: "client.id=me\n", wantOpts: 1},
		{name: "ssl", file: "security.protocol=SSL\nssl.ca.location=" + caFile + "\n", wantOpts: 1},
		{name: "sasl_ssl scram", file: "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=u\nsasl.password=p\nssl.ca.location=" + caFile + "\n", wantOpts: 2},
		{name: "sasl_plaintext plain via sasl.mechanisms", file: "security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\nsasl.username=u\nsasl.password=p\n", wantOpts: 1},
		{name: "unknown keys warn", file: "linger.ms=5\nsecurity.protocol=PLAINTEXT\n", wantWarn: "line 1: linger.ms"},
		{name: "bad protocol", file: "security.protocol=TLS\n", wantErr: "security.protocol"},
		{name: "empty bootstrap", file: "bootstrap.servers= , \n", wantErr: "bootstrap.servers"},
		{name: "sasl without mechanism", file: "security.protocol=SASL_SSL\nsasl.username=u\nsasl.password=p\n", wantErr: "sasl.mechanism"},
		{name: "sasl gssapi", file: "security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=GSSAPI\nsasl.username=u\nsasl.password=p\n", wantErr: "sasl.mechanisms"},
		{name: "sasl without password", file: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\n", wantErr: "sasl.password"},
		{name: "missing ca file", file: "security.protocol=SSL\nssl.ca.location=" + filepath.Join(dir, "nope.crt") + "\n", wantErr: "ssl.ca.location"},
		{name: "bad endpoint identification", file: "security.protocol=SSL\nssl.endpoint.identification.algorithm=dns\n", wantErr: "ssl.endpoint.identification.algorithm"},
		{name: "certificate without key", file: "security.protocol=SSL\nssl.certificate.location=" + caFile + "\n", wantErr: "ssl.key.location"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = filepath.Join(t.TempDir(), "client.properties")
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var warn bytes.Buffer
			cc, err := loadClientConfig(path, &warn)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cc.seeds, tc.wantSeeds) || len(cc.opts) != tc.wantOpts {
				t.Errorf("seeds %q, %d options; want %q, %d", cc.seeds, len(cc.opts), tc.wantSeeds, tc.wantOpts)
			}
			if !strings.Contains(warn.String(), tc.wantWarn) || tc.wantWarn == "" && warn.Len() > 0 {
				t.Errorf("warnings %q, want %q", warn.String(), tc.wantWarn)
			}
		})
	}
}

func TestClientSeeds(t *testing.T) {
	withSeeds := clientConfig{seeds: []string{"file:1"}}
	for _, tc := range []struct {
		name string
		flag string
		cc   clientConfig
		want []string
	}{
		{"flag wins", "flag:1,flag:2", withSeeds, []string{"flag:1", "flag:2"}},
		{"file", "", withSeeds, []string{"file:1"}},
		{"default", "", clientConfig{}, []string{defaultBootstrap}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clientSeeds(tc.flag, tc.cc); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
