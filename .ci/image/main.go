// Command conform-image builds conform's container image without a
// container engine (go-containerregistry), and unpacks it again so CI can
// run what it holds. It is a module of its own, so that the conform module
// does not depend on go-containerregistry. See docs/releasing.md.
//
//	go run -C .ci/image . build --out DIR --version V --commit C --created UNIX \
//	    --busybox-version V --busybox-copyright FILE --busybox-applets FILE --platform linux/amd64=CONFORM,BUSYBOX [--platform …]
//	go run -C .ci/image . build --dist DIST --busybox-dir DIR --version V --commit C --created UNIX --out DIR
//	go run -C .ci/image . unpack --layout DIR --platform linux/amd64 --out ROOT
//	go run -C .ci/image . push --layout DIR --to REGISTRY/REPOSITORY:TAG
//
// build writes an OCI image layout: an index with one image per platform,
// each a base layer (/bin/busybox with /bin/sh and its other applets linked
// to it, /etc/passwd
// and /etc/group with the nonroot user 65532, the Mozilla CA certificates,
// /tmp, /work owned by nonroot) and a layer with /usr/local/bin/conform;
// entrypoint conform, user 65532:65532, working directory /work. unpack
// applies one platform's layers to a new directory and prints the image's
// configuration as KEY=VALUE lines (entrypoint, user, workdir, env). push
// uploads the index and its images to a registry, with the credentials of
// the Docker configuration.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "conform-image:", err)
		os.Exit(1)
	}
}

// platformFlags is --platform os/arch=CONFORM,BUSYBOX, repeated.
type platformFlags []Platform

func (p *platformFlags) String() string { return fmt.Sprint(*p) }

func (p *platformFlags) Set(s string) error {
	plat, bins, ok := strings.Cut(s, "=")
	os_, arch, ok2 := strings.Cut(plat, "/")
	conform, busybox, ok3 := strings.Cut(bins, ",")
	if !ok || !ok2 || !ok3 || os_ == "" || arch == "" || conform == "" || busybox == "" {
		return fmt.Errorf("%q: want os/arch=CONFORM,BUSYBOX", s)
	}
	*p = append(*p, Platform{OS: os_, Arch: arch, Conform: conform, Busybox: busybox})
	return nil
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: conform-image build|unpack|push [flags] (-h for each)")
	}
	switch args[0] {
	case "build":
		fs := flag.NewFlagSet("build", flag.ContinueOnError)
		out := fs.String("out", "", "directory to write the OCI image layout to (must not exist)")
		var o Options
		fs.StringVar(&o.Version, "version", "", "conform's version (the image's version label and the layout's reference name)")
		fs.StringVar(&o.Commit, "commit", "", "the commit conform was built from (revision label)")
		fs.StringVar(&o.Busybox, "busybox-version", "", "the busybox-static package's version (label)")
		copyright := fs.String("busybox-copyright", "", "the busybox-static package's copyright file (carried in the image)")
		applets := fs.String("busybox-applets", "", "a file of busybox's applets, one a line (`busybox --list`), each linked to it in /bin")
		created := fs.Int64("created", 0, "creation time, Unix seconds, of the image and every file in it (the commit's time: same inputs, same digest)")
		var plats platformFlags
		fs.Var(&plats, "platform", "os/arch=CONFORM,BUSYBOX: the binaries of one platform (repeat)")
		dist := fs.String("dist", "", "GoReleaser's dist directory: an image for each linux binary its artifacts.json lists (instead of --platform)")
		bbDir := fs.String("busybox-dir", "", "with --dist: the directory .ci/release/busybox.sh wrote (busybox-ARCH, busybox.version, busybox.copyright)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *dist != "" {
			if *bbDir == "" || len(plats) > 0 || o.Busybox != "" || *copyright != "" || *applets != "" {
				return fmt.Errorf("build: --dist takes --busybox-dir, and none of --platform, --busybox-version, --busybox-copyright, --busybox-applets")
			}
			ps, err := distPlatforms(*dist, *bbDir)
			if err != nil {
				return err
			}
			plats = ps
			v, err := os.ReadFile(filepath.Join(*bbDir, "busybox.version"))
			if err != nil {
				return err
			}
			o.Busybox = strings.TrimSpace(string(v))
			*copyright = filepath.Join(*bbDir, "busybox.copyright")
			*applets = filepath.Join(*bbDir, "busybox.applets")
		}
		if *out == "" || fs.NArg() > 0 {
			return fmt.Errorf("build: want --out and no arguments")
		}
		o.Created, o.Platforms = time.Unix(*created, 0).UTC(), plats
		if *copyright != "" {
			b, err := os.ReadFile(*copyright)
			if err != nil {
				return err
			}
			o.BusyboxCopyright = b
		}
		if *applets != "" {
			b, err := os.ReadFile(*applets)
			if err != nil {
				return err
			}
			o.BusyboxApplets = strings.Fields(string(b))
		}
		idx, err := Build(o)
		if err != nil {
			return err
		}
		if err := WriteLayout(*out, idx, o.Version); err != nil {
			return err
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: conform %s, %d platform(s), index %s\n", *out, o.Version, len(plats), d)
		return nil
	case "unpack":
		fs := flag.NewFlagSet("unpack", flag.ContinueOnError)
		dir := fs.String("layout", "", "the OCI image layout")
		platform := fs.String("platform", "linux/amd64", "os/arch of the image to unpack")
		out := fs.String("out", "", "directory to unpack into (must not exist)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *dir == "" || *out == "" || fs.NArg() > 0 {
			return fmt.Errorf("unpack: want --layout and --out and no arguments")
		}
		img, err := FindImage(*dir, *platform)
		if err != nil {
			return err
		}
		if err := Unpack(img, *out); err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		c := cf.Config
		fmt.Fprintf(stdout, "entrypoint=%s\ncmd=%s\nuser=%s\nworkdir=%s\n", strings.Join(c.Entrypoint, " "), strings.Join(c.Cmd, " "), c.User, c.WorkingDir)
		for _, e := range c.Env {
			fmt.Fprintf(stdout, "env=%s\n", e)
		}
		for _, k := range []string{"org.opencontainers.image.version", "org.opencontainers.image.revision"} {
			fmt.Fprintf(stdout, "label=%s=%s\n", k, strconv.Quote(c.Labels[k]))
		}
		return nil
	case "push":
		fs := flag.NewFlagSet("push", flag.ContinueOnError)
		dir := fs.String("layout", "", "the OCI image layout conform-image build wrote")
		to := fs.String("to", "", "where to push: registry/repository:tag (credentials from the Docker configuration)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *dir == "" || *to == "" || fs.NArg() > 0 {
			return fmt.Errorf("push: want --layout and --to and no arguments")
		}
		d, err := Push(context.Background(), *dir, *to)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s@%s\n", *to, d)
		return nil
	}
	return fmt.Errorf("unknown command %q: want build, unpack or push", args[0])
}
