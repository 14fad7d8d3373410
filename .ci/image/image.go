package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's layout: what the Dockerfile's final stage also promises.
const (
	conformPath      = "/usr/local/bin/conform"
	shellPath        = "/bin/sh"      // a symbolic link to busyboxPath
	busyboxPath      = "/bin/busybox" // Debian's busybox-static: sh and the applets
	certsPath        = "/etc/ssl/certs/ca-certificates.crt"
	busyboxCopyright = "/usr/share/doc/busybox-static/copyright"
	workDir          = "/work"
	user             = "65532:65532" // nonroot, as in distroless
	uid, gid         = 65532, 65532
)

// Platform is one image of the index: a conform binary and a static
// busybox built for it.
type Platform struct {
	OS, Arch         string
	Conform, Busybox string // paths on this machine
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Options are what one build is made of.
type Options struct {
	Version, Commit string
	Busybox         string // the busybox-static package's version, for the labels
	// BusyboxCopyright is the package's copyright file, which the image
	// carries with the binary (GPL-2.0-only).
	BusyboxCopyright []byte
	// BusyboxApplets are busybox's applets (`busybox --list`), each linked
	// to it in /bin: a shell then finds cat or sleep on PATH, even where no
	// /proc is mounted for busybox to run itself through /proc/self/exe.
	BusyboxApplets []string
	Created        time.Time
	Platforms      []Platform
}

// elfMachine is the ELF machine of each architecture an image may be for.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkStatic refuses a file that is not a static ELF executable for arch:
// a binary for the wrong platform, or one that needs a dynamic loader the
// image does not have, would only fail when the image runs.
func checkStatic(path, arch string) error {
	want, ok := elfMachine[arch]
	if !ok {
		return fmt.Errorf("architecture %q: want one of amd64, arm64", arch)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not an ELF executable: %w", path, err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("%s is for %v, not %s (%v)", path, f.Machine, arch, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: the image has no loader", path)
		}
	}
	return nil
}

// entry is one file of a layer.
type entry struct {
	name     string // absolute path in the image
	typ      byte
	mode     int64
	uid, gid int
	link     string
	data     []byte
}

func dir(name string, mode int64) entry { return entry{name: name, typ: tar.TypeDir, mode: mode} }

func file(name string, mode int64, data []byte) entry {
	return entry{name: name, typ: tar.TypeReg, mode: mode, data: data}
}

// layer is a gzipped OCI layer of entries, every time stamp created, so
// that the same inputs make the same digest.
func layer(entries []entry, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: strings.TrimPrefix(e.name, "/"), Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			Linkname: e.link, Size: int64(len(e.data)), ModTime: created, Format: tar.FormatPAX,
		}
		if e.typ == tar.TypeDir {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// caBundle is the Mozilla roots Go's x509roots/fallback carries, as PEM,
// without the roots that carry a constraint (a distrust-after date) a PEM
// file cannot say: conform verifies HTTPS targets against it (--ca-file for
// a private CA).
func caBundle() []byte {
	var out bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return out.Bytes()
}

// baseLayer is everything but conform: the directories, the users, the CA
// certificates and the shell.
func baseLayer(busybox, copyright []byte, applets []string, created time.Time) (v1.Layer, error) {
	work := dir(workDir, 0o755)
	work.uid, work.gid = uid, gid
	bin := []entry{
		dir("/bin", 0o755),
		file(busyboxPath, 0o755, busybox),
		{name: shellPath, typ: tar.TypeSymlink, mode: 0o777, link: "busybox"},
	}
	for _, a := range applets {
		if a != "sh" && a != "busybox" {
			bin = append(bin, entry{name: "/bin/" + a, typ: tar.TypeSymlink, mode: 0o777, link: "busybox"})
		}
	}
	return layer(append(bin,
		dir("/etc", 0o755),
		file("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/work:/bin/sh\n")),
		file("/etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
		dir("/etc/ssl", 0o755),
		dir("/etc/ssl/certs", 0o755),
		file(certsPath, 0o644, caBundle()),
		dir("/tmp", 0o1777),
		dir("/usr", 0o755),
		dir("/usr/local", 0o755),
		dir("/usr/local/bin", 0o755),
		dir("/usr/share", 0o755),
		dir("/usr/share/doc", 0o755),
		dir("/usr/share/doc/busybox-static", 0o755),
		file(busyboxCopyright, 0o644, copyright),
		work,
	), created)
}

// appletName is what an applet may be called: a file name in /bin.
var appletName = regexp.MustCompile(`^[a-z0-9_.\[-]+$`)

func checkApplets(applets []string) error {
	if len(applets) == 0 {
		return errors.New("no busybox applets: the image links each to busybox in /bin")
	}
	seen := map[string]bool{}
	for _, a := range applets {
		if !appletName.MatchString(a) || a == "." || a == ".." || seen[a] {
			return fmt.Errorf("busybox applet %q: not a file name, or listed twice", a)
		}
		seen[a] = true
	}
	return nil
}

// labels are the OCI annotations of every image and of the index.
func labels(o Options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "conform",
		"org.opencontainers.image.description": "Conformance test suite for the Harn Agents Protocol v1",
		"org.opencontainers.image.source":      "https://github.com/harn-conform/conform",
		"org.opencontainers.image.licenses":    "Apache-2.0 AND GPL-2.0-only",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Commit,
		"org.opencontainers.image.created":     o.Created.UTC().Format(time.RFC3339),
		// busybox is GPL-2.0-only: its source is Debian's busybox source
		// package of this version.
		"io.github.harn-conform.busybox": "Debian busybox-static " + o.Busybox + " (GPL-2.0-only; source: Debian's busybox source package, same version)",
	}
}

