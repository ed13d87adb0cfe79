package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/knmstate/knmstate/internal/certs"
	"github.com/knmstate/knmstate/internal/tlsprofile"
)

// Options configure the webhook server. The zero value of a field means
// its default; Validate reports what cannot work.
type Options struct {
	// Client reads the serving certificate's Secret.
	Client kubernetes.Interface
	// SecretNamespace and SecretName name the kubernetes.io/tls Secret of
	// the serving certificate (the certificate manager's
	// Config.ServingSecret).
	SecretNamespace, SecretName string
	// BindAddress and Port are where the server listens; default all
	// addresses, port 9443.
	BindAddress string
	Port        int
	// Listener, when set, is used instead of BindAddress and Port (tests).
	Listener net.Listener
	// HealthProbeBindAddress, unless "" or "0", also serves /healthz and
	// /readyz over plain HTTP there (for kubelet probes that should not
	// depend on the certificate).
	HealthProbeBindAddress string
	// Logger receives the server's logs; default discards.
	Logger logr.Logger
	// Clock returns the current time (the mutations' timestamps); default
	// time.Now.
	Clock func() time.Time
	// TLSMinVersion ("VersionTLS12"; "" is TLS 1.2) and TLSCipherSuites
	// (OpenSSL or IANA names; none: Go's defaults) follow a TLS security
	// profile (OpenShift's cluster profile, passed by the operator).
	TLSMinVersion   string
	TLSCipherSuites []string
}

func (o *Options) defaults() {
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("an API client is required"))
	}
	if o.SecretNamespace == "" || o.SecretName == "" {
		errs = append(errs, errors.New("the serving certificate's Secret namespace and name are required"))
	}
	if o.Port < 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d out of range", o.Port))
	}
	if _, err := tlsprofile.Config(o.TLSMinVersion, o.TLSCipherSuites); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// shutdownGrace is how long requests in flight may finish after ctx ends.
const shutdownGrace = 10 * time.Second

// Run serves the admission webhooks over HTTPS until ctx ends: the policy
// validation (ValidatePath), upstream's three mutations (MutatePath,
// StatusMutatePath, TimestampMutatePath), /healthz (the process serves)
// and /readyz (a serving certificate is loaded); the last two also over
// HTTP on HealthProbeBindAddress. The certificate comes from
// the Secret, watched through the API (certs.SecretSource), so a rotated
// certificate is served at the next handshake. Run returns nil when ctx
// ends, after requests in flight finish.
func Run(ctx context.Context, opts Options) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	opts.defaults()
	lg := opts.Logger
	source := certs.NewSecretSource(opts.Client, opts.SecretNamespace, opts.SecretName, lg.WithName("certificate"))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = source.Start(ctx) }()

	ln := opts.Listener
	if ln == nil {
		var err error
		addr := net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.Port))
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("webhook: listen on %s: %w", addr, err)
		}
	}
	if a := opts.HealthProbeBindAddress; a != "" && a != "0" {
		hln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("webhook: health probes on %s: %w", a, err)
		}
		health := &http.Server{Handler: healthHandler(source.Ready), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = health.Serve(hln) }()
		defer health.Close()
	}
	srv := &http.Server{
		Handler:           Handler(lg, opts.Clock, source.Ready),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(logWriter{lg}, "", 0),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	tlsConfig, err := tlsprofile.Config(opts.TLSMinVersion, opts.TLSCipherSuites)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	tlsConfig.GetCertificate = source.GetCertificate
	tlsConfig.NextProtos = []string{"h2", "http/1.1"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}()
	lg.Info("serving admission webhooks", "address", ln.Addr().String(), "secret", opts.SecretNamespace+"/"+opts.SecretName)
	err = srv.Serve(tls.NewListener(ln, tlsConfig))
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("webhook: %w", err)
}

// Handler routes the webhook server's paths. ready reports readiness
// (/readyz); clock gives the mutations' time.
func Handler(lg logr.Logger, clock func() time.Time, ready func() error) http.Handler {
	mux := http.NewServeMux()
	hook := func(path string, h cradmission.HandlerFunc) {
		wh, _ := cradmission.StandaloneWebhook(&cradmission.Webhook{Handler: h}, cradmission.StandaloneOptions{Logger: lg.WithName("admission").WithValues("webhook", path)})
		mux.Handle(path, wh)
	}
	hook(ValidatePath, validate(lg))
	hook(MutatePath, mutate(clearConditions, clock))
	hook(StatusMutatePath, mutate(unknownConditions, clock))
	hook(TimestampMutatePath, mutate(timestamp, clock))
	health := healthHandler(ready)
	mux.Handle("/healthz", health)
	mux.Handle("/readyz", health)
	return mux
}

// healthHandler serves /healthz (the process serves) and /readyz (ready()
// reports nil).
func healthHandler(ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

// logWriter sends net/http's own messages (TLS handshake errors) to the
// logger.
type logWriter struct{ lg logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.lg.V(1).Info("http server", "message", string(p))
	return len(p), nil
}
