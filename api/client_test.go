package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmv1 "github.com/knmstate/knmstate/api/v1"
	nmv1beta1 "github.com/knmstate/knmstate/api/v1beta1"
)

// warnings collects the API server's warning headers of one client.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// newClient returns a typed admin client of both API versions and the
// warnings it receives.
func newClient(t *testing.T) (client.Client, *warnings) {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{nmv1.AddToScheme, nmv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// policyOpt shapes a test policy.
type policyOpt func(*shared.NodeNetworkConfigurationPolicySpec)

func nodeSelector(kv ...string) policyOpt {
	return func(s *shared.NodeNetworkConfigurationPolicySpec) {
		s.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			s.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func capture(kv ...string) policyOpt {
	return func(s *shared.NodeNetworkConfigurationPolicySpec) {
		s.Capture = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Capture[kv[i]] = kv[i+1]
		}
	}
}

func desired(t *testing.T, yaml string) policyOpt {
	st, err := shared.NewState([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return func(s *shared.NodeNetworkConfigurationPolicySpec) { s.DesiredState = st }
}

func maxUnavailable(v intstr.IntOrString) policyOpt {
	return func(s *shared.NodeNetworkConfigurationPolicySpec) { s.MaxUnavailable = &v }
}

// policy builds a v1 policy.
func policy(name string, opts ...policyOpt) *nmv1.NodeNetworkConfigurationPolicy {
	p := &nmv1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(&p.Spec)
	}
	return p
}

// policyV1beta1 builds a v1beta1 policy.
func policyV1beta1(name string, opts ...policyOpt) *nmv1beta1.NodeNetworkConfigurationPolicy {
	p := &nmv1beta1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(&p.Spec)
	}
	return p
}

// create creates obj and deletes it when the test ends.
func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
}

// setPolicyStatus writes conditions through the status subresource, as the
// controller does.
func setPolicyStatus(t *testing.T, c client.Client, p *nmv1.NodeNetworkConfigurationPolicy, conds ...shared.Condition) {
	t.Helper()
	p.Status.Conditions = conds
	if err := c.Status().Update(t.Context(), p); err != nil {
		t.Fatalf("status update of %s: %v", p.Name, err)
	}
}

func condition(ty shared.ConditionType, s corev1.ConditionStatus, reason shared.ConditionReason) shared.Condition {
	now := metav1.Now()
	return shared.Condition{Type: ty, Status: s, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
}

// table GETs path as a server-side Table (what kubectl get prints) and
// returns its rows as column name -> cell text.
func table(t *testing.T, path string) []map[string]string {
	t.Helper()
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, env.Config.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, body)
	}
	var tab metav1.Table
	if err := json.Unmarshal(body, &tab); err != nil {
		t.Fatalf("decode table of %s: %v", path, err)
	}
	var rows []map[string]string
	for _, r := range tab.Rows {
		row := map[string]string{}
		for i, col := range tab.ColumnDefinitions {
			if i < len(r.Cells) {
				row[col.Name] = fmt.Sprint(r.Cells[i])
			}
		}
		rows = append(rows, row)
	}
	return rows
}