// image is one platform's image: the base layer, then conform.
func image(o Options, p Platform) (v1.Image, error) {
	for _, bin := range []string{p.Conform, p.Busybox} {
		if err := checkStatic(bin, p.Arch); err != nil {
			return nil, err
		}
	}
	if p.OS != "linux" {
		return nil, fmt.Errorf("platform %s: the image is for linux only", p)
	}
	busybox, err := os.ReadFile(p.Busybox)
	if err != nil {
		return nil, err
	}
	conform, err := os.ReadFile(p.Conform)
	if err != nil {
		return nil, err
	}
	base, err := baseLayer(busybox, o.BusyboxCopyright, o.BusyboxApplets, o.Created)
	if err != nil {
		return nil, err
	}
	bin, err := layer([]entry{file(conformPath, 0o755, conform)}, o.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: p.Arch, OS: p.OS, Created: v1.Time{Time: o.Created},
		Config: v1.Config{
			Entrypoint: []string{conformPath},
			Cmd:        []string{"help"},
			User:       user,
			WorkingDir: workDir,
			Env: []string{
				"PATH=/usr/local/bin:/bin",
				"SSL_CERT_FILE=" + certsPath,
				"HOME=" + workDir,
			},
			Labels: labels(o),
		},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "conform-image: directories, users, CA certificates, busybox as /bin/sh"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "conform-image: " + conformPath}},
	)
}

// Build makes the multi-platform index of conform's image.
func Build(o Options) (v1.ImageIndex, error) {
	if o.Version == "" {
		return nil, errors.New("no version")
	}
	if len(o.Platforms) == 0 {
		return nil, errors.New("no platform")
	}
	if o.Busybox == "" || len(o.BusyboxCopyright) == 0 {
		return nil, errors.New("no busybox-static version or copyright file: the image carries both with the binary")
	}
	if err := checkApplets(o.BusyboxApplets); err != nil {
		return nil, err
	}
	ps := append([]Platform(nil), o.Platforms...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].String() < ps[j].String() })
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, p := range ps {
		if i > 0 && ps[i-1].String() == p.String() {
			return nil, fmt.Errorf("platform %s given twice", p)
		}
		img, err := image(o, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	return mutate.Annotations(idx, labels(o)).(v1.ImageIndex), nil
}

// WriteLayout writes the index as an OCI image layout at dir (which must
// not exist yet), named by the version in the layout's index.json.
func WriteLayout(dir string, idx v1.ImageIndex, version string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists already", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version}))
}

// distPlatforms reads GoReleaser's dist/artifacts.json: a platform for
// each linux binary of conform, with the busybox of its architecture from
// bbDir. Artifact paths are relative to where GoReleaser ran, the parent of
// dist.
func distPlatforms(dist, bbDir string) ([]Platform, error) {
	b, err := os.ReadFile(filepath.Join(dist, "artifacts.json"))
	if err != nil {
		return nil, fmt.Errorf("%w (run GoReleaser first)", err)
	}
	var arts []struct {
		Name, Path, Type, Goos, Goarch string
	}
	if err := json.Unmarshal(b, &arts); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dist, "artifacts.json"), err)
	}
	abs, err := filepath.Abs(dist)
	if err != nil {
		return nil, err
	}
	var ps []Platform
	for _, a := range arts {
		if a.Type != "Binary" || a.Name != "conform" || a.Goos != "linux" {
			continue
		}
		p := a.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(abs), p)
		}
		ps = append(ps, Platform{OS: "linux", Arch: a.Goarch, Conform: p, Busybox: filepath.Join(bbDir, "busybox-"+a.Goarch)})
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("%s lists no linux binary of conform", filepath.Join(dist, "artifacts.json"))
	}
	return ps, nil
}
