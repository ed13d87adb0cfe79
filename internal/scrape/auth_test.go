package scrape

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// fakeReviewer knows tokens by user and who may get which path.
type fakeReviewer struct {
	users   map[string]string // token → user
	allowed map[string]bool   // user → may get /metrics
	down    bool              // the API server does not answer
	reviews int
}

func (f *fakeReviewer) authenticate(_ context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	f.reviews++
	if f.down {
		return authenticationv1.UserInfo{}, false, errors.New("connection refused")
	}
	u, ok := f.users[token]
	return authenticationv1.UserInfo{Username: u}, ok, nil
}

func (f *fakeReviewer) authorize(_ context.Context, u authenticationv1.UserInfo, verb, path string) (bool, error) {
	return verb == "get" && path == "/metrics" && f.allowed[u.Username], nil
}

func TestAuthFilter(t *testing.T) {
	rv := &fakeReviewer{
		users:   map[string]string{"t-prom": "prometheus", "t-other": "someone"},
		allowed: map[string]bool{"prometheus": true},
	}
	now := time.Unix(1000, 0)
	f := &authFilter{reviewer: rv, now: func() time.Time { return now }}
	h, err := f.wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, auth string) int {
		req := httptest.NewRequest(method, path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	for _, tc := range []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no header", "GET", "/metrics", "", http.StatusUnauthorized},
		{"not a bearer token", "GET", "/metrics", "Basic dTpw", http.StatusUnauthorized},
		{"empty token", "GET", "/metrics", "Bearer ", http.StatusUnauthorized},
		{"unknown token", "GET", "/metrics", "Bearer nope", http.StatusUnauthorized},
		{"user without the role", "GET", "/metrics", "Bearer t-other", http.StatusForbidden},
		{"scraper", "GET", "/metrics", "Bearer t-prom", http.StatusOK},
		{"scheme in any case", "GET", "/metrics", "bearer t-prom", http.StatusOK},
		{"another path", "GET", "/debug/pprof/", "Bearer t-prom", http.StatusForbidden},
		{"another verb", "POST", "/metrics", "Bearer t-prom", http.StatusForbidden},
	} {
		if got := do(tc.method, tc.path, tc.auth); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}

	// Decisions are remembered: a scrape a minute asks the API server
	// once; after the time to live, again.
	rv.reviews = 0
	for range 3 {
		do("GET", "/metrics", "Bearer t-prom")
	}
	if rv.reviews != 0 {
		t.Errorf("%d reviews for remembered decisions, want 0", rv.reviews)
	}
	now = now.Add(allowTTL)
	do("GET", "/metrics", "Bearer t-prom")
	if rv.reviews != 1 {
		t.Errorf("%d reviews after the decision expired, want 1", rv.reviews)
	}

	// The API server down: 500, and nothing remembered.
	rv.down = true
	if got := do("GET", "/metrics", "Bearer t-new"); got != http.StatusInternalServerError {
		t.Errorf("API server down: %d, want 500", got)
	}
	rv.down = false
	rv.users["t-new"] = "prometheus"
	if got := do("GET", "/metrics", "Bearer t-new"); got != http.StatusOK {
		t.Errorf("API server back: %d, want 200", got)
	}
}

func TestAuthFilterCacheBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	f := &authFilter{now: func() time.Time { return now }}
	for i := range 3 * maxCachedUsers {
		f.remember([32]byte{byte(i), byte(i >> 8)}, decision{status: http.StatusOK, expires: now.Add(time.Minute)}, now)
	}
	if n := len(f.cache); n > maxCachedUsers {
		t.Errorf("%d cached decisions, want at most %d", n, maxCachedUsers)
	}
}

func TestServerOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     Options
		bind   string
		secure bool
	}{
		{"disabled", Options{}, "0", false},
		{"disabled explicitly", Options{BindAddress: "0", Secure: true}, "0", false},
		{"plain", Options{BindAddress: ":8080"}, ":8080", false},
		{"secure", Options{BindAddress: ":8443", Secure: true}, ":8443", true},
	} {
		so := tc.in.Server()
		if so.BindAddress != tc.bind || so.SecureServing != tc.secure || (so.FilterProvider != nil) != tc.secure {
			t.Errorf("%s: bind %q secure %v filter %v, want %q %v", tc.name, so.BindAddress, so.SecureServing, so.FilterProvider != nil, tc.bind, tc.secure)
		}
	}
}
