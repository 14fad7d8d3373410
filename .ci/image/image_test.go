package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fakeProgram is a static Go program standing in for conform and busybox:
// it prints its name and arguments, so a test can tell which one ran.
const fakeProgram = `package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() { fmt.Println(filepath.Base(os.Args[0]), os.Args[1:]) }
`

var (
	fakeOnce sync.Once
	fakeBins map[string]string // arch → a static binary
	fakeErr  error
)

// fakeBinary is fakeProgram built static for arch.
func fakeBinary(t *testing.T, arch string) string {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "conform-image-test")
		if err != nil {
			fakeErr = err
			return
		}
		src := filepath.Join(dir, "main.go")
		if fakeErr = os.WriteFile(src, []byte(fakeProgram), 0o644); fakeErr != nil {
			return
		}
		fakeBins = map[string]string{}
		for _, a := range []string{"amd64", "arm64"} {
			out := filepath.Join(dir, "fake-"+a)
			cmd := exec.Command("go", "build", "-o", out, src)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+a, "GOFLAGS=-buildvcs=false")
			if b, err := cmd.CombinedOutput(); err != nil {
				fakeErr = err
				fakeBins = nil
				t.Logf("%s", b)
				return
			}
			fakeBins[a] = out
		}
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	return fakeBins[arch]
}

func options(t *testing.T) Options {
	t.Helper()
	return Options{
		Version: "9.8.7", Commit: "0123456789abcdef0123456789abcdef01234567",
		Busybox: "1:1.0-test", BusyboxCopyright: []byte("busybox copyright\n"), BusyboxApplets: []string{"[", "cat", "sh", "sleep"},
		Created: time.Unix(1700000000, 0).UTC(),
		Platforms: []Platform{
			{OS: "linux", Arch: "arm64", Conform: fakeBinary(t, "arm64"), Busybox: fakeBinary(t, "arm64")},
			{OS: "linux", Arch: "amd64", Conform: fakeBinary(t, "amd64"), Busybox: fakeBinary(t, "amd64")},
		},
	}
}

// The layout holds one index named by the version, with an image per
// platform; each image's configuration runs conform as nonroot in /work
// with /bin on PATH; unpacked, it holds /bin/sh (a link to busybox),
// conform, the users, a CA bundle Go can parse, a sticky /tmp and a /work
// nonroot owns; and the shell and conform run from the unpacked layers.
// The same inputs make the same digest.
func TestBuildAndUnpack(t *testing.T) {
	o := options(t)
	idx, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	if err := WriteLayout(dir, idx, o.Version); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(dir, idx, o.Version); err == nil {
		t.Error("WriteLayout over an existing directory did not refuse")
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].MediaType != types.OCIImageIndex || tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "9.8.7" {
		t.Fatalf("index.json = %+v, want one OCI index named 9.8.7", tm.Manifests)
	}
	child, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := child.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var plats []string
	for _, m := range cm.Manifests {
		plats = append(plats, m.Platform.OS+"/"+m.Platform.Architecture)
		if m.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%v: media type %s, want an OCI manifest", m.Platform, m.MediaType)
		}
	}
	if !slices.Equal(plats, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", plats)
	}

	again, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := idx.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: %s and %s", d1, d2)
	}

	for _, arch := range []string{"amd64", "arm64"} {
		img, err := FindImage(dir, "linux/"+arch)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if cf.Architecture != arch || cf.OS != "linux" || !slices.Equal(c.Entrypoint, []string{conformPath}) || c.User != "65532:65532" ||
			c.WorkingDir != "/work" || !slices.Contains(c.Env, "PATH=/usr/local/bin:/bin") ||
			c.Labels["org.opencontainers.image.version"] != "9.8.7" || c.Labels["org.opencontainers.image.revision"] != o.Commit {
			t.Errorf("linux/%s config = %s/%s %+v", arch, cf.OS, cf.Architecture, c)
		}
		if !cf.Created.Time.Equal(o.Created) {
			t.Errorf("created %v, want %v", cf.Created, o.Created)
		}
	}
	if _, err := FindImage(dir, "linux/s390x"); err == nil || !strings.Contains(err.Error(), "no image for linux/s390x") {
		t.Errorf("FindImage of a platform the layout lacks: %v", err)
	}

	img, err := FindImage(dir, "linux/"+runtime.GOARCH)
	if err != nil {
		t.Skipf("no image for this machine's architecture: %v", err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := Unpack(img, root); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"sh", "[", "cat", "sleep"} {
		if link, err := os.Readlink(filepath.Join(root, "bin", a)); err != nil || link != "busybox" {
			t.Errorf("/bin/%s: link %q, %v; want a link to busybox", a, link, err)
		}
	}
	for path, mode := range map[string]os.FileMode{"/bin/busybox": 0o755, conformPath: 0o755, "/etc/passwd": 0o644, certsPath: 0o644, busyboxCopyright: 0o644} {
		fi, err := os.Stat(filepath.Join(root, path))
		if err != nil || fi.Mode().Perm() != mode || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v, %v; want a file of mode %v", path, fi, err, mode)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("/tmp: %v, %v; want a sticky 1777 directory (restart output goes to a temporary file)", fi, err)
	}
	if os.Geteuid() == 0 {
		fi, err := os.Stat(filepath.Join(root, "work"))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65532 || st.Gid != 65532 {
			t.Errorf("/work is owned by %d:%d, want 65532:65532", st.Uid, st.Gid)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc", "passwd")); !bytes.Contains(b, []byte("nonroot:x:65532:65532:")) {
		t.Errorf("/etc/passwd has no nonroot 65532:\n%s", b)
	}
	certs, _ := os.ReadFile(filepath.Join(root, certsPath))
	n := 0
	for rest := certs; ; n++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			t.Fatalf("certificate %d: %v", n, err)
		}
	}
	if n < 100 {
		t.Errorf("%d CA certificates, want the Mozilla roots (over 100)", n)
	}
	for _, bin := range []string{"/bin/sh", conformPath} {
		out, err := exec.Command(filepath.Join(root, bin), "-c", "echo ok").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), filepath.Base(bin)+" [-c echo ok]") {
			t.Errorf("%s from the layers: %q, %v", bin, out, err)
		}
	}
}

