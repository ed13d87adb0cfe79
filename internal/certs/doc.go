// Package certs owns the admission webhook's TLS certificates: who issues
// them, their rotation, the CA bundle the API server trusts them with, and
// serving them from a Secret.
//
// # Self-signed (the default)
//
// Manager (New(kube, dynamic, Config); a controller-runtime
// manager.Runnable that needs leader election) keeps two kubernetes.io/tls
// Secrets in Config.Namespace:
//
//   - the CA Secret (Config.CASecret): tls.crt and tls.key the current CA,
//     ca.crt the CA bundle: the current CA, then older CAs until they expire;
//   - the serving Secret (Config.ServingSecret): the webhook Service's
//     certificate (SERVICE, SERVICE.NS, SERVICE.NS.svc,
//     SERVICE.NS.svc.cluster.local and Config.ExtraNames), ca.crt its CA;
//
// and writes the CA bundle into the caBundle of every webhook of the named
// Validating and Mutating webhook configurations, again whenever someone
// changes it. Lifetimes follow NMState spec.selfSignConfiguration
// (IntervalsFrom; upstream's kube-admission-webhook semantics): a CA lives
// CARotate and is replaced CAOverlap before it ends, a serving certificate
// lives CertRotate (never beyond its CA) and is replaced CertOverlap before
// it ends.
//
// Rotation never fails a request: a new CA enters the bundle next to the
// old one, the bundle reaches the webhook configurations, and only
// Config.Propagation later is the serving certificate replaced by one of
// the new CA; an old CA leaves the bundle only when it has expired, after
// every certificate it signed was replaced. The webhook server reads the
// serving Secret through the API (SecretSource), so a new certificate is
// served at the next handshake.
//
// Each step is one write chosen by Decide, a pure function of (Secrets,
// webhook configurations, now, intervals) -> next action: a restart or a
// second leader continues from what the API holds. The manager reads
// straight from the API server (a stale cache could rotate twice) and
// watches only the objects it names (field selectors, which RBAC
// resourceNames can authorize).
//
// # cert-manager
//
// With Config.Issuer CertManager (ChooseIssuer: the NMState CR carries the
// annotation knmstate.io/cert-manager: "true" and cert-manager.io/v1 is
// served, CertManagerInstalled), the Manager applies CertManagerObjects
// instead: a self-signed Issuer, a CA Certificate into the CA Secret, a CA
// Issuer and the serving Certificate into the serving Secret, with the same
// intervals (duration and renewBefore), and annotates the webhook
// configurations with cert-manager.io/inject-ca-from so that cainjector
// fills their caBundle. It then touches no Secret and no caBundle.
// Switching back removes the annotation and those objects; the Secrets
// stay and the self-signed manager carries on from them.
//
// # Serving
//
// SecretSource watches one Secret and hands its certificate to a TLS
// server's GetCertificate; a deleted or broken Secret leaves the last good
// certificate in service.
//
// Rules gives the Manager's RBAC rules (every rule limited to the objects
// it names, except create) and SourceRules a SecretSource's; Config's
// defaults (WithDefaults) are internal/manifest's object names.
//
// The package talks to the API server only; it never touches a node.
package certs
