package scrape

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Decisions are remembered this long: a scraper every 15–60 s costs the
// API server two reviews a minute per endpoint at most, and a revoked
// permission takes effect within a minute. Denials are kept shorter, so a
// fix of RBAC shows soon.
const (
	allowTTL       = time.Minute
	denyTTL        = 10 * time.Second
	reviewTimeout  = 10 * time.Second
	maxCachedUsers = 256
)

// reviewer asks the API server who a token is and whether it may scrape.
type reviewer interface {
	authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error)
	authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error)
}

type apiReviewer struct {
	tokens authnclient.TokenReviewInterface
	access authzclient.SubjectAccessReviewInterface
}

func (a apiReviewer) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	tr, err := a.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, false, fmt.Errorf("token review: %w", err)
	}
	return tr.Status.User, tr.Status.Authenticated, nil
}

func (a apiReviewer) authorize(ctx context.Context, u authenticationv1.UserInfo, verb, path string) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	return sar.Status.Allowed, nil
}

// decision is a remembered answer for one token, verb and path.
type decision struct {
	status  int // http.StatusOK, StatusUnauthorized or StatusForbidden
	expires time.Time
}

// authFilter lets a request through when its bearer token belongs to a
// user allowed the request's verb on its path.
type authFilter struct {
	reviewer reviewer
	now      func() time.Time

	mu    sync.Mutex
	cache map[[sha256.Size]byte]decision
}

func newAuthFilter(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication: %w", err)
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization: %w", err)
	}
	f := &authFilter{reviewer: apiReviewer{tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews()}, now: time.Now}
	return f.wrap, nil
}

func (f *authFilter) wrap(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		status, err := f.check(req)
		if err != nil {
			log.Error(err, "metrics request not authorized")
		}
		if status != http.StatusOK {
			http.Error(w, http.StatusText(status), status)
			return
		}
		next.ServeHTTP(w, req)
	}), nil
}

// check decides one request: 200 to serve it, 401 without a valid token,
// 403 when the token's user may not. An API error is a 500 and is not
// remembered.
func (f *authFilter) check(req *http.Request) (int, error) {
	token, ok := bearerToken(req.Header.Get("Authorization"))
	if !ok {
		return http.StatusUnauthorized, nil
	}
	verb := strings.ToLower(req.Method)
	key := sha256.Sum256([]byte(verb + " " + req.URL.Path + " " + token))
	now := f.now()
	f.mu.Lock()
	d, ok := f.cache[key]
	f.mu.Unlock()
	if ok && now.Before(d.expires) {
		return d.status, nil
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
	defer cancel()
	status, err := f.review(ctx, token, verb, req.URL.Path)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	ttl := allowTTL
	if status != http.StatusOK {
		ttl = denyTTL
	}
	f.remember(key, decision{status: status, expires: now.Add(ttl)}, now)
	return status, nil
}

func (f *authFilter) review(ctx context.Context, token, verb, path string) (int, error) {
	user, ok, err := f.reviewer.authenticate(ctx, token)
	if err != nil {
		return 0, err
	}
	if !ok {
		return http.StatusUnauthorized, nil
	}
	allowed, err := f.reviewer.authorize(ctx, user, verb, path)
	if err != nil {
		return 0, err
	}
	if !allowed {
		return http.StatusForbidden, nil
	}
	return http.StatusOK, nil
}

// remember stores d, first dropping expired decisions, and all of them
// when that is not enough: the cache holds a few scrapers, never grows
// with requests.
func (f *authFilter) remember(key [sha256.Size]byte, d decision, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cache == nil {
		f.cache = map[[sha256.Size]byte]decision{}
	}
	if len(f.cache) >= maxCachedUsers {
		for k, v := range f.cache {
			if !now.Before(v.expires) {
				delete(f.cache, k)
			}
		}
		if len(f.cache) >= maxCachedUsers {
			clear(f.cache)
		}
	}
	f.cache[key] = d
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
