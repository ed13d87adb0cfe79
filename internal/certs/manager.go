package certs

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// resync bounds how long the manager waits without an event, so that a
// missed watch event costs at most this much.
const resync = 10 * time.Minute

// Manager keeps the webhook's certificates valid and trusted: the
// self-signed CA and serving certificate in their Secrets, rotated per the
// intervals, with the CA bundle injected into the webhook configurations;
// or, with Issuer CertManager, cert-manager's objects doing the same. It
// is a controller-runtime manager.Runnable that needs leader election (one
// writer per cluster).
type Manager struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	cfg     Config
	trigger chan struct{}
}

// New returns a manager for cfg. dyn is needed for cert-manager's objects:
// with Issuer CertManager, and to remove them after a switch back to
// SelfSigned; it may be nil otherwise.
func New(kube kubernetes.Interface, dyn dynamic.Interface, cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("certificate manager: %w", err)
	}
	cfg.defaults()
	if cfg.Issuer == CertManager && dyn == nil {
		return nil, errors.New("certificate manager: cert-manager needs a dynamic client")
	}
	return &Manager{kube: kube, dynamic: dyn, cfg: cfg, trigger: make(chan struct{}, 1)}, nil
}

// NeedLeaderElection makes a controller-runtime manager run it on the
// leader only.
func (m *Manager) NeedLeaderElection() bool { return true }

