// Command gen writes registry.json, the JSON form of the requirement
// registry's YAML files (requirements.Registry.Generate), which the build
// embeds. Run by `go generate ./internal/requirements`; a test fails when
// registry.json is not the YAML files' conversion.
package main

import (
	"fmt"
	"os"

	"github.com/harn-conform/conform/internal/requirements"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	m, err := requirements.YAMLFiles()
	if err != nil {
		return err
	}
	reg, err := requirements.Parse(m)
	if err != nil {
		return err
	}
	b, err := reg.Generate()
	if err != nil {
		return err
	}
	return os.WriteFile("registry.json", b, 0o644)
}
