package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// maxUnpack bounds what Unpack writes: the image is a few tens of MiB, so a
// layer stream past this is broken or hostile.
const maxUnpack = 1 << 30

// FindImage is the image of the layout at dir for platform (os/arch): the
// layout's index.json names one index (or one image) by the version.
func FindImage(dir, platform string) (v1.Image, error) {
	os_, arch, ok := strings.Cut(platform, "/")
	if !ok {
		return nil, fmt.Errorf("platform %q: want os/arch", platform)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: not an OCI image layout: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	var search func(idx v1.ImageIndex, depth int) (v1.Image, error)
	search = func(idx v1.ImageIndex, depth int) (v1.Image, error) {
		if depth > 2 {
			return nil, errors.New("indexes nested too deep")
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, d := range im.Manifests {
			switch {
			case d.MediaType.IsIndex():
				child, err := idx.ImageIndex(d.Digest)
				if err != nil {
					return nil, err
				}
				if img, err := search(child, depth+1); err != nil || img != nil {
					return img, err
				}
			case d.MediaType.IsImage() && d.Platform != nil && d.Platform.OS == os_ && d.Platform.Architecture == arch:
				return idx.Image(d.Digest)
			}
		}
		return nil, nil
	}
	img, err := search(top, 0)
	if err == nil && img == nil {
		err = fmt.Errorf("%s has no image for %s", dir, platform)
	}
	return img, err
}

// Unpack writes img's file system, its layers applied in order, into root
// (created; it must not exist), as a container runtime would: modes kept,
// owners kept when this process may set them (root), symbolic links as
// they are. A path that leaves root, a write through a symbolic link, a
// device or a stream past maxUnpack is refused.
func Unpack(img v1.Image, root string) error {
	if err := os.Mkdir(root, 0o755); err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	return extract(tar.NewReader(rc), root, os.Geteuid() == 0)
}

func extract(tr *tar.Reader, root string, chown bool) error {
	type dirMode struct {
		path string
		mode os.FileMode
	}
	var dirs []dirMode
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name) // "../x" is /x: nothing leaves root
		if name == "/" {
			continue
		}
		target := filepath.Join(root, filepath.FromSlash(name))
		if err := noLinkAbove(root, name); err != nil {
			return err
		}
		mode := os.FileMode(h.Mode & 0o777)
		if h.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if h.Mode&0o2000 != 0 || h.Mode&0o4000 != 0 {
			return fmt.Errorf("%s is setuid or setgid: refused", name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{target, mode})
		case tar.TypeReg:
			if total += h.Size; total > maxUnpack {
				return fmt.Errorf("the image's files pass %d bytes", maxUnpack)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			os.Remove(target)
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			_, err = io.CopyN(f, tr, h.Size)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := os.Chmod(target, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		case tar.TypeLink:
			src := path.Clean("/" + h.Linkname)
			if err := noLinkAbove(root, src); err != nil {
				return err
			}
			os.Remove(target)
			if err := os.Link(filepath.Join(root, filepath.FromSlash(src)), target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: tar entry type %q is not unpacked (devices, fifos)", name, h.Typeflag)
		}
		if chown {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return err
			}
		}
	}
	// Directory modes last: a read-only directory still takes its files.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return err
		}
	}
	return nil
}

// noLinkAbove refuses name when a directory above it, inside root, is a
// symbolic link: writing there would write wherever the link points.
func noLinkAbove(root, name string) error {
	parts := strings.Split(strings.TrimPrefix(path.Dir(name), "/"), "/")
	cur := root
	for _, p := range parts {
		if p == "" {
			continue
		}
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s: %s above it is a symbolic link", name, strings.TrimPrefix(cur, root))
		}
	}
	return nil
}
