// Package webhook is knmstate's admission webhook server (`knmstate
// webhook`): HTTPS on port 9443 with
//
//   - ValidatePath: the NodeNetworkConfigurationPolicy validation upstream
//     lacks (admission.ValidatePolicy: desired state decoded strictly and
//     validated by the engine, captures parsed, templates naming defined
//     captures), on create and on updates that change the spec, v1 and
//     v1beta1; a refusal is a 422 Invalid whose message lists
//     "path: reason" lines and whose causes name the fields;
//   - MutatePath, StatusMutatePath, TimestampMutatePath: upstream's three
//     mutations (admission.ClearConditions, UnknownConditions, Timestamp);
//   - /healthz and /readyz (ready once a serving certificate is loaded).
//
// Run(ctx, Options) serves them. The serving certificate comes from a
// kubernetes.io/tls Secret watched through the API (certs.SecretSource),
// not a mounted volume, so a certificate rotated by the certificate
// manager is served at the next TLS handshake.
//
// ValidatingConfiguration and MutatingConfiguration build the webhook
// configurations (one source for the operator, the bundle and the tests):
// failurePolicy Fail for the validation, Ignore for the mutations, no side
// effects, AdmissionReview v1, reached through a Service or a URL
// (Endpoint).
//
// Rules are the RBAC rules the server needs (get, list, watch of its one
// Secret). The server only reads that Secret; it writes nothing to the API
// and never touches a node.
package webhook
