package main

// `sluice zk set-acls`, after Kafka's zookeeper-security-migration.sh
// (kafka.admin.ZkSecurityMigrator): it sets the ACLs of an existing
// cluster's znodes to Kafka's secure ACLs (--zookeeper.acl=secure) or
// opens them again (unsecure). It reads the broker's config for
// zookeeper.connect and the ZooKeeper identity and TLS keys, so it
// authenticates as the brokers do.
//
// Securing a running cluster, as in Kafka: restart the brokers one by one
// with zookeeper.auth.digest (every broker the same identity), then again
// with zookeeper.set.acl=true, then run this once.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/config"
)

func zkCmd(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, `usage: sluice zk set-acls --zookeeper.acl=secure|unsecure [--config server.properties] [--set key=value ...] [--zookeeper.connect HOSTS/CHROOT]

  set-acls  set the ACL of the chroot and of every znode under Kafka's paths:
            secure: all rights for the identity of zookeeper.auth.digest (or the
            TLS client certificate), read for everyone except /config/users,
            /config/brokers and delegation tokens; unsecure: open to all`)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] != "set-acls" {
		fmt.Fprintf(stderr, "sluice zk: unknown subcommand %q\n", args[0])
		usage()
		return 2
	}
	fs := flag.NewFlagSet("zk set-acls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "the broker's server.properties (zookeeper.connect, zookeeper.auth.digest, zookeeper.ssl.*)")
	var sets stringList
	fs.Var(&sets, "set", "key=value overriding the config file (repeatable)")
	connect := fs.String("zookeeper.connect", "", "overrides zookeeper.connect")
	mode := fs.String("zookeeper.acl", "", "secure or unsecure (required)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice zk set-acls: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var secure bool
	switch strings.ToLower(*mode) {
	case "secure":
		secure = true
	case "unsecure":
	default:
		fmt.Fprintf(stderr, "sluice zk set-acls: --zookeeper.acl %q: want secure or unsecure\n", *mode)
		return 2
	}
	if *connect != "" {
		sets = append(sets, "zookeeper.connect="+*connect)
	}
	cfg, err := config.Load(*cfgPath, sets)
	if err != nil {
		fmt.Fprintf(stderr, "sluice zk set-acls: %v\n", err)
		return 2
	}
	if cfg.ZooKeeperConnect == "" {
		fmt.Fprintln(stderr, "sluice zk set-acls: no zookeeper.connect (in --config, --set or --zookeeper.connect)")
		return 2
	}
	sec, err := cluster.ZkSecurityFrom(&cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sluice zk set-acls: %v\n", err)
		return 1
	}
	sec.SetACL = secure
	res, err := cluster.SetACLs(context.Background(), cluster.SetACLsOptions{
		ZkConnect: cfg.ZooKeeperConnect,
		Security:  sec,
		Logger:    slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if slices.Contains(res.Missing, "/brokers") {
		// Kafka's paths a cluster does not use yet are missing too; only
		// a missing /brokers says there is no cluster here.
		fmt.Fprintf(stderr, "sluice zk set-acls: no /brokers under %s: is the chroot right? (missing: %s)\n", cfg.ZooKeeperConnect, strings.Join(res.Missing, ", "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice zk set-acls: %v (after %d znodes)\n", err, res.Updated)
		return 1
	}
	fmt.Fprintf(stdout, "set the %s ACL of %d znodes\n", *mode, res.Updated)
	return 0
}