// A build refuses binaries that could not run in the image: for another
// architecture, dynamically linked, or missing; a platform given twice;
// and an image without busybox's version and copyright.
func TestBuildRefuses(t *testing.T) {
	amd, arm := fakeBinary(t, "amd64"), fakeBinary(t, "arm64")
	dynamic := ""
	for _, p := range []string{"/bin/ls", "/usr/bin/env"} {
		if f, err := exec.LookPath(p); err == nil && runtime.GOARCH == "amd64" {
			dynamic = f
			break
		}
	}
	cases := map[string]func(*Options){
		"wrong architecture": func(o *Options) { o.Platforms = []Platform{{OS: "linux", Arch: "arm64", Conform: amd, Busybox: arm}} },
		"missing binary": func(o *Options) {
			o.Platforms = []Platform{{OS: "linux", Arch: "amd64", Conform: filepath.Join(t.TempDir(), "nothing"), Busybox: amd}}
		},
		"twice": func(o *Options) {
			o.Platforms = []Platform{{OS: "linux", Arch: "amd64", Conform: amd, Busybox: amd}, {OS: "linux", Arch: "amd64", Conform: amd, Busybox: amd}}
		},
		"not linux":    func(o *Options) { o.Platforms = []Platform{{OS: "darwin", Arch: "amd64", Conform: amd, Busybox: amd}} },
		"no copyright": func(o *Options) { o.BusyboxCopyright = nil },
		"no version":   func(o *Options) { o.Version = "" },
		"no applets":   func(o *Options) { o.BusyboxApplets = nil },
		"bad applet":   func(o *Options) { o.BusyboxApplets = []string{"cat", "../etc/passwd"} },
	}
	if dynamic != "" {
		cases["dynamic"] = func(o *Options) {
			o.Platforms = []Platform{{OS: "linux", Arch: "amd64", Conform: amd, Busybox: dynamic}}
		}
	}
	want := map[string]string{"wrong architecture": "not arm64", "missing binary": "not an ELF", "twice": "given twice",
		"not linux": "linux only", "no copyright": "copyright", "no version": "no version", "dynamic": "dynamically linked",
		"no applets": "no busybox applets", "bad applet": "not a file name"}
	for name, mutate := range cases {
		o := options(t)
		mutate(&o)
		if _, err := Build(o); err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: err %v, want one saying %q", name, err, want[name])
		}
	}
}

