package labvm

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeKernel makes a kernel cache entry: kver, an image, and modules.dep
// with the devices' modules.
func fakeKernel(t *testing.T, cache, name string, image string) string {
	t.Helper()
	dir := filepath.Join(cache, "kernel", name)
	mods := filepath.Join(dir, "root", "lib", "modules", "6.1.0-test")
	if err := os.MkdirAll(filepath.Join(mods, "kernel"), 0o755); err != nil {
		t.Fatal(err)
	}
	dep := "kernel/virtio.ko:\nkernel/virtio_ring.ko:\n" +
		"kernel/virtio_pci.ko: kernel/virtio.ko kernel/virtio_ring.ko\n" +
		"kernel/virtio_net.ko: kernel/virtio.ko kernel/virtio_ring.ko\n" +
		"kernel/virtio_rng.ko: kernel/virtio.ko kernel/virtio_ring.ko\n"
	for _, m := range []string{"virtio", "virtio_ring", "virtio_pci", "virtio_net", "virtio_rng"} {
		if err := os.WriteFile(filepath.Join(mods, "kernel", m+".ko"), []byte("module "+m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for f, data := range map[string]string{
		filepath.Join(mods, "modules.dep"): dep,
		filepath.Join(dir, "kver"):         "6.1.0-test\n",
		filepath.Join(dir, image):          "kernel",
	} {
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFindKernel(t *testing.T) {
	cache := t.TempDir()
	if _, err := FindKernel(cache); err == nil || !strings.Contains(err.Error(), "hack/kernel-lane/kernel.sh") {
		t.Errorf("empty cache: %v, want an error naming hack/kernel-lane/kernel.sh", err)
	}
	old := fakeKernel(t, cache, "linux-image-6.1.0-1-amd64_6.1.1-1", "vmlinuz")
	dir := fakeKernel(t, cache, "linux-image-6.1.0-2-amd64_6.1.2-1", "vmlinux")
	if err := os.MkdirAll(filepath.Join(cache, "kernel", "linux-image-6.1.0-3-amd64_6.1.3-1.tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	k, err := FindKernel(cache)
	if err != nil {
		t.Fatal(err)
	}
	want := Kernel{Dir: dir, Release: "6.1.0-test", Image: filepath.Join(dir, "vmlinux"), ModulesRoot: filepath.Join(dir, "root")}
	if diff := cmp.Diff(want, k); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if k, err := FindKernel(cache); err != nil || k.Image != filepath.Join(old, "vmlinuz") {
		t.Errorf("with only a vmlinuz: %+v, %v", k, err)
	}
}

func TestMachineArgs(t *testing.T) {
	m := Machine{
		Kernel: Kernel{Image: "/k/vmlinux"}, Initrd: "/d/initrd", MemoryMiB: 2048, CPUs: 2, Console: "/d/console.log",
		Forwards: []Forward{{HostPort: 40001, GuestPort: 7000}},
	}
	got := strings.Join(m.Args(), " ")
	want := "-accel tcg -cpu max -smp 2 -m 2048 -nodefaults -nographic -no-reboot -monitor none" +
		" -serial file:/d/console.log -kernel /k/vmlinux -initrd /d/initrd" +
		" -append console=ttyS0 panic=-1 quiet loglevel=3 no_timer_check rcupdate.rcu_expedited=1 rdinit=/init" +
		" -netdev user,id=net0,net=10.0.2.0/24,host=10.0.2.2,ipv6=off,hostfwd=tcp:127.0.0.1:40001-10.0.2.15:7000" +
		" -device virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56,romfile= -device virtio-rng-pci"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("qemu arguments (-want +got):\n%s", diff)
	}
}

// TestMachineCables: each cable is two NICs on a hub of their own, 15
// cables per PCI bridge, every MAC distinct.
func TestMachineCables(t *testing.T) {
	m := Machine{Kernel: Kernel{Image: "/k/vmlinux"}, Initrd: "/d/initrd", MemoryMiB: 512, CPUs: 1, Console: "/c"}
	for i := 0; i < 16; i++ {
		m.Cables = append(m.Cables, NumberedCable(i))
	}
	m.Cables[1].Node = "02:6b:6e:6d:02:0c"
	args := strings.Join(m.Args(), " ")
	for _, want := range []string{
		"-device pci-bridge,id=cables0,chassis_nr=1",
		"-netdev hubport,id=cable0-0,hubid=0 -device virtio-net-pci,netdev=cable0-0,mac=52:54:01:00:00:01,bus=cables0,addr=0x1,ctrl_vlan=off,romfile=",
		"-netdev hubport,id=cable0-1,hubid=0 -device virtio-net-pci,netdev=cable0-1,mac=52:54:01:00:00:02,bus=cables0,addr=0x2,ctrl_vlan=off,romfile=",
		"-netdev hubport,id=cable1-0,hubid=1 -device virtio-net-pci,netdev=cable1-0,mac=02:6b:6e:6d:02:0c,bus=cables0,addr=0x3,ctrl_vlan=off,romfile=",
		"-netdev hubport,id=cable14-1,hubid=14 -device virtio-net-pci,netdev=cable14-1,mac=52:54:01:00:0e:02,bus=cables0,addr=0x1e,ctrl_vlan=off,romfile=",
		"-device pci-bridge,id=cables1,chassis_nr=2",
		"-netdev hubport,id=cable15-0,hubid=15 -device virtio-net-pci,netdev=cable15-0,mac=52:54:01:00:0f:01,bus=cables1,addr=0x1,ctrl_vlan=off,romfile=",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("qemu arguments lack %q:\n%s", want, args)
		}
	}
	if n := strings.Count(args, "virtio-net-pci"); n != 1+2*16 {
		t.Errorf("%d virtio-net NICs, want the uplink and 32 cable ends", n)
	}
	macs := map[string]bool{UplinkMAC: true}
	for i := 0; i < 300; i++ {
		c := NumberedCable(i)
		if macs[c.Node] || macs[c.Switch] {
			t.Fatalf("cable %d: MAC %s or %s used twice", i, c.Node, c.Switch)
		}
		macs[c.Node], macs[c.Switch] = true, true
	}
}

func TestImageWrite(t *testing.T) {
	cache := t.TempDir()
	fakeKernel(t, cache, "linux-image-6.1.0-2-amd64_6.1.2-1", "vmlinux")
	k, err := FindKernel(cache)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "initrd")
	im := Image{Kernel: k, Data: map[string][]byte{"/etc/app.json": []byte(`{"a":1}`)},
		Command: []string{"/bin/sh", "-c", "echo hi"}, Dirs: []string{"/var/lib/app"}}
	if err := im.Write(out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"init\x00", "bin/sh\x00", "usr/libexec/busybox\x00", `{"a":1}`, "var/lib/app\x00",
		"etc/labvm/command\x00", "/bin/sh\n-c\necho hi\n",
		"virtio_ring.ko\nvirtio.ko\nvirtio_pci.ko\nvirtio_net.ko\nvirtio_rng.ko\n",
		"module virtio_net",
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the image lacks %q", want)
		}
	}
	// The symlink's name, the newc padding, its target.
	if !regexp.MustCompile(`var/run\x00+\.\./run`).Match(b) {
		t.Error("the image lacks the symlink /var/run -> ../run")
	}
	bad := Image{Kernel: k, Command: []string{"sh", "-c", "a\nb"}}
	if err := bad.Write(out); err == nil {
		t.Error("a command argument with a newline was accepted")
	}
}
