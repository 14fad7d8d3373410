package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// LayoutIndex is the multi-platform index the layout at dir names (what
// WriteLayout wrote).
func LayoutIndex(dir string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: not an OCI image layout: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 || !im.Manifests[0].MediaType.IsIndex() {
		return nil, errors.New("the layout does not name one image index (conform-image build writes one)")
	}
	return top.ImageIndex(im.Manifests[0].Digest)
}

// Push uploads the layout's index, with every platform's image, to ref
// (registry/repository:tag), with the credentials of the Docker
// configuration (~/.docker/config.json, credential helpers), as `docker
// push` would find them.
func Push(ctx context.Context, dir, ref string) (v1.Hash, error) {
	idx, err := LayoutIndex(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remoteWriteIndex(ctx, r, idx, authn.DefaultKeychain); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}
func remoteWriteIndex(ctx context.Context, ref name.Reference, idx v1.ImageIndex, kc authn.Keychain) error {
	return remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(kc))
}