// Start runs the manager until ctx ends. Errors of single steps are logged
// and retried with back-off; Start returns nil when ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	log := m.cfg.Logger
	changed := func(any) { m.poke() }
	if m.cfg.Issuer == SelfSigned {
		secrets := m.kube.CoreV1().Secrets(m.cfg.Namespace)
		watchNamed(ctx, secrets, &corev1.Secret{}, m.cfg.CASecret, changed)
		watchNamed(ctx, secrets, &corev1.Secret{}, m.cfg.ServingSecret, changed)
	}
	for _, name := range m.cfg.ValidatingConfigs {
		watchNamed(ctx, m.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations(), &admissionregistrationv1.ValidatingWebhookConfiguration{}, name, changed)
	}
	for _, name := range m.cfg.MutatingConfigs {
		watchNamed(ctx, m.kube.AdmissionregistrationV1().MutatingWebhookConfigurations(), &admissionregistrationv1.MutatingWebhookConfiguration{}, name, changed)
	}
	log.Info("certificate manager started", "issuer", m.cfg.Issuer, "namespace", m.cfg.Namespace,
		"caSecret", m.cfg.CASecret, "servingSecret", m.cfg.ServingSecret, "intervals", fmt.Sprintf("%+v", m.cfg.Intervals))

	backoff := time.Duration(0)
	steps := 0
	for {
		wake, err := m.step(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			backoff = min(max(2*backoff, 500*time.Millisecond), 30*time.Second)
			log.Error(err, "certificate step failed; retrying", "in", backoff)
			wake = m.cfg.Clock().Add(backoff)
		case wake.IsZero():
			// Acted: decide again at once, on fresh reads.
			backoff = 0
			if steps++; steps < 20 {
				continue
			}
			// A decision that never settles is a bug; do not spin.
			log.Info("certificate manager keeps acting; pausing")
			wake = m.cfg.Clock().Add(time.Second)
		default:
			backoff = 0
		}
		steps = 0
		delay := min(wake.Sub(m.cfg.Clock()), resync)
		timer := time.NewTimer(max(delay, 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-m.trigger:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// poke asks for a new decision.
func (m *Manager) poke() {
	select {
	case m.trigger <- struct{}{}:
	default:
	}
}

// step gathers, decides and performs at most one write. It returns the
// time of the next due step when there was nothing to do, zero after a
// write.
func (m *Manager) step(ctx context.Context) (time.Time, error) {
	if m.cfg.Issuer == CertManager {
		return m.stepCertManager(ctx)
	}
	if err := m.leaveCertManager(ctx); err != nil {
		return time.Time{}, err
	}
	in, err := m.gather(ctx)
	if err != nil {
		return time.Time{}, err
	}
	d := Decide(in)
	if d.Action == Wait {
		if d.Wake.IsZero() {
			return m.cfg.Clock().Add(resync), nil
		}
		return d.Wake, nil
	}
	m.cfg.Logger.Info("certificate step", "action", d.Action.String(), "reason", d.Reason)
	return time.Time{}, m.execute(ctx, in, d)
}

// gather reads what Decide needs, straight from the API server: a
// decision on a stale cache could rotate twice.
func (m *Manager) gather(ctx context.Context) (Input, error) {
	in := Input{Now: m.cfg.Clock(), Intervals: m.cfg.Intervals, Propagation: m.cfg.Propagation, Names: m.cfg.Names()}
	var err error
	if in.CASecret, err = m.secret(ctx, m.cfg.CASecret); err != nil {
		return in, err
	}
	if in.ServingSecret, err = m.secret(ctx, m.cfg.ServingSecret); err != nil {
		return in, err
	}
	for _, ref := range m.configRefs() {
		wb := WebhookBundles{ConfigRef: ref}
		hooks, _, err := m.getConfig(ctx, ref)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return in, err
		default:
			wb.Found = true
			for _, cc := range hooks {
				wb.Bundles = append(wb.Bundles, cc.CABundle)
			}
		}
		in.Configs = append(in.Configs, wb)
	}
	return in, nil
}

func (m *Manager) configRefs() []ConfigRef {
	var out []ConfigRef
	for _, n := range m.cfg.ValidatingConfigs {
		out = append(out, ConfigRef{Validating, n})
	}
	for _, n := range m.cfg.MutatingConfigs {
		out = append(out, ConfigRef{Mutating, n})
	}
	return out
}

func (m *Manager) secret(ctx context.Context, name string) (*corev1.Secret, error) {
	s, err := m.kube.CoreV1().Secrets(m.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get Secret %s/%s: %w", m.cfg.Namespace, name, err)
	}
	return s, nil
}

// execute performs the one write d asks for.
func (m *Manager) execute(ctx context.Context, in Input, d Decision) error {
	switch d.Action {
	case IssueCA:
		data, err := newSecretData(in, d, m.cfg.Service+"-ca")
		if err != nil {
			return err
		}
		return m.writeSecret(ctx, m.cfg.CASecret, in.CASecret, data)
	case WriteBundle:
		data, err := newSecretData(in, d, "")
		if err != nil {
			return err
		}
		return m.writeSecret(ctx, m.cfg.CASecret, in.CASecret, data)
	case Inject:
		for _, ref := range d.Targets {
			if err := m.updateConfig(ctx, ref, func(cc []*admissionregistrationv1.WebhookClientConfig, _ *metav1.ObjectMeta) {
				for _, c := range cc {
					c.CABundle = d.Bundle
				}
			}); err != nil {
				return err
			}
		}
		return nil
	case IssueCert:
		data, err := newSecretData(in, d, "")
		if err != nil {
			return err
		}
		return m.writeSecret(ctx, m.cfg.ServingSecret, in.ServingSecret, data)
	}
	return fmt.Errorf("unknown action %v", d.Action)
}

// newSecretData is the data of the Secret an IssueCA (the CA Secret; the
// CA's common name starts with caName), WriteBundle (the CA Secret) or
// IssueCert (the serving Secret) decision writes. Keys are fresh: the only
// impurity of the decisions' execution.
func newSecretData(in Input, d Decision, caName string) (map[string][]byte, error) {
	switch d.Action {
	case IssueCA:
		ca, err := newCA(caName, in.Now, in.Intervals.CARotate)
		if err != nil {
			return nil, err
		}
		key, err := encodeKey(ca.key)
		if err != nil {
			return nil, err
		}
		crt := encodeCerts(ca.cert)
		return map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key, CABundleKey: append(crt, d.Bundle...)}, nil
	case WriteBundle:
		data := map[string][]byte{}
		for k, v := range in.CASecret.Data {
			data[k] = v
		}
		data[CABundleKey] = d.Bundle
		return data, nil
	case IssueCert:
		cert, err := issue(d.CA, in.Names, in.Now, d.NotAfter)
		if err != nil {
			return nil, err
		}
		key, err := encodeKey(cert.key)
		if err != nil {
			return nil, err
		}
		return map[string][]byte{corev1.TLSCertKey: encodeCerts(cert.cert), corev1.TLSPrivateKeyKey: key, CABundleKey: encodeCerts(d.CA.cert)}, nil
	}
	return nil, fmt.Errorf("action %v writes no Secret", d.Action)
}

// writeSecret creates the Secret or updates the one read (optimistic
// concurrency: a conflict is retried on fresh reads). A Secret of another
// type is replaced, since the type cannot change.
func (m *Manager) writeSecret(ctx context.Context, name string, existing *corev1.Secret, data map[string][]byte) error {
	secrets := m.kube.CoreV1().Secrets(m.cfg.Namespace)
	if existing != nil && existing.Type != corev1.SecretTypeTLS {
		uid := existing.UID
		if err := secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replace Secret %s/%s of type %s: %w", m.cfg.Namespace, name, existing.Type, err)
		}
		existing = nil
	}
	if existing == nil {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.cfg.Namespace, Labels: m.cfg.Labels},
			Type:       corev1.SecretTypeTLS,
			Data:       data,
		}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("create Secret %s/%s: %w", m.cfg.Namespace, name, err)
		}
		return nil
	}
	s := existing.DeepCopy()
	s.Data = data
	for k, v := range m.cfg.Labels {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[k] = v
	}
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("update Secret %s/%s: %w", m.cfg.Namespace, name, err)
	}
	return nil
}

