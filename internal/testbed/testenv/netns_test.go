package testenv

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// TestStartInNetNS runs the control plane inside a namespace: both
// processes live there, the API answers through Config (which dials from
// inside), and the serving certificate covers the bind address and the
// extra hosts.
func TestStartInNetNS(t *testing.T) {
	ns := nstest.New(t)
	ns.AddrAdd(t, "lo", "198.51.100.7/32")
	e, err := Start(t.Context(), Options{
		RootDir: t.TempDir(),
		NetNS:   ns.Path,
		Address: "198.51.100.7",
		Hosts:   []string{"api.lab.example"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	if want := "https://198.51.100.7:6443"; e.Host() != want {
		t.Errorf("Host() = %q, want %q", e.Host(), want)
	}
	nsIno := inode(t, ns.Path)
	hostIno := inode(t, "/proc/self/ns/net")
	for _, pid := range e.PIDs() {
		got := inode(t, filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"))
		if got != nsIno {
			t.Errorf("process %d runs in netns inode %d, want the test namespace %d (host: %d)", pid, got, nsIno, hostIno)
		}
	}
	kube, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("API through the namespace dialer: %v", err)
	}
	certPEM, err := os.ReadFile(filepath.Join(e.Dir, "pki", "apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"198.51.100.7", "127.0.0.1", "api.lab.example"} {
		if err := cert.VerifyHostname(h); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
