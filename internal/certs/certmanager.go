package certs

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

const (
	// CertManagerAnnotation on the NMState CR, set to "true", asks for
	// cert-manager's certificates instead of the self-signed ones (when
	// cert-manager's CRDs are installed).
	CertManagerAnnotation = "knmstate.io/cert-manager"
	// InjectCAAnnotation on a webhook configuration makes cert-manager's
	// cainjector fill the caBundle from a Certificate (namespace/name).
	InjectCAAnnotation = "cert-manager.io/inject-ca-from"
)

// cert-manager's API.
var (
	certManagerGroupVersion = schema.GroupVersion{Group: "cert-manager.io", Version: "v1"}
	issuersResource         = certManagerGroupVersion.WithResource("issuers")
	certificatesResource    = certManagerGroupVersion.WithResource("certificates")
)

// ChooseIssuer decides who issues the webhook's certificates from the
// NMState CR's annotations and whether cert-manager's CRDs are installed:
// cert-manager only when asked for (CertManagerAnnotation "true") and
// installed. The reason explains a request that cannot be honoured.
func ChooseIssuer(annotations map[string]string, certManagerInstalled bool) (Issuer, string) {
	switch {
	case annotations[CertManagerAnnotation] != "true":
		return SelfSigned, ""
	case !certManagerInstalled:
		return SelfSigned, fmt.Sprintf("%s is true but cert-manager's CRDs (%s Certificate, Issuer) are not installed; using self-signed certificates",
			CertManagerAnnotation, certManagerGroupVersion)
	}
	return CertManager, ""
}

// CertManagerInstalled reports whether the API serves cert-manager's
// Certificate and Issuer (cert-manager.io/v1).
func CertManagerInstalled(d discovery.DiscoveryInterface) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(certManagerGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", certManagerGroupVersion, err)
	}
	var found int
	for _, r := range list.APIResources {
		if r.Name == issuersResource.Resource || r.Name == certificatesResource.Resource {
			found++
		}
	}
	return found == 2, nil
}

// Names of the cert-manager objects of a configuration.
func (c Config) selfSignedIssuerName() string { return c.Service + "-selfsigned" }
func (c Config) caName() string               { return c.Service + "-ca" }

// servingCertificateName is the Certificate the CA is injected from.
func (c Config) servingCertificateName() string { return c.Service }

// InjectCAFrom is the value of InjectCAAnnotation for cfg's webhook
// configurations.
func (c Config) InjectCAFrom() string {
	c.defaults()
	return c.Namespace + "/" + c.servingCertificateName()
}

// CertManagerObjects renders what cert-manager needs to do the
// self-signed manager's job: a self-signed Issuer, a CA Certificate (into
// the CA Secret, duration CARotate, renewed CAOverlap early), a CA Issuer
// on that Secret, and the serving Certificate (into the serving Secret,
// duration CertRotate, renewed CertOverlap early). The webhook
// configurations then carry InjectCAAnnotation = cfg.InjectCAFrom().
func CertManagerObjects(cfg Config) []*unstructured.Unstructured {
	cfg.defaults()
	labels := map[string]any{}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	obj := func(kind, name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": certManagerGroupVersion.String(),
			"kind":       kind,
			"metadata":   map[string]any{"name": name, "namespace": cfg.Namespace},
			"spec":       spec,
		}}
		if len(labels) > 0 {
			u.SetLabels(cfg.Labels)
		}
		return u
	}
	issuerRef := func(name string) map[string]any {
		return map[string]any{"name": name, "kind": "Issuer", "group": certManagerGroupVersion.Group}
	}
	ecdsa := func() map[string]any {
		return map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"}
	}
	var dns, ips []any
	for _, n := range cfg.Names() {
		if net.ParseIP(n) != nil {
			ips = append(ips, n)
		} else {
			dns = append(dns, n)
		}
	}
	serving := map[string]any{
		"secretName":  cfg.ServingSecret,
		"commonName":  dns[0],
		"dnsNames":    dns,
		"duration":    cfg.Intervals.CertRotate.String(),
		"renewBefore": cfg.Intervals.CertOverlap.String(),
		"privateKey":  ecdsa(),
		"usages":      []any{"server auth", "digital signature"},
		"issuerRef":   issuerRef(cfg.caName()),
	}
	if len(ips) > 0 {
		serving["ipAddresses"] = ips
	}
	if len(labels) > 0 {
		serving["secretTemplate"] = map[string]any{"labels": labels}
	}
	ca := map[string]any{
		"isCA":        true,
		"commonName":  cfg.caName(),
		"secretName":  cfg.CASecret,
		"duration":    cfg.Intervals.CARotate.String(),
		"renewBefore": cfg.Intervals.CAOverlap.String(),
		"privateKey":  ecdsa(),
		"issuerRef":   issuerRef(cfg.selfSignedIssuerName()),
	}
	if len(labels) > 0 {
		ca["secretTemplate"] = map[string]any{"labels": labels}
	}
	return []*unstructured.Unstructured{
		obj("Issuer", cfg.selfSignedIssuerName(), map[string]any{"selfSigned": map[string]any{}}),
		obj("Certificate", cfg.caName(), ca),
		obj("Issuer", cfg.caName(), map[string]any{"ca": map[string]any{"secretName": cfg.CASecret}}),
		obj("Certificate", cfg.servingCertificateName(), serving),
	}
}

