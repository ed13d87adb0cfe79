package webhook_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/certs"
)

// TestRotationFailsNoRequest creates a policy every 200 ms while the CA
// and the serving certificate rotate every few seconds, until at least two
// CA rotations and two serving-certificate rotations (beyond the first of
// each) happened. Every valid policy must be admitted and stamped by the
// mutating webhook (whose failures the API server would otherwise
// silently ignore), and every fifth, invalid, policy refused by the
// validating webhook with its reason: 0 failures.
func TestRotationFailsNoRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("rotation takes about 20 s")
	}
	cfg := certs.Config{Intervals: testIntervals, Propagation: time.Second}
	f := start(t, "rotation", cfg)
	cas, servings := map[string]bool{}, map[string]bool{}
	observe := func() {
		for name, seen := range map[string]map[string]bool{cfg.WithDefaults().CASecret: cas, cfg.WithDefaults().ServingSecret: servings} {
			s, err := f.kube.CoreV1().Secrets(f.ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("get Secret %s: %v", name, err)
				continue
			}
			seen[serialOf(t, s.Data["tls.crt"])] = true
		}
	}
	var creates, refusals, failures int
	begin := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for n := 0; len(cas) < 3 || len(servings) < 3; n++ {
		if time.Since(begin) > 90*time.Second {
			t.Fatalf("after %v: %d CAs, %d serving certificates seen; want 3 each", time.Since(begin), len(cas), len(servings))
		}
		<-tick.C
		observe()
		if n%5 == 4 {
			p := policy(fmt.Sprintf("rotation-bad-%d", n), state(`{"interfaces":[{"name":"eth1.5000","type":"vlan","vlan":{"base-iface":"eth1","id":5000}}]}`))
			err := f.admin.Create(t.Context(), p)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.desiredState.interfaces[0].vlan.id: 5000 is out of range 0..4094") {
				failures++
				t.Errorf("invalid policy %d at %v: %v, want refused as invalid", n, time.Since(begin).Round(time.Millisecond), err)
				continue
			}
			refusals++
			continue
		}
		p := policy(fmt.Sprintf("rotation-%d", n), ethernet("eth1"))
		if err := f.admin.Create(t.Context(), p); err != nil {
			failures++
			t.Errorf("policy %d at %v: %v", n, time.Since(begin).Round(time.Millisecond), err)
			continue
		}
		if p.Annotations[shared.WebhookMutatingTimestampAnnotation] == "" {
			failures++
			t.Errorf("policy %d at %v: not stamped: the mutating webhook was not reached", n, time.Since(begin).Round(time.Millisecond))
			continue
		}
		creates++
	}
	elapsed := time.Since(begin)
	t.Logf("%v: %d creates admitted, %d invalid refused, %d failures; %d CAs (%d rotations), %d serving certificates (%d rotations)",
		elapsed.Round(time.Millisecond), creates, refusals, failures, len(cas), len(cas)-1, len(servings), len(servings)-1)
	cleanup(t, f.admin, "rotation-")
}

// serialOf is the serial number of the first certificate of a PEM text.
func serialOf(t *testing.T, data []byte) string {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

// cleanup deletes the policies named with prefix.
func cleanup(t *testing.T, c client.Client, prefix string) {
	t.Helper()
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(nmv1GVK("NodeNetworkConfigurationPolicyList"))
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if strings.HasPrefix(list.Items[i].Name, prefix) {
			_ = c.Delete(context.Background(), &list.Items[i])
		}
	}
}
