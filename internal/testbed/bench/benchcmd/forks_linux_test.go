package benchcmd

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestForkCounter checks the connector counts the processes a tracked
// process and its descendants create, and nothing of untracked ones.
func TestForkCounter(t *testing.T) {
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })

	self, err := newForkCounter([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	untracked, err := newForkCounter([]int{other.Process.Pid})
	if err != nil {
		_, _, _ = self.stop()
		t.Fatal(err)
	}
	// sh is our child; each /bin/true before the last is sh's child.
	if out, err := exec.Command("sh", "-c", "/bin/true; /bin/true; /bin/true; exit 0").CombinedOutput(); err != nil {
		t.Fatalf("sh: %v: %s", err, out)
	}
	time.Sleep(200 * time.Millisecond) // events arrive asynchronously
	got, lost, err := self.stop()
	if err != nil {
		t.Fatal(err)
	}
	gotOther, _, err := untracked.stop()
	if err != nil {
		t.Fatal(err)
	}
	if lost > 0 {
		t.Logf("kernel dropped events %d times", lost)
	}
	if got < 4 {
		t.Errorf("forks of this process and descendants = %d, want at least 4 (sh and its 3 children)", got)
	}
	if gotOther != 0 {
		t.Errorf("forks counted for an idle untracked process = %d, want 0", gotOther)
	}
}
