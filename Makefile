# knmstate — the two commands a newcomer needs are `make demo` and `make test`.
SHELL := /bin/bash
# A pipe fails when any of its commands fails (go test -json | testreport).
.SHELLFLAGS := -o pipefail -c
# Every build and test binary free of the checkout's path: a clone in
# another folder (CI's) hits the same Go build cache entries, so a tree
# that was built once is not compiled again (docs/testing.md).
export GOFLAGS += -trimpath
GO ?= go

.PHONY: all setup build web test-web test-ui generate verify-generated test test-unit test-kernel test-kernel-e2e test-kernel-nm test-kernel-nm-ci test-e2e test-container test-kubelet test-faults demo bench clean test-e2e-nm test-kubelet-nm

all: build

# The binaries' version (knmstate --version, nmstatectl version, the image
# tags) and the images' timestamp: the last commit's time, so the same tree
# gives the same image digests.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# Static (no cgo: they run in scratch images) and free of build paths.
GO_BUILD = CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X github.com/knmstate/knmstate/internal/version.Version=$(VERSION)"

setup: ## install Debian packages and build bin/kube (kube-apiserver, kubelet, ...), bin/containerd, bin/controller-gen (idempotent)
	@hack/setup.sh

build: web
	$(GO_BUILD) -o bin/nmstatectl ./cmd/nmstatectl
	$(GO_BUILD) -o bin/knmstate ./cmd/knmstate

# The web views' bundle (web/dist) and the same views as an OpenShift
# console plugin (web/plugin/dist, with its browser test page in
# web/plugin/build/host), which knmstate embeds (docs/ui.md,
# docs/openshift.md); the node_modules come from npm ci in make setup.
web: web/dist/size.json web/plugin/dist/plugin-manifest.json

# Built once per change of what it reads, like the plugin below: make test,
# test-kubelet and test-faults all need it, and one build is enough.
WEB_INPUTS := $(shell find web/src -type f 2>/dev/null) $(addprefix web/,package.json package-lock.json build.mjs tsconfig.json)
web/dist/size.json: $(WEB_INPUTS)
	@test -d web/node_modules || { echo "web/node_modules is missing: run make setup"; exit 1; }
	cd web && npm run --silent typecheck && npm run --silent build

# The plugin's webpack build takes half a minute or more: only when what it
# reads changed (the views, the plugin's sources and configuration).
PLUGIN_INPUTS := $(shell find web/src web/plugin/src web/plugin/test/host -type f 2>/dev/null) \
	$(addprefix web/plugin/,package.json package-lock.json webpack.config.js console-extensions.json tsconfig.json)
web/plugin/dist/plugin-manifest.json: $(PLUGIN_INPUTS)
	@test -d web/plugin/node_modules || { echo "web/plugin/node_modules is missing: run make setup"; exit 1; }
	cd web/plugin && npm run --silent typecheck && npm run --silent build

test-web: ## the web views' unit tests (node's test runner), the console plugin's manifest test
	cd web && npm test
	cd web/plugin && npm test

test-ui: setup build ## the web views in headless chromium against a lab, the console plugin's modules against an API server (docs/ui.md)
	$(GO) test -count=1 -timeout 10m ./test/ui/ ./test/consoleplugin/ -args -suite.knmstate=$(CURDIR)/bin/knmstate

