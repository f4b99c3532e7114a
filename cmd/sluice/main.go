// Command sluice is the Sluice broker and its tools:
//
//	sluice serve [--config server.properties] [--set key=value ...]
//	sluice dump-log [--deep] [--print-data-log] FILE...
package main

import (
	"fmt"
	"io"
	"os"
)

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"serve", "run a broker", serve},
		{"dump-log", "print the batches of a segment file and its index entries", dumpLog},
		{"perf", "load-test a broker: perf produce|consume|e2e", perf},
		{"topic", "create, list, describe, delete topics and alter their configs", topicCmd},
		{"group", "list, describe (with lag), delete consumer groups and reset their offsets", groupCmd},
		{"share-group", "list, describe, delete share groups (kafka-share-groups.sh)", shareGroupCmd},
		{"acl", "add, list, remove ACL bindings (kafka-acls.sh)", aclCmd},
		{"user", "create, list, delete SCRAM credentials", userCmd},
		{"quota", "set, describe, remove client quotas (kafka-configs.sh --entity-type users|clients)", quotaCmd},
		{"cert", "create a CA, broker and client certificates for TLS listeners", certCmd},
		{"zk", "set-acls: secure (or open) an existing cluster's znodes in ZooKeeper", zkCmd},
		{"broker", "config set|describe|delete: dynamic broker configs (kafka-configs.sh --entity-type brokers)", brokerCmd},
		{"partitions", "reassign: move partitions between brokers (kafka-reassign-partitions.sh)", partitionsCmd},
		{"schema", "list, get, register, delete, compat, config: the schema registry over its REST API", schemaCmd},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice COMMAND [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}
