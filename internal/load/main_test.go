package load

import (
	"testing"

	"github.com/harn-conform/conform/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Main(m) }