// fieldManager names the manager's writes in managedFields.
const fieldManager = "knmstate-certs"

// getConfig reads a webhook configuration's client configurations.
func (m *Manager) getConfig(ctx context.Context, ref ConfigRef) ([]*admissionregistrationv1.WebhookClientConfig, *metav1.ObjectMeta, error) {
	var cc []*admissionregistrationv1.WebhookClientConfig
	var meta *metav1.ObjectMeta
	err := m.withConfig(ctx, ref, func(c []*admissionregistrationv1.WebhookClientConfig, o *metav1.ObjectMeta) bool {
		cc, meta = c, o
		return false
	})
	return cc, meta, err
}

// updateConfig reads a webhook configuration, lets change modify it and
// writes it back (a conflict is retried by the caller's next step).
func (m *Manager) updateConfig(ctx context.Context, ref ConfigRef, change func([]*admissionregistrationv1.WebhookClientConfig, *metav1.ObjectMeta)) error {
	return m.withConfig(ctx, ref, func(cc []*admissionregistrationv1.WebhookClientConfig, o *metav1.ObjectMeta) bool {
		change(cc, o)
		return true
	})
}

// withConfig reads a webhook configuration of either kind and calls fn
// with its webhooks' client configurations and its metadata; when fn
// returns true the configuration is written back.
func (m *Manager) withConfig(ctx context.Context, ref ConfigRef, fn func([]*admissionregistrationv1.WebhookClientConfig, *metav1.ObjectMeta) bool) error {
	api := m.kube.AdmissionregistrationV1()
	switch ref.Kind {
	case Validating:
		return editConfig(ctx, api.ValidatingWebhookConfigurations(), ref, fn,
			func(c *admissionregistrationv1.ValidatingWebhookConfiguration) ([]*admissionregistrationv1.WebhookClientConfig, *metav1.ObjectMeta) {
				var cc []*admissionregistrationv1.WebhookClientConfig
				for i := range c.Webhooks {
					cc = append(cc, &c.Webhooks[i].ClientConfig)
				}
				return cc, &c.ObjectMeta
			})
	case Mutating:
		return editConfig(ctx, api.MutatingWebhookConfigurations(), ref, fn,
			func(c *admissionregistrationv1.MutatingWebhookConfiguration) ([]*admissionregistrationv1.WebhookClientConfig, *metav1.ObjectMeta) {
				var cc []*admissionregistrationv1.WebhookClientConfig
				for i := range c.Webhooks {
					cc = append(cc, &c.Webhooks[i].ClientConfig)
				}
				return cc, &c.ObjectMeta
			})
	}
	return fmt.Errorf("unknown webhook configuration kind %q", ref.Kind)
}

// configAPI is the typed client of one webhook configuration kind.
type configAPI[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

func editConfig[T any](ctx context.Context, api configAPI[T], ref ConfigRef,
	fn func([]*admissionregistrationv1.WebhookClientConfig, *metav1.ObjectMeta) bool,
	parts func(T) ([]*admissionregistrationv1.WebhookClientConfig, *metav1.ObjectMeta)) error {
	c, err := api.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return wrapConfigErr("get", ref, err)
	}
	if !fn(parts(c)) {
		return nil
	}
	_, err = api.Update(ctx, c, metav1.UpdateOptions{FieldManager: fieldManager})
	return wrapConfigErr("update", ref, err)
}

func wrapConfigErr(verb string, ref ConfigRef, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", verb, ref, err)
}
