package operator

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/certs"
	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/webhook"
)

// certControl runs the webhook's certificate manager while an NMState
// exists, with that NMState's intervals and issuer, and restarts it when
// they change.
type certControl struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	ns   string
	log  logr.Logger

	mu      sync.Mutex
	running *certs.Config // nil: not running
	cancel  context.CancelFunc
	done    chan struct{}
}

func newCertControl(cfg *rest.Config, namespace string, log logr.Logger) (*certControl, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &certControl{kube: kube, dyn: dyn, disc: kube.Discovery(), ns: namespace, log: log}, nil
}

// config is the certificate manager's configuration for an NMState, and
// the note to report when its request for cert-manager cannot be met.
func (c *certControl) config(nm *nmstatev1.NMState) (certs.Config, string, error) {
	iv, err := certs.IntervalsFrom(nm.Spec.SelfSignConfiguration)
	if err != nil {
		return certs.Config{}, "", err
	}
	installed := false
	if nm.Annotations[certs.CertManagerAnnotation] == "true" {
		if installed, err = certs.CertManagerInstalled(c.disc); err != nil {
			return certs.Config{}, "", err
		}
	}
	issuer, note := certs.ChooseIssuer(nm.Annotations, installed)
	cfg := certs.Config{
		Namespace:         c.ns,
		CASecret:          manifest.WebhookCASecret,
		ServingSecret:     manifest.WebhookServingSecret,
		Service:           manifest.WebhookName,
		ValidatingConfigs: []string{webhook.ConfigurationName},
		MutatingConfigs:   []string{webhook.ConfigurationName},
		Intervals:         iv,
		Issuer:            issuer,
		Labels:            map[string]string{manifest.LabelPartOf: "knmstate", manifest.LabelComponent: manifest.ComponentWebhook},
	}
	return cfg, note, nil
}

// webhookAnnotations are the webhook configurations' annotations for an
// NMState (cert-manager's CA injection when it issues).
func (c *certControl) webhookAnnotations(nm *nmstatev1.NMState) (map[string]string, error) {
	cfg, _, err := c.config(nm)
	if err != nil {
		return nil, err
	}
	if cfg.Issuer != certs.CertManager {
		return nil, nil
	}
	return map[string]string{certs.InjectCAAnnotation: cfg.InjectCAFrom()}, nil
}

// sync runs the manager for nm (nil: stops it).
func (c *certControl) sync(ctx context.Context, nm *nmstatev1.NMState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nm == nil {
		c.stopLocked()
		return nil
	}
	cfg, note, err := c.config(nm)
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if note != "" {
		c.log.Info(note)
	}
	cfg.Logger = c.log.WithName("certs")
	cmp := cfg
	cmp.Logger = logr.Logger{}
	if c.running != nil && reflect.DeepEqual(*c.running, cmp) {
		return nil
	}
	c.stopLocked()
	m, err := certs.New(c.kube, c.dyn, cfg)
	if err != nil {
		return err
	}
	// The manager outlives the reconcile that started it.
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.Start(mctx); err != nil {
			c.log.Error(err, "certificate manager stopped")
		}
	}()
	c.running, c.cancel, c.done = &cmp, cancel, done
	c.log.Info("certificate manager started", "issuer", cfg.Issuer, "intervals", fmt.Sprintf("%+v", cfg.Intervals))
	return nil
}

func (c *certControl) stopLocked() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	<-c.done
	c.running, c.cancel, c.done = nil, nil, nil
	c.log.Info("certificate manager stopped")
}

// stop ends the manager (the operator is stopping).
func (c *certControl) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked()
}
