// Command gen writes registry.json, the JSON form of the requirement
// registry's YAML files (requirements.Registry.Generate), which the build
// embeds. Run by `go generate ./internal/requirements`; a test fails when
// registry.json is not the YAML files' conversion.
package main

import (
	"github.com/harn-conform/conform/internal/genfiles"
	"github.com/harn-conform/conform/internal/requirements"
)

func main() { genfiles.Main(".", build) }

func build() (map[string][]byte, error) {
	m, err := requirements.YAMLFiles()
	if err != nil {
		return nil, err
	}
	reg, err := requirements.Parse(m)
	if err != nil {
		return nil, err
	}
	b, err := reg.Generate()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"registry.json": b}, nil
}
