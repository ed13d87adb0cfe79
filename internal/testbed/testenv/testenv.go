// Package testenv runs a real, throw-away Kubernetes control plane (Debian's
// etcd and the project's pinned bin/kube-apiserver) for tests, the demo and
// the lab: free loopback ports, data in one temp dir, client-certificate
// authentication, RBAC authorization, service-account signing and
// ValidatingAdmissionPolicy on, and the project's CRDs and admission policy
// installed and active before Start returns. With Options.NetNS the control
// plane runs inside a network namespace, bound to an address there (the
// lab's switch namespace), and the returned configurations dial from inside
// it.
//
// It owns the processes and the directory it creates and nothing else: it
// never touches a real cluster, a kubeconfig it did not write, or another
// owner's processes. Children die with their owner (Pdeathsig), and a small
// guard process removes the directory and kills leftovers when the owner
// dies abruptly; Start also removes directories of dead owners.
package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// dirPrefix names the temp dirs of control planes, so that stale ones can
// be found and removed.
const dirPrefix = "knmstate-testenv-"

// modulePath identifies the repository root (hack/tools has its own go.mod).
const modulePath = "github.com/knmstate/knmstate"

// Options configure Start. The zero value is fine inside the repository.
type Options struct {
	// RootDir is where the control plane's temp dir is created; default
	// os.TempDir().
	RootDir string
	// RepoRoot is the repository root; default: the nearest ancestor of the
	// working directory holding the project's go.mod.
	RepoRoot string
	// APIServer is the kube-apiserver binary; default RepoRoot/bin/kube-apiserver.
	APIServer string
	// Etcd is the etcd binary; default /usr/bin/etcd.
	Etcd string
	// SkipInstall leaves the API empty (no CRDs, no admission policy).
	SkipInstall bool
	// NetNS, when set, runs etcd and kube-apiserver inside this network
	// namespace (a path such as /run/netns/NAME), as the lab does: they
	// listen only there, and Config (and UserConfig's results) dial from
	// inside it. The namespace must have loopback up.
	NetNS string
	// Address is the address kube-apiserver binds to and advertises;
	// default 127.0.0.1. With NetNS it is typically an address of that
	// namespace; "0.0.0.0" or "::" binds all of its addresses.
	Address string
	// Port is kube-apiserver's secure port; default a free loopback port,
	// or 6443 with NetNS (a fresh namespace has every port free).
	Port int
	// Hosts are extra names and addresses the serving certificate covers
	// (127.0.0.1, localhost and Address always are), e.g. the address of a
	// forwarder's far end.
	Hosts []string
	// Kubelets prepares the API server for real kubelets, controllers and
	// pods: the Node authorizer and the NodeRestriction admission plugin,
	// the `kubernetes` Service's endpoints kept (lease reconciler), its
	// ClusterIP and names in the serving certificate, webhooks and
	// aggregated APIs reached at their endpoints' addresses (where the API
	// server runs there is no kube-proxy), and a client certificate for
	// the API server's connections to kubelets.
	Kubelets bool
	// ServiceCIDR is the Service IP range; default 10.0.0.0/24. The first
	// address is the `kubernetes` Service's ClusterIP.
	ServiceCIDR string
	// AuditWrites makes the API server log every request that changes
	// something (create, update, patch, delete) as a JSON line of the
	// audit log (Env.AuditLog): who wrote what, with which user agent.
	AuditWrites bool
}

// auditPolicy logs the metadata of writes only: reads and watches are
// most of the traffic and say nothing about who changed what.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// AuditLog is the API server's audit log of writes (Options.AuditWrites),
// "" without one.
func (e *Env) AuditLog() string {
	if !e.opts.AuditWrites {
		return ""
	}
	return filepath.Join(e.Dir, "audit.log")
}

// Env is one running control plane.
type Env struct {
	// Dir holds everything the control plane writes; removed by Stop.
	Dir string
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// StartupDuration is the time from Start to a ready, installed API.
	StartupDuration time.Duration

	ca    *authority
	opts  Options
	host  string
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	hosts []string
	// mu guards etcd and apiserver, which Kill and Restart replace.
	mu        sync.Mutex
	etcd      *child
	apiserver *child
	guard     *guard
	spawner   *spawner
	// etcdURL is etcd's client URL (its health check after a restart).
	etcdURL string
}

// Start starts etcd and kube-apiserver and waits until the API is ready with
// the project's CRDs served and admission policy active. On error nothing is
// left behind.
func Start(ctx context.Context, opts Options) (*Env, error) {
	begin := time.Now()
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	removeStale(opts.RootDir)
	// The free ports are only free when picked; another process can take
	// one before etcd or kube-apiserver binds it. Then start afresh.
	for attempt := 1; ; attempt++ {
		e, err := start(ctx, opts)
		if errors.Is(err, errPortTaken) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		e.StartupDuration = time.Since(begin)
		return e, nil
	}
}

