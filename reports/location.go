package reports

import (
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// modulePath is this module's import path: a -trimpath build, or one from
// the module cache, names source files by it.
const modulePath = "github.com/harn-conform/conform"

// moduleRoot is the directory this package was compiled from, less
// "reports": the module root of the build ("" when unknown).
var moduleRoot = func() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	dir := path.Dir(filepath.ToSlash(file))
	if path.Base(dir) != "reports" {
		return ""
	}
	return path.Dir(dir)
}()

// topDirs are the module's top-level source directories, for a path built
// neither here nor from the module cache.
var topDirs = []string{"suites", "internal", "reports", "cmd", "refharness", "fixtures"}

// Location renders a spec's source location relative to the module root
// ("suites/core/tasks.go:42"), never the builder's absolute path.
func Location(cl types.CodeLocation) string {
	if cl.FileName == "" {
		return ""
	}
	return RelPath(cl.FileName) + ":" + strconv.Itoa(cl.LineNumber)
}

// RelPath makes a source file name relative to the module root: the build's
// own root, else the module path (a -trimpath build, or the module cache's
// "module@version/"), else from the last top-level source directory of the
// module in it; a name none of these match keeps only its base name.
func RelPath(name string) string {
	// Backslashes too: a location recorded on Windows may be read anywhere.
	p := strings.ReplaceAll(filepath.ToSlash(name), `\`, "/")
	if moduleRoot != "" {
		if rest, ok := strings.CutPrefix(p, moduleRoot+"/"); ok {
			return rest
		}
	}
	if i := strings.LastIndex(p, modulePath); i >= 0 {
		rest := p[i+len(modulePath):]
		if strings.HasPrefix(rest, "@") { // module cache: module@version/...
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				rest = rest[j:]
			} else {
				rest = ""
			}
		}
		if rest = strings.TrimPrefix(rest, "/"); rest != "" {
			return rest
		}
	}
	best := -1
	for _, d := range topDirs {
		if strings.HasPrefix(p, d+"/") && best < 0 {
			best = 0
		}
		if i := strings.LastIndex(p, "/"+d+"/"); i+1 > best && i >= 0 {
			best = i + 1
		}
	}
	if best >= 0 {
		return p[best:]
	}
	return path.Base(p)
}