.PHONY: images
# The images carry the binary a node runs: knmstate without the test bed
# (-tags notestbed: no lab, bench or throw-away control plane linked in).
# Written again only when what they are made of changed (the binaries, which
# embed the web bundles; the image code; the version): make test and test-faults both
# need them, and one build a run is enough.
IMAGE_INPUTS = bin/node/knmstate bin/pause $(sort $(wildcard hack/images/*.go internal/image/*.go))
images: build ## OCI image layouts bin/images/{knmstate,knmstate-console-plugin,pause} (docs/images.md)
	$(GO_BUILD) -tags notestbed -o bin/node/knmstate ./cmd/knmstate
	$(GO_BUILD) -o bin/pause ./hack/pause
	@inputs=$$({ echo "$(VERSION) $(REVISION) $(SOURCE_DATE_EPOCH)"; cat $(IMAGE_INPUTS); } | sha256sum | cut -d' ' -f1); \
	if [[ -f bin/images/.inputs && "$$(cat bin/images/.inputs)" == "$$inputs" ]]; then echo "images: bin/images is up to date"; else \
		rm -f bin/images/.inputs && \
		$(GO) run ./hack/images --knmstate bin/node/knmstate --pause bin/pause --out bin/images \
			--version $(VERSION) --revision "$(REVISION)" --created $(SOURCE_DATE_EPOCH) && \
		echo "$$inputs" > bin/images/.inputs; fi

generate: setup ## regenerate deepcopy code and CRD manifests
	bin/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
	bin/controller-gen crd:crdVersions=v1 paths=./api/... output:crd:artifacts:config=deploy/crds

# Every go test of make test runs as `$(call gotest,STAGE,ARGS)`: go test
# -json read by bin/testreport, which fails the stage on a skip that
# test/skips.txt does not name with its reason and on a -run pattern that
# matched nothing, and writes bin/test-results/STAGE.json (docs/testing.md).
TESTREPORT = bin/testreport
gotest = $(GO) test -json $(2) 2>&1 | $(TESTREPORT) -stage $(1) -out bin/test-results/$(1).json
# The same as inside a container (hack/in-container.sh).
gotest-in-container = hack/in-container.sh $(GO) test -json $(2) 2>&1 | $(TESTREPORT) -stage $(1) -out bin/test-results/$(1).json

$(TESTREPORT): $(wildcard hack/testreport/*.go internal/testbed/testreport/*.go)
	$(GO) build -o $@ ./hack/testreport

test-unit: ## tests of pure logic only (no root, no control plane)
	$(GO) test -short ./pkg/nmstate/... ./pkg/nmpolicy/...

test: setup web $(TESTREPORT) ## the whole test suite
	rm -rf bin/test-results
	$(MAKE) test-web
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }
	$(MAKE) build images
	@echo "make test: two lanes at once (docs/testing.md); each lane's output follows when it ends"
	$(MAKE) -j2 --output-sync=target test-lane-packages test-lane-labs
	$(TESTREPORT) -check bin/test-results/*.json

# The stages of make test run in two lanes at once: most of their time the
# labs and the packages' tests wait (on leases, probes, kubelets, the qemu
# guest), so on two cores two lanes take little more than the longer one.
# The lanes touch nothing of each other's: each lab has its own namespaces,
# addresses and directory (TestLabsCoexist).
.PHONY: test-lane-packages test-lane-labs test-packages
test-lane-packages: ## make test's first lane: every Go package but the lab and e2e ones, then the kubelet-mode suites
	$(MAKE) test-packages
	$(MAKE) test-kubelet

test-lane-labs: ## make test's second lane: the lab and e2e packages as in a container, the qemu lanes, then the e2e suite on NetworkManager nodes (default and kubelet mode)
	$(MAKE) test-container
	$(MAKE) test-kernel
	$(MAKE) test-e2e-nm
	$(MAKE) test-kubelet-nm

test-packages: setup $(TESTREPORT) ## every Go package except the lab and e2e packages (make test's unit stage)
	$(call gotest,unit,-count=1 -p 4 -timeout 20m $(SLOW_UNIT_PKGS) $$($(GO) list ./... | grep -v -x -E '$(CONTAINER_PKGS)|$(SLOW_UNIT_PKGS_RE)'))

# The binary and images under test of make build images, as every lab suite
# reads them (internal/testbed/suite: -suite.knmstate, -suite.images and
# -suite.kubelet; a suite run without them builds or finds its own).
SUITE_ARGS = -suite.knmstate=$(CURDIR)/bin/knmstate -suite.images=$(CURDIR)/bin/images

test-kubelet: setup build images $(TESTREPORT) ## the e2e suite (as inside a container), the rollback tests, the operator suite and the OpenShift suite on kubelet-mode labs: knmstate as pods from bin/images
	$(call gotest-in-container,e2ekubelet,-count=1 -timeout 15m ./test/e2e/ -args $(SUITE_ARGS) -suite.kubelet)
	$(call gotest,cluster,-count=1 -timeout 15m ./test/cluster/ -run 'TestRollback|TestBrokenDefaultRoute|TestSecondHandlerWaitsForNodeLock|TestPendingCheckpoint|TestKubeletNetworkManager' -args $(SUITE_ARGS) -suite.kubelet)
	$(call gotest,operator,-count=1 -tags kubelet -timeout 20m ./test/operator/ -args $(SUITE_ARGS))
	$(call gotest,openshift,-count=1 -tags kubelet -timeout 15m ./test/openshift/ -args $(SUITE_ARGS))

test-faults: setup build images $(TESTREPORT) ## the fault suite on a 5-node kubelet lab: control plane, controller leader, handlers and nodes killed, a node cut off, a burst of policies, mid-rollout (docs/reliability.md)
	$(call gotest,faults,-count=1 -tags kubelet -timeout 40m -v -run 'TestFaults|TestBurst' ./test/faults/ -args $(SUITE_ARGS))

# The unit stage's packages mostly wait (on leases, probes, API servers),
# so four run at once on two cores, and the slowest start first: go test
# runs them in the order given, and the one that starts last sets the
# stage's end (docs/testing.md).
SLOW_UNIT_PKGS = ./test/cluster/ ./internal/handler/ ./pkg/noded/ ./internal/nmstatectl/ ./pkg/noded/dhcp/ ./internal/controller/ ./test/conformance/
empty :=
space := $(empty) $(empty)
SLOW_UNIT_PKGS_RE = github.com/knmstate/knmstate/($(subst $(space),|,$(patsubst ./%/,%,$(SLOW_UNIT_PKGS))))

# The lab and e2e packages run once in make test: inside a container
# (private mount namespace, fresh /run), the stricter place, not also bare.
CONTAINER_PKGS = github.com/knmstate/knmstate/(pkg/nsrun|internal/testbed/labnet(/.*)?|internal/testbed/lab|test/e2e)

test-container: setup $(TESTREPORT) ## the lab and e2e packages as inside a container (private mount namespace, fresh /run); make test runs them only here
	$(call gotest-in-container,container,-count=1 -timeout 15m ./pkg/nsrun/ ./internal/testbed/labnet/... ./internal/testbed/lab/ ./test/e2e/)

# The e2e suite on NetworkManager nodes (docs/networkmanager.md), a subset
# worth its minutes; the tests left out fail on what the NetworkManager
# backend does not map yet (docs/testing.md lists them).
# Default mode (NetworkManager owns every NIC, eth0 by the lab's DHCP profile):
NM_E2E_TESTS = TestNodes$$|TestNodeNetworkStates|TestLabStatus|TestDryRun|TestDrift|TestAfter|TestMetrics|TestNmstateExamples|TestRollback$$|TestVXLANBetweenNodes
# Kubelet mode (NetworkManager owns eth0; the handler pods find it through
# the DaemonSet's /run/dbus):
# TestNmstateExamples runs in the default mode's subset only: through the
# handler pod it would test the same backend again for 46 s.
NM_KUBELET_E2E_TESTS = TestNodes$$|TestNodeNetworkStates|TestLabStatus|TestKubeletNodes|TestHandlerPods$$|TestExamples$$|TestPrimaryNICBridge$$|TestDryRun|TestDrift|TestAfter|TestMetrics

test-e2e-nm: setup build $(TESTREPORT) ## the e2e suite's NetworkManager subset on a lab whose nodes run NetworkManager (-e2e.backend networkmanager), as inside a container
	$(call gotest-in-container,e2enm,-count=1 -timeout 15m -run '$(NM_E2E_TESTS)' ./test/e2e/ -args -suite.knmstate=$(CURDIR)/bin/knmstate -e2e.backend networkmanager)

test-kubelet-nm: setup build images $(TESTREPORT) ## the same on a kubelet-mode lab with NetworkManager nodes (handler pods from bin/images), as inside a container
	$(call gotest-in-container,e2ekubeletnm,-count=1 -timeout 15m -run '$(NM_KUBELET_E2E_TESTS)' ./test/e2e/ -args $(SUITE_ARGS) -suite.kubelet -e2e.backend networkmanager)

test-e2e: setup ## the end-to-end suite alone: one lab, the real kubectl, every example (part of make test)
	$(GO) test -count=1 -v -timeout 15m ./test/e2e/

test-kernel: setup ## backend tests under qemu on Debian's full kernel (bonding, 8021q, vrf, ...), then the e2e suite on it
	@bash hack/kernel-lane/run.sh
	$(MAKE) test-kernel-e2e

# What needs Debian's kernel: every example (bond, VLAN, VRF, bridge VLAN
# filtering), upstream's e2e behaviours that use them, the primary NIC under
# a bridge and a bond. The rest of the suite (user guide, metrics, rollback
# classes) runs on this machine's kernel in make test already; under TCG it
# would take minutes more and test nothing new.
KERNEL_E2E_TESTS = TestNodes$$|TestLabStatus|TestExamples$$|TestNmstateExamples|$(KERNEL_PRIMARY_NIC_TESTS)|TestBond|TestVLAN|TestTwoPolicies|TestBridgeVLAN|TestLLDP

# The primary NIC under a bridge (the default trunk on Debian's kernel), a
# bond and br-ex, and br-ex's broken-gateway rollback; not the bridge's
# rollback, which tests nothing there that this machine's kernel does not
# (container and e2ekubelet stages) and cost 77 s in the guest.
KERNEL_PRIMARY_NIC_TESTS = TestPrimaryNIC(Bridge|Bond|OVSBrEx|OVSBrExBrokenRollsBack)$$

test-kernel-e2e: setup $(TESTREPORT) ## the e2e tests that need Debian's full kernel, on a lab whose nodes run it in a qemu guest (lab up --kernel debian)
	@bash hack/kernel-lane/kernel.sh >/dev/null
	$(call gotest,kernele2e,-tags qemu -count=1 -timeout 45m -run '$(KERNEL_E2E_TESTS)' ./test/e2e/)

# The same e2e tests on the guest's nodes running NetworkManager (lab up
# --kernel debian --backend networkmanager), one guest lab for all of them
# (test/e2e's TestMain), but TestNmstateExamples: its qemu-lane scenarios
# run through NetworkManager in the kernel lane already (test/conformance
# TestQemuExamplesNetworkManager), and through the handler it would cost
# five minutes more. make test-kernel-nm runs all of them (about 15
# minutes); .ci/run runs KERNEL_NM_CI_TESTS (test-kernel-nm-ci), what only
# this stage tests, within what its 45 minutes leave after make test and the
# fault suite (docs/testing.md has the figures).
KERNEL_NM_E2E_TESTS = TestNodes$$|TestLabStatus|TestExamples$$|$(KERNEL_PRIMARY_NIC_TESTS)|TestBond|TestVLAN|TestVRFNameRoute|TestVXLANBetweenNodes|TestTwoPolicies|TestBridgeVLAN|TestLLDP

# .ci/run's part: bonds, a VLAN on a bond, VRF (by table and by vrf-name),
# VXLAN and the OVS examples through the handler, the primary NIC under a
# bond (and the node's reboot with it) and under br-ex with its
# broken-gateway rollback, LLDP neighbours in the NNS. Left to make
# test-kernel-nm: the bridge examples and TestBridgeVLANFiltering (their
# profiles run through NetworkManager in the kernel lane, and the bridge on
# the primary NIC in e2ekubeletnm), the VLAN-on-ethernet behaviours and
# example (the kernel lane's vlan scenarios), the policy CR's bridges and
# the lldp example (TestLLDPNeighbors has its neighbours).
KERNEL_NM_CI_TESTS = TestNodes$$|TestExamples$$|TestPrimaryNIC(Bond|OVSBrEx|OVSBrExBrokenRollsBack)$$|TestVRFNameRoute|TestVXLANBetweenNodes|TestLLDPNeighbors
KERNEL_NM_CI_EXAMPLES = ^(bond|bond-vlan|vrf|ovs-bridge|ovs-bridge-iface)\.yaml$$

test-kernel-nm: setup $(TESTREPORT) ## the full-kernel e2e tests through NetworkManager: a guest lab whose nodes each run NetworkManager (lab up --kernel debian --backend networkmanager)
	@bash hack/kernel-lane/kernel.sh >/dev/null
	$(call gotest,kernelnm,-tags qemu -count=1 -timeout 45m -run '$(KERNEL_NM_E2E_TESTS)' ./test/e2e/ -args -e2e.backend networkmanager)

test-kernel-nm-ci: setup $(TESTREPORT) ## .ci/run's part of test-kernel-nm (KERNEL_NM_CI_TESTS, the examples KERNEL_NM_CI_EXAMPLES)
	@bash hack/kernel-lane/kernel.sh >/dev/null
	$(call gotest,kernelnm,-tags qemu -count=1 -timeout 30m -run '$(KERNEL_NM_CI_TESTS)' ./test/e2e/ -args -e2e.backend networkmanager -e2e.examples '$(KERNEL_NM_CI_EXAMPLES)')

demo: setup build ## a local cluster, example policies, their result
	hack/demo.sh

bench: setup build images
	bin/knmstate bench --json bench/results/latest.json

clean:
	rm -rf bin
