//go:build !race

package testmain

// RaceEnabled: see race.go.
const RaceEnabled = false
