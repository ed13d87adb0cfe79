// Package registry is the lab's container image registry: go-containerregistry's
// in-memory registry served over plain HTTP on a listener it is given, and
// pushing the OCI image layouts of `make images` (internal/image) into a
// registry. It has no TLS, no authentication and no storage: images live
// as long as the serving process, which suits a lab that pushes them at
// start. It never listens anywhere by itself; where the listener is (the
// lab's switch namespace) is the caller's business.
package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ociregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/knmstate/knmstate/internal/image"
)

// shutdownTimeout bounds how long Serve waits for requests in flight
// after its context ends.
const shutdownTimeout = 5 * time.Second

// Serve serves an empty in-memory registry on l until ctx ends, then shuts
// down (requests still running after 5 s lose their connections). Each request is logged as one line to logw (nil: nowhere).
func Serve(ctx context.Context, l net.Listener, logw io.Writer) error {
	if logw == nil {
		logw = io.Discard
	}
	logger := log.New(logw, "", log.LstdFlags)
	srv := &http.Server{
		Handler:           ociregistry.New(ociregistry.Logger(logger)),
		ErrorLog:          logger,
		ReadHeaderTimeout: 10 * time.Second,
	}
	stopped := make(chan error, 1)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		err := srv.Shutdown(sctx)
		if errors.Is(err, context.DeadlineExceeded) {
			// A client that never finished reading a blob keeps its
			// request active; it loses the connection, the registry
			// still stops.
			err = srv.Close()
		}
		stopped <- err
	}()
	err := srv.Serve(l)
	if !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("image registry on %s: %w", l.Addr(), err)
	}
	return <-stopped
}

// Dialer opens connections; a registry inside a network namespace is
// reached with a dialer that dials from inside it.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Push pushes the image of the OCI image layout layoutDir (one image, as
// image.WriteLayout writes) to the registry at host ("192.0.2.1:5000",
// plain HTTP) as repoTag ("knmstate:v0.1.0"), connecting with dial (nil:
// from this process's network namespace). It returns the image's digest,
// the same in the layout and in the registry.
func Push(ctx context.Context, layoutDir, host, repoTag string, dial Dialer) (v1.Hash, error) {
	ref, err := name.NewTag(host+"/"+repoTag, name.Insecure, name.StrictValidation)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s: %w", layoutDir, err)
	}
	img, err := image.ReadLayout(layoutDir)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	opts := []remote.Option{remote.WithContext(ctx)}
	if dial != nil {
		tr := remote.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = dial
		opts = append(opts, remote.WithTransport(tr))
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s to %s: %w", layoutDir, ref, err)
	}
	return digest, nil
}