// errPortTaken marks a start that failed because a port was taken.
var errPortTaken = errors.New("port taken")

func start(ctx context.Context, opts Options) (_ *Env, err error) {

	dir, err := os.MkdirTemp(opts.RootDir, dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("testenv dir: %w", err)
	}
	e := &Env{Dir: dir}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, fmt.Errorf("testenv owner: %w", err)
	}
	if e.guard, err = startGuard(dir); err != nil {
		return nil, err
	}
	if e.spawner, err = newSpawner(opts.NetNS); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}

	var ports []int
	if opts.NetNS != "" {
		// Inside our own namespace the well-known ports are free; the host's
		// free ports say nothing about it.
		ports = []int{2379, 2380, 6443}
		e.dial = netnsDialer(opts.NetNS)
	} else if ports, err = freePorts(3); err != nil {
		return nil, err
	}
	if opts.Port != 0 {
		ports[2] = opts.Port
	}
	etcdClient := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	etcdPeer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	address := opts.Address
	if address == "" {
		address = "127.0.0.1"
	}
	// A wildcard bind is reached through loopback by our own clients.
	reach := address
	if ip := net.ParseIP(address); ip != nil && ip.IsUnspecified() {
		reach = "127.0.0.1"
	}
	e.host = "https://" + net.JoinHostPort(reach, strconv.Itoa(ports[2]))
	e.hosts = append([]string{"127.0.0.1", "localhost", reach}, opts.Hosts...)
	e.opts = opts
	if opts.Kubelets {
		clusterIP, err := firstAddress(opts.ServiceCIDR)
		if err != nil {
			return nil, err
		}
		// What in-cluster clients dial: the Service's ClusterIP and names.
		e.hosts = append(e.hosts, clusterIP.String(), "kubernetes", "kubernetes.default",
			"kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	}

	if err := e.writeCredentials(); err != nil {
		return nil, err
	}

	e.etcd, err = e.spawn("etcd", opts.Etcd,
		"--name=default",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdClient,
		"--advertise-client-urls="+etcdClient,
		"--listen-peer-urls="+etcdPeer,
		"--initial-advertise-peer-urls="+etcdPeer,
		"--initial-cluster=default="+etcdPeer,
		"--logger=zap",
		"--log-level=warn",
		// Periodic progress notifications let the apiserver's watch cache
		// learn the current revision of idle resources; without them a
		// watch "from now" on a CRD nobody wrote to lately fails with "Too
		// large resource version" for seconds.
		"--experimental-watch-progress-notify-interval=1s",
	)
	if err != nil {
		return nil, err
	}
	// kube-apiserver gives up on an unreachable etcd after a fixed storage
	// timeout; on a loaded machine etcd can take longer than that to
	// listen, so start the API server only once etcd answers.
	e.etcdURL = etcdClient
	if err := e.waitEtcd(ctx, etcdClient); err != nil {
		return nil, err
	}
	if opts.AuditWrites {
		if err := os.WriteFile(filepath.Join(e.Dir, "audit-policy.yaml"), []byte(auditPolicy), 0o644); err != nil {
			return nil, fmt.Errorf("writing the audit policy: %w", err)
		}
	}
	e.apiserver, err = e.spawn("kube-apiserver", opts.APIServer, e.apiserverArgs(etcdClient, address, ports[2])...)
	if err != nil {
		return nil, err
	}

	// Install while the API server finishes its post-start hooks (mostly
	// RBAC bootstrap): the admin is in system:masters, which needs no RBAC
	// roles, and the admission policy source needs about a second of its
	// own to load. Overlapping the two saves that second.
	installErr := make(chan error, 1)
	installCtx, cancelInstall := context.WithCancel(ctx)
	defer cancelInstall()
	go func() {
		if opts.SkipInstall {
			installErr <- nil
			return
		}
		installErr <- install(installCtx, e.Config)
	}()
	if err := e.waitReady(ctx); err != nil {
		cancelInstall()
		<-installErr
		return nil, err
	}
	if err := <-installErr; err != nil {
		return nil, fmt.Errorf("install API: %w%s", err, e.logTail())
	}
	return e, nil
}

func (o *Options) defaults() error {
	if o.RootDir == "" {
		o.RootDir = os.TempDir()
	}
	if o.Etcd == "" {
		o.Etcd = "/usr/bin/etcd"
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = "10.0.0.0/24"
	}
	if _, err := firstAddress(o.ServiceCIDR); err != nil {
		return err
	}
	if o.APIServer == "" {
		if o.RepoRoot == "" {
			root, err := FindRepoRoot()
			if err != nil {
				return err
			}
			o.RepoRoot = root
		}
		o.APIServer = filepath.Join(o.RepoRoot, "bin", "kube-apiserver")
	}
	for _, bin := range []string{o.Etcd, o.APIServer} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("testenv: %w (run `make setup`)", err)
		}
	}
	return nil
}

