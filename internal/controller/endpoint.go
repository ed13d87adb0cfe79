package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// serveEndpoints starts the process's metrics and health endpoints (when
// enabled), which serve across terms whether or not this replica leads:
// a follower that refused scrapes and probes would look down. They stop
// when ctx ends; the returned channel is closed once they have. One that
// fails while serving ends Run through stop; an address that cannot be
// bound is returned at once.
func serveEndpoints(ctx context.Context, stop context.CancelCauseFunc, cfg *rest.Config, hc *http.Client, opts Options) (<-chan struct{}, error) {
	var wg sync.WaitGroup
	var health net.Listener
	if opts.HealthProbeBindAddress != "0" {
		var err error
		if health, err = net.Listen("tcp", opts.HealthProbeBindAddress); err != nil {
			return nil, fmt.Errorf("health endpoint: %w", err)
		}
	}
	var msrv metricsserver.Server
	if opts.Metrics.Enabled() {
		var err error
		if msrv, err = metricsserver.NewServer(opts.Metrics.Server(), cfg, hc); err != nil {
			if health != nil {
				health.Close()
			}
			return nil, fmt.Errorf("metrics endpoint: %w", err)
		}
	}
	if health != nil {
		srv := &http.Server{Handler: healthMux(), ReadHeaderTimeout: 10 * time.Second}
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := srv.Serve(health); !errors.Is(err, http.ErrServerClosed) {
				stop(fmt.Errorf("health endpoint: %w", err))
			}
		}()
		go func() {
			defer wg.Done()
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	if msrv != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := msrv.Start(ctx); err != nil {
				stop(fmt.Errorf("metrics endpoint: %w", err))
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done, nil
}

// healthMux serves /healthz and /readyz as controller-runtime's manager
// did for the controller: the process answers.
func healthMux() http.Handler {
	checks := map[string]healthz.Checker{"ping": healthz.Ping}
	mux := http.NewServeMux()
	for _, path := range []string{"/healthz", "/readyz"} {
		h := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	return mux
}
