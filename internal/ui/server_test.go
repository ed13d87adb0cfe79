package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }

const testToken = "0123456789abcdef0123456789abcdef"

var assets = fstest.MapFS{"index.html": {Data: []byte("<html>views</html>")}}

// serve starts a Server in front of the test control plane, as the user
// of cfgUser ("" the admin), and returns its base URL.
func serve(t *testing.T, user string, built bool) string {
	t.Helper()
	cfg := env.Config
	if user != "" {
		var err error
		if cfg, err = env.UserConfig(user); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewUnstartedServer(nil)
	s, err := New(Config{Rest: cfg, Assets: assets, Built: built, Token: testToken, Addr: ts.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = s
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}

// client shows redirects and keeps cookies.
func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func do(t *testing.T, c *http.Client, method, u string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// login opens the token URL, as the browser does with the printed one.
func login(t *testing.T, c *http.Client, base string) {
	t.Helper()
	code, _ := do(t, c, "GET", base+"/?token="+testToken, nil)
	if code != http.StatusSeeOther {
		t.Fatalf("token URL: got %d, want 303 to the page without the token", code)
	}
}

func TestGuard(t *testing.T) {
	base := serve(t, "", true)
	u, _ := url.Parse(base)
	loggedIn := client(t)
	login(t, loggedIn, base)
	tests := []struct {
		name     string
		client   *http.Client
		method   string
		path     string
		header   map[string]string
		want     int
		wantBody string
	}{
		{"page without token", client(t), "GET", "/", nil, 403, "no token"},
		{"API without token", client(t), "GET", "/api/v1/nodes", nil, 403, "no token"},
		{"wrong token", client(t), "GET", "/?token=ffffffffffffffffffffffffffffffff", nil, 403, "wrong token"},
		{"page with token cookie", loggedIn, "GET", "/", nil, 200, "views"},
		{"API with token cookie", loggedIn, "GET", "/api/v1/namespaces/default", nil, 200, `"name":"default"`},
		{"same origin", loggedIn, "GET", "/api/v1/namespaces/default", map[string]string{"Origin": base}, 200, `"name":"default"`},
		{"foreign origin", loggedIn, "GET", "/api/v1/namespaces/default", map[string]string{"Origin": "http://evil.example"}, 403, "origin"},
		{"foreign origin writing", loggedIn, "DELETE", "/apis/nmstate.io/v1/nodenetworkconfigurationpolicies/x", map[string]string{"Origin": "http://evil.example"}, 403, "origin"},
		{"origin on another port", loggedIn, "GET", "/", map[string]string{"Origin": "http://127.0.0.1:1"}, 403, "origin"},
		{"foreign host (DNS rebinding)", loggedIn, "GET", "/", map[string]string{"Host": "evil.example:" + u.Port()}, 403, "host"},
		{"localhost by name", client(t), "GET", "/", map[string]string{"Host": "localhost:" + u.Port(), "Cookie": "knmstate-ui-" + u.Port() + "=" + testToken}, 200, "views"},
		{"token in the URL of an API call", client(t), "GET", "/api/v1/namespaces/default?token=" + testToken, nil, 303, ""},
		{"a cookie with another value", client(t), "GET", "/api/v1/nodes", map[string]string{"Cookie": "knmstate-ui-" + u.Port() + "=nottoken"}, 403, "no token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, tc.client, tc.method, base+tc.path, tc.header)
			if code != tc.want || !strings.Contains(body, tc.wantBody) {
				t.Errorf("%s %s: got %d %q, want %d containing %q", tc.method, tc.path, code, body, tc.want, tc.wantBody)
			}
		})
	}
}

// TestUsersCredentials: the API server sees the kubeconfig's user, so
// RBAC decides, and nothing the browser sends can change who that is.
func TestUsersCredentials(t *testing.T) {
	base := serve(t, "ui-test-nobody", true)
	c := client(t)
	login(t, c, base)
	code, body := do(t, c, "GET", base+"/apis/nmstate.io/v1/nodenetworkconfigurationpolicies", nil)
	if code != http.StatusForbidden || !strings.Contains(body, `User \"ui-test-nobody\" cannot list`) {
		t.Fatalf("as a user without rights: got %d %s, want the API server's 403 naming the user", code, body)
	}
	code, body = do(t, c, "GET", base+"/apis/nmstate.io/v1/nodenetworkconfigurationpolicies",
		map[string]string{"Impersonate-User": "admin", "Impersonate-Group": "system:masters", "Authorization": "Bearer x"})
	if code != http.StatusForbidden || !strings.Contains(body, "ui-test-nobody") {
		t.Fatalf("impersonation headers from the browser: got %d %s, want them dropped (403 as the user)", code, body)
	}
}

// TestWatchStreams: a watch through the proxy delivers events as they
// happen, not when the response ends.
func TestWatchStreams(t *testing.T) {
	base := serve(t, "", true)
	c := client(t)
	login(t, c, base)
	ns := "ui-watch"
	path := base + "/api/v1/namespaces/default/configmaps"
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", path+"?watch=1&fieldSelector=metadata.name%3D"+ns, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + ns + `"}}`
	post, _ := http.NewRequestWithContext(ctx, "POST", path, strings.NewReader(cm))
	post.Header.Set("Content-Type", "application/json")
	pr, err := c.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	pr.Body.Close()
	if pr.StatusCode != 201 {
		t.Fatalf("create through the proxy: %d", pr.StatusCode)
	}
	t.Cleanup(func() {
		del, _ := http.NewRequest("DELETE", path+"/"+ns, nil)
		if r, err := c.Do(del); err == nil {
			r.Body.Close()
		}
	})
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading the watch: %v", err)
	}
	var ev struct {
		Type   string
		Object struct{ Metadata struct{ Name string } }
	}
	if err := json.Unmarshal(line, &ev); err != nil || ev.Type != "ADDED" || ev.Object.Metadata.Name != ns {
		t.Fatalf("watch event: %s (%v), want ADDED %s", line, err, ns)
	}
}

func TestWithoutBundle(t *testing.T) {
	base := serve(t, "", false)
	c := client(t)
	login(t, c, base)
	if code, body := do(t, c, "GET", base+"/", nil); code != http.StatusServiceUnavailable || !strings.Contains(body, "make build") {
		t.Errorf("page of a binary without views: got %d %q, want 503 saying how to build them", code, body)
	}
	if code, _ := do(t, c, "GET", base+"/api/v1/namespaces/default", nil); code != 200 {
		t.Errorf("API of a binary without views: got %d, want 200", code)
	}
}

// TestRun: the command's path: a kubeconfig file, a random token, the
// printed URL works.
func TestRun(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Listen: "127.0.0.1:0", Kubeconfig: kubeconfig, Assets: assets, Built: true}, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("printed %q, want a URL", line)
	}
	u, err := url.Parse(strings.TrimSpace(line[i:]))
	if err != nil || len(u.Query().Get("token")) != 32 {
		t.Fatalf("printed URL %q (%v): want a 128-bit token", line, err)
	}
	c := client(t)
	c.CheckRedirect = nil
	if code, body := do(t, c, "GET", u.String(), nil); code != 200 || body != "<html>views</html>" {
		t.Errorf("printed URL: got %d %q", code, body)
	}
	if code, _ := do(t, client(t), "GET", "http://"+u.Host+"/", nil); code != 403 {
		t.Errorf("without the token: got %d, want 403", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestValidate(t *testing.T) {
	o := Options{}
	if err := o.Validate(); err != nil || o.Listen != DefaultListen {
		t.Errorf("default listen: %q %v", o.Listen, err)
	}
	o = Options{Listen: "8080"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `--listen "8080"`) {
		t.Errorf("listen without port: %v", err)
	}
	if _, err := New(Config{Token: "short", Addr: "127.0.0.1:1"}); err == nil {
		t.Error("a short token was accepted")
	}
}
