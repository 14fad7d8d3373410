package acpharbor

import (
	"log/slog"
	"os"
	"testing"

	"github.com/harn-conform/conform/internal/testmain"
)

func TestMain(m *testing.M) {
	testmain.Setup()
	// The SDK logs through slog.Default: its "connection closed" lines at
	// INFO, one per test connection, are noise in -v output; warnings and
	// errors still show.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}