// FindRepoRoot returns the nearest ancestor of the working directory that
// holds the project's go.mod.
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(mod), []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find repository root: no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

func (e *Env) apiserverArgs(etcd, address string, port int) []string {
	advertise := address
	if ip := net.ParseIP(address); ip != nil && ip.IsUnspecified() {
		advertise = "127.0.0.1"
	}
	p := func(name string) string { return filepath.Join(e.Dir, "pki", name) }
	args := []string{
		"--etcd-servers=" + etcd,
		"--bind-address=" + address,
		"--advertise-address=" + advertise,
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(e.Dir, "apiserver"),
		"--tls-cert-file=" + p("apiserver.crt"),
		"--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"),
		"--anonymous-auth=false",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p("sa.pub"),
		"--service-account-signing-key-file=" + p("sa.key"),
		"--service-cluster-ip-range=" + e.opts.ServiceCIDR,
		"--runtime-config=admissionregistration.k8s.io/v1=true",
		// Node agents (knmstate's handler among them) are privileged pods.
		"--allow-privileged=true",
		// Start-up speed: no API priority and fairness bootstrap, no
		// profiling handlers.
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--shutdown-delay-duration=0s",
		"--v=1",
	}
	if e.opts.AuditWrites {
		args = append(args, "--audit-policy-file="+filepath.Join(e.Dir, "audit-policy.yaml"),
			"--audit-log-path="+e.AuditLog(), "--audit-log-format=json")
	}
	if !e.opts.Kubelets {
		return append(args,
			"--authorization-mode=RBAC",
			// ValidatingAdmissionPolicy is on by default in 1.36; naming
			// it makes a future default change fail loudly instead of
			// silently.
			"--enable-admission-plugins=ValidatingAdmissionPolicy",
			// No kubelet or pod needs the `kubernetes` Service.
			"--endpoint-reconciler-type=none",
		)
	}
	return append(args,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction,ValidatingAdmissionPolicy",
		"--endpoint-reconciler-type=lease",
		// Webhook and aggregated API Services are dialed at their
		// endpoints: no kube-proxy runs where the API server does.
		"--enable-aggregator-routing=true",
		"--kubelet-client-certificate="+p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
	)
}

// firstAddress is the first host address of a CIDR, the `kubernetes`
// Service's ClusterIP.
func firstAddress(cidr string) (netip.Addr, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("service CIDR: %w", err)
	}
	a := p.Masked().Addr().Next()
	if !p.Contains(a) {
		return netip.Addr{}, fmt.Errorf("service CIDR %s has no host address", cidr)
	}
	return a, nil
}

func (e *Env) writeCredentials() error {
	now := time.Now()
	ca, err := newAuthority(now)
	if err != nil {
		return err
	}
	e.ca = ca
	srvCert, srvKey, err := ca.issue(now, "kube-apiserver", nil, e.hosts)
	if err != nil {
		return err
	}
	saKey, err := newKey()
	if err != nil {
		return fmt.Errorf("service account key: %w", err)
	}
	saKeyPEM, err := pemKey(saKey)
	if err != nil {
		return err
	}
	saPubPEM, err := pemPublicKey(saKey.Public())
	if err != nil {
		return err
	}
	pki := filepath.Join(e.Dir, "pki")
	if err := os.Mkdir(pki, 0o700); err != nil {
		return fmt.Errorf("pki dir: %w", err)
	}
	files := map[string][]byte{
		"ca.crt": ca.certPEM, "ca.key": ca.keyPEM, "apiserver.crt": srvCert, "apiserver.key": srvKey,
		"sa.key": saKeyPEM, "sa.pub": saPubPEM,
	}
	if e.opts.Kubelets {
		// Kubelets authorize the API server's requests (logs, exec) by
		// this identity.
		cert, key, err := ca.issue(now, "kube-apiserver-kubelet-client", []string{"system:masters"}, nil)
		if err != nil {
			return err
		}
		files["apiserver-kubelet-client.crt"], files["apiserver-kubelet-client.key"] = cert, key
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(pki, name), data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	admin, err := e.UserConfig("admin", "system:masters")
	if err != nil {
		return err
	}
	e.Config = admin
	return nil
}

// UserConfig returns a client configuration authenticating as user in
// groups, with a client certificate signed by the control plane's CA.
func (e *Env) UserConfig(user string, groups ...string) (*rest.Config, error) {
	cert, key, err := e.ca.issue(time.Now(), user, groups, nil)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host: e.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   e.ca.certPEM,
			CertData: cert,
			KeyData:  key,
		},
		// Tests create many objects quickly; client-side throttling would
		// only slow them down.
		QPS:   1000,
		Burst: 2000,
		// nil unless the control plane runs in a namespace (Options.NetNS).
		Dial: e.dial,
	}, nil
}

