// Command configdoc rewrites README.md's configuration tables from the
// definition table in package config:
//
//	go run ./config/cmd/configdoc [README.md]
//
// Only the text between each table's markers (config.BrokerTableBegin ...
// config.BrokerTableEnd, and the topic table's) changes.
package main

import (
	"fmt"
	"os"

	"github.com/sluice/sluice/config"
)

func main() {
	path := "README.md"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if err := run(path); err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := config.ReplaceDocTables(string(b))
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
