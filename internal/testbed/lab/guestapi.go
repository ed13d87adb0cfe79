package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab/labvm"
)

// Guest mode: the supervisor on this machine and the agent in the guest
// (`knmstate lab guest`) talk HTTP through a port qemu forwards from this
// machine's loopback, with a bearer token both got from the lab's files.

// apiPort is the API server's port at the switch's address, as the nodes
// reach it in every mode.
const apiPort = 6443

// guestAgentPort is the agent's port in the guest.
const guestAgentPort = 7000

// guestDir is the lab's directory inside the guest.
const guestDir = "/lab"

// guestConfigPath is the agent's configuration in the guest's initramfs.
const guestConfigPath = "/etc/knmstate-lab/guest.json"

// guestBinary is where the knmstate binary is in the guest.
const guestBinary = "/usr/bin/knmstate"

// PhaseNetworkReady is a guest agent's phase once the switch, the nodes
// and their DHCP leases are up: it waits for the API server's address and
// the handlers' kubeconfigs (guestStart).
const PhaseNetworkReady = "NetworkReady"

// GuestConfig configures the guest agent: the lab's shape, as the
// supervisor planned it.
type GuestConfig struct {
	Name  string      `json:"name"`
	Nodes []NodeState `json:"nodes"`
	// NodeRuntime runs each node's DHCP: true (`knmstate nmstatectl
	// service`) or false (static addresses, Options.Nmstatectl "none").
	NodeRuntime bool     `json:"nodeRuntime"`
	HandlerArgs []string `json:"handlerArgs,omitempty"`
	// Cables are the virtio-net pairs the guest has for the nodes' NICs
	// (labvm.Machine.Cables), in the order of the nodes and their NICs.
	Cables []labvm.Cable `json:"cables,omitempty"`
	// Token authorizes the supervisor's requests.
	Token string `json:"token"`
	// Backend is the nodes' network backend (Options.Backend): with
	// networkmanager each node runs its own NetworkManager in the guest.
	Backend string `json:"backend,omitempty"`
	// NMOVSBuild is where the guest's image carries the NetworkManager
	// with its OVS plugin (nmrun.BuildAt; at this machine's path), "" if
	// the nodes run no Open vSwitch.
	NMOVSBuild string `json:"nmOVSBuild,omitempty"`
}

// guestStart is what the supervisor sends once the control plane runs.
type guestStart struct {
	// APIServer is the API server's host:port as the guest dials it.
	APIServer string `json:"apiServer"`
	// Kubeconfigs are the handlers' kubeconfig files by node; their server
	// is the switch's address, where the agent's forwarder listens.
	Kubeconfigs map[string][]byte `json:"kubeconfigs"`
}

// guestClient is the supervisor's (and lab status's) side of the agent.
type guestClient struct {
	addr, token string
	http        *http.Client
}

func newGuestClient(addr, token string) *guestClient {
	// One kept-alive connection: qemu's user-mode network grows with
	// connection churn.
	return &guestClient{addr: addr, token: token, http: &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute},
	}}
}

// guestClientFor is the client of a running lab's guest.
func guestClientFor(st *State) (*guestClient, error) {
	if st.Guest == nil {
		return nil, fmt.Errorf("lab %s runs no guest", st.Name)
	}
	token, err := os.ReadFile(st.Guest.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("guest agent token: %w", err)
	}
	return newGuestClient(st.Guest.Agent, strings.TrimSpace(string(token))), nil
}

func (c *guestClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.addr+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("guest agent: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("guest agent %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("guest agent %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("guest agent %s: %w", path, err)
		}
	}
	return nil
}

// status is the agent's state (its phase, nodes and processes).
func (c *guestClient) status(ctx context.Context) (*State, error) {
	st := &State{}
	return st, c.do(ctx, http.MethodGet, "/status", nil, st)
}

// start hands the agent the API server and the handlers' kubeconfigs.
func (c *guestClient) start(ctx context.Context, gs guestStart) error {
	return c.do(ctx, http.MethodPost, "/start", gs, nil)
}