// spawn starts one child process whose output goes to Dir/<name>.log and
// which the kernel kills if this process dies.
func (e *Env) spawn(name, bin string, args ...string) (*child, error) {
	return e.spawnLog(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, bin, args...)
}

// spawnLog is spawn with the log file opened with flag (a restart
// appends to the log of the run it replaces).
func (e *Env) spawnLog(name string, flag int, bin string, args ...string) (*child, error) {
	log, err := os.OpenFile(filepath.Join(e.Dir, name+".log"), flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = e.Dir
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig: syscall.SIGKILL,
		// Own process group: a Ctrl-C meant for the owner reaches the
		// owner only, which then stops the children in order.
		Setpgid: true,
	}
	if err := e.spawner.start(cmd); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	log.Close()
	c := &child{name: name, bin: bin, args: args, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	if err := e.guard.watch(cmd.Process.Pid); err != nil {
		c.kill()
		return nil, err
	}
	return c, nil
}

// child is one started process; done closes once it has exited and been
// reaped.
type child struct {
	name string
	// bin and args start it again (Restart).
	bin  string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// kill kills the process and waits until it is reaped.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// waitEtcd polls etcd's /health until it answers healthy.
func (e *Env) waitEtcd(ctx context.Context, url string) error {
	transport := &http.Transport{}
	if e.dial != nil {
		transport.DialContext = e.dial
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: time.Second}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	for {
		if etcd, _ := e.children(); etcd.exited() {
			tail := e.logTail()
			if strings.Contains(tail, "address already in use") {
				return fmt.Errorf("etcd exited during start-up: %w%s", errPortTaken, tail)
			}
			return fmt.Errorf("etcd exited during start-up%s", tail)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("health: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd not healthy: %w (last: %v)%s", ctx.Err(), last, e.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitReady polls /readyz until the API server reports ready (all its
// post-start hooks done, etcd reachable).
func (e *Env) waitReady(ctx context.Context) error {
	client, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		return fmt.Errorf("readyz client: %w", err)
	}
	client.Timeout = time.Second
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last error
	for {
		etcd, apiserver := e.children()
		for _, c := range []*child{etcd, apiserver} {
			if c.exited() {
				tail := e.logTail()
				if strings.Contains(tail, "address already in use") {
					return fmt.Errorf("%s exited during start-up: %w%s", c.name, errPortTaken, tail)
				}
				return fmt.Errorf("%s exited during start-up%s", c.name, tail)
			}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.host+"/readyz", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readyz: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready: %w (last: %v)%s", ctx.Err(), last, e.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logTail returns the end of the children's logs, for error messages.
func (e *Env) logTail() string {
	var b strings.Builder
	for _, name := range []string{"etcd", "kube-apiserver"} {
		data, err := os.ReadFile(filepath.Join(e.Dir, name+".log"))
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "\n--- %s.log (tail) ---\n%s", name, strings.Join(lines, "\n"))
	}
	return b.String()
}

// Host is the API server's URL as seen from where it runs (inside
// Options.NetNS when set).
func (e *Env) Host() string { return e.host }

// PKIFile returns the path of one of the control plane's credential files
// in Dir: "ca.crt" and "ca.key" (the CA that signs every certificate and
// that the API server trusts for clients), "sa.key" (the service-account
// token signing key, for kube-controller-manager).
func (e *Env) PKIFile(name string) string { return filepath.Join(e.Dir, "pki", name) }

// CAData is the PEM certificate of the control plane's CA, which signs
// the serving certificate and every client certificate.
func (e *Env) CAData() []byte { return e.ca.certPEM }

// PIDs returns the process IDs of the control plane's children.
func (e *Env) PIDs() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var pids []int
	for _, c := range []*child{e.apiserver, e.etcd} {
		if c != nil {
			pids = append(pids, c.cmd.Process.Pid)
		}
	}
	return pids
}

// Stop kills the control plane's processes and removes its directory. It
// is safe to call more than once.
func (e *Env) Stop() error {
	var errs []error
	// The API server first, so it does not log etcd errors while dying;
	// SIGKILL because nothing of a throw-away control plane is worth a
	// graceful shutdown.
	e.mu.Lock()
	for _, c := range []*child{e.apiserver, e.etcd} {
		if c != nil {
			c.kill()
		}
	}
	e.mu.Unlock()
	if e.spawner != nil {
		e.spawner.close()
		e.spawner = nil
	}
	if e.Dir != "" {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", e.Dir, err))
		}
	}
	if e.guard != nil {
		if err := e.guard.release(); err != nil {
			errs = append(errs, err)
		}
		e.guard = nil
	}
	return errors.Join(errs...)
}

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// readLines returns the non-empty lines of a file.
func readLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}