// Unpacking a hostile layer stream: a path with .. stays inside the root;
// a write through a symbolic link, a device and a setuid file are refused.
func TestExtractHostile(t *testing.T) {
	type ent struct {
		name string
		typ  byte
		mode int64
		link string
	}
	stream := func(es ...ent) *tar.Reader {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, e := range es {
			h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link}
			if e.typ == tar.TypeReg {
				h.Size = 2
			}
			tw.WriteHeader(h)
			if e.typ == tar.TypeReg {
				tw.Write([]byte("x\n"))
			}
		}
		tw.Close()
		return tar.NewReader(&buf)
	}
	outside := t.TempDir()
	for name, tc := range map[string]struct {
		tr   *tar.Reader
		want string
	}{
		"symlink parent": {stream(ent{"etc", tar.TypeSymlink, 0o777, outside}, ent{"etc/passwd", tar.TypeReg, 0o644, ""}), "symbolic link"},
		"device":         {stream(ent{"dev/null", tar.TypeChar, 0o666, ""}), "devices"},
		"setuid":         {stream(ent{"bin/su", tar.TypeReg, 0o4755, ""}), "setuid"},
	} {
		root := filepath.Join(t.TempDir(), "root")
		os.Mkdir(root, 0o755)
		if err := extract(tc.tr, root, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one saying %q", name, err, tc.want)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("a layer wrote outside the root: %v", ents)
	}
	root := filepath.Join(t.TempDir(), "root")
	os.Mkdir(root, 0o755)
	if err := extract(stream(ent{"../../escape", tar.TypeReg, 0o644, ""}), root, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "escape")); err != nil {
		t.Errorf("../../escape did not land inside the root: %v", err)
	}
}

// --dist takes the linux binaries of GoReleaser's artifacts.json, paths
// relative to the dist directory's parent, each with its busybox.
func TestDistPlatforms(t *testing.T) {
	root := t.TempDir()
	dist := filepath.Join(root, "dist")
	os.Mkdir(dist, 0o755)
	arts := `[
	{"name":"conform","path":"dist/conform_linux_amd64_v1/conform","goos":"linux","goarch":"amd64","type":"Binary"},
	{"name":"conform","path":"dist/conform_darwin_arm64_v8.0/conform","goos":"darwin","goarch":"arm64","type":"Binary"},
	{"name":"conform_0.3.0_linux_amd64.tar.gz","path":"dist/conform_0.3.0_linux_amd64.tar.gz","goos":"linux","goarch":"amd64","type":"Archive"},
	{"name":"conform","path":"dist/conform_linux_arm64_v8.0/conform","goos":"linux","goarch":"arm64","type":"Binary"}]`
	os.WriteFile(filepath.Join(dist, "artifacts.json"), []byte(arts), 0o644)
	ps, err := distPlatforms(dist, "/bb")
	if err != nil {
		t.Fatal(err)
	}
	want := []Platform{
		{OS: "linux", Arch: "amd64", Conform: filepath.Join(root, "dist/conform_linux_amd64_v1/conform"), Busybox: "/bb/busybox-amd64"},
		{OS: "linux", Arch: "arm64", Conform: filepath.Join(root, "dist/conform_linux_arm64_v8.0/conform"), Busybox: "/bb/busybox-arm64"},
	}
	if !slices.Equal(ps, want) {
		t.Errorf("platforms %+v, want %+v", ps, want)
	}
	os.WriteFile(filepath.Join(dist, "artifacts.json"), []byte(`[]`), 0o644)
	if _, err := distPlatforms(dist, "/bb"); err == nil || !strings.Contains(err.Error(), "no linux binary") {
		t.Errorf("an artifacts.json without linux binaries: %v", err)
	}
}

// push uploads the layout's index with both images; pulled back from the
// registry (an in-memory one here), it is the same index, digest for
// digest. A directory that is no layout is refused.
func TestPush(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: anonymous
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	o := options(t)
	idx, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	if err := WriteLayout(dir, idx, o.Version); err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/harn-conform/conform:9.8.7"
	var out bytes.Buffer
	if err := run([]string{"push", "--layout", dir, "--to", ref}, &out); err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	if !strings.Contains(out.String(), want.String()) {
		t.Errorf("push said %q, want the index digest %s", out.String(), want)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != want {
		t.Errorf("the registry has index %s, want %s", d, want)
	}
	im, err := got.IndexManifest()
	if err != nil || len(im.Manifests) != 2 {
		t.Fatalf("pulled index: %v, %v; want two images", im, err)
	}
	for _, m := range im.Manifests {
		img, err := got.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := img.Layers()
		if err != nil || len(ls) != 2 {
			t.Errorf("%v: %d layers, %v; want 2", m.Platform, len(ls), err)
		}
	}
	if err := run([]string{"push", "--layout", t.TempDir(), "--to", ref}, &out); err == nil {
		t.Error("push of a directory that is no layout did not fail")
	}
}