func resourceOf(u *unstructured.Unstructured) schema.GroupVersionResource {
	if u.GetKind() == "Issuer" {
		return issuersResource
	}
	return certificatesResource
}

// stepCertManager applies cert-manager's objects and points the webhook
// configurations' cainjector annotation at the serving Certificate. It
// never touches the Secrets or a caBundle: cert-manager owns them.
func (m *Manager) stepCertManager(ctx context.Context) (time.Time, error) {
	for _, u := range CertManagerObjects(m.cfg) {
		_, err := m.dynamic.Resource(resourceOf(u)).Namespace(m.cfg.Namespace).Apply(ctx, u.GetName(), u,
			metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if err != nil {
			return time.Time{}, fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), m.cfg.Namespace, u.GetName(), err)
		}
	}
	want := m.cfg.InjectCAFrom()
	for _, ref := range m.configRefs() {
		err := m.withConfig(ctx, ref, func(_ []*admissionregistrationv1.WebhookClientConfig, o *metav1.ObjectMeta) bool {
			if o.Annotations[InjectCAAnnotation] == want {
				return false
			}
			metav1.SetMetaDataAnnotation(o, InjectCAAnnotation, want)
			return true
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return time.Time{}, err
		}
	}
	return m.cfg.Clock().Add(resync), nil
}

// leaveCertManager undoes cert-manager mode when self-signed certificates
// are asked for: the cainjector annotation goes (else cainjector would
// keep overwriting the injected bundle) and, if it was there,
// cert-manager's objects are deleted (else cert-manager would keep
// rewriting the Secrets). The Secrets stay: their CA and certificate
// remain valid and the self-signed manager carries on from them.
func (m *Manager) leaveCertManager(ctx context.Context) error {
	removed := false
	for _, ref := range m.configRefs() {
		err := m.withConfig(ctx, ref, func(_ []*admissionregistrationv1.WebhookClientConfig, o *metav1.ObjectMeta) bool {
			if _, ok := o.Annotations[InjectCAAnnotation]; !ok {
				return false
			}
			delete(o.Annotations, InjectCAAnnotation)
			removed = true
			return true
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if !removed {
		return nil
	}
	if m.dynamic == nil {
		m.cfg.Logger.Info("cert-manager objects left in place: no dynamic client")
		return nil
	}
	objs := CertManagerObjects(m.cfg)
	slices.Reverse(objs)
	for _, u := range objs {
		err := m.dynamic.Resource(resourceOf(u)).Namespace(m.cfg.Namespace).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("delete %s %s/%s: %w", u.GetKind(), m.cfg.Namespace, u.GetName(), err)
		}
	}
	m.cfg.Logger.Info("switched from cert-manager to self-signed certificates")
	return nil
}
