#!/usr/bin/env bash
# Idempotent machine set-up for knmstate: Debian packages, the pinned
# Kubernetes components and containerd built from hack/tools, controller-gen.
# Fast when done.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(etcd-server iproute2 dnsmasq openvswitch-switch qemu-system-x86 busybox-static cpio kmod xz-utils zstd ca-certificates)
# The lab's kubelets: containerd's runtime, the CNI plugins (in /usr/lib/cni),
# and what kube-proxy and the kubelet call on the node.
packages+=(runc containernetworking-plugins nftables iptables conntrack)
# The kernel lane builds hsr and netdevsim for Debian's kernel
# (hack/kernel-lane/extmod.sh): Debian's compiler, the one its kernel uses.
packages+=(gcc make libc6-dev)
# 802.1X: wpa_supplicant is the kernel backend's supplicant; hostapd (with
# hostapd_cli) and openssl make the authenticator of its tests.
packages+=(wpasupplicant hostapd openssl)
# LLDP: Debian's lldpd is the switch the node runtime hears in tests.
packages+=(lldpd)
# The NetworkManager backend's tests and the lab's --backend networkmanager:
# NetworkManager 1.42 (with nmcli) and a D-Bus daemon for its private system
# bus. Only ever started by our code, inside namespaces of our own, never as
# a service (the machine's policy-rc.d keeps apt from starting it).
packages+=(network-manager dbus-daemon)

# The web views (web/, docs/ui.md): Node.js and npm to build them (Debian's
# when none is installed; esbuild and the rest need Node.js 18 or newer),
# chromium and a font for the browser tests.
packages+=(chromium fonts-dejavu-core)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	packages+=(nodejs npm)
fi

# kubectl drives make demo and test/e2e; Debian's kubernetes-client when absent.
if ! command -v kubectl >/dev/null; then
	packages+=(kubernetes-client)
fi

# One dpkg-query for all: one per package was most of a no-op run's time.
declare -A status
while IFS=$'\t' read -r p s; do
	status[$p]=$s
done < <(dpkg-query -W -f='${Package}\t${Status}\n' "${packages[@]}" 2>/dev/null)
missing=()
for p in "${packages[@]}"; do
	[[ ${status[$p]-} == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# The package enables its units; we installed it only for our own
	# namespaced instances, so it must never start as this machine's service.
	# (Only when this run installed it: a machine's own NetworkManager is left alone.)
	if [[ " ${missing[*]} " == *" network-manager "* ]] && command -v systemctl >/dev/null; then
		systemctl disable NetworkManager.service NetworkManager-wait-online.service NetworkManager-dispatcher.service >/dev/null 2>&1 || true
	fi
fi
# Tools built from pinned tools modules. A stamp is the hash of what its build
# reads (the module files, the main package) and of the build function itself,
# so a changed pin or recipe rebuilds and an unchanged one is free.
mkdir -p bin
# fresh NAME HASH FILE...: bin/.NAME.stamp holds HASH and every FILE is
# there, or a build of that HASH kept outside the clone (next to Go's build
# cache, as hack/nm-ovs.sh keeps its build) was copied in: a clean clone
# (CI's) links Kubernetes, containerd and helm again otherwise, a minute of
# every run on two cores.
tools_cache=${KNMSTATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/knmstate}/tools
fresh() {
	local name=$1 hash=$2 f ok=1
	shift 2
	[[ "$(cat "bin/.$name.stamp" 2>/dev/null)" == "$hash" ]] || ok=
	for f; do [[ -x $f ]] || ok=; done
	local kept=$tools_cache/$name-$hash
	if [[ -n $ok ]]; then
		[[ -f $kept/.complete ]] || keep "$name" "$hash" "$@"
		return 0
	fi
	[[ -f $kept/.complete ]] || return 1
	for f; do cp -a "$kept/$(basename "$f")" "$f" || return 1; done
	echo "$hash" >"bin/.$name.stamp"
}
# keep NAME HASH FILE...: the build of HASH outside the clone, for fresh;
# only the latest build of each tool is kept.
keep() {
	local name=$1 hash=$2 f
	shift 2
	local kept=$tools_cache/$name-$hash
	mkdir -p "$tools_cache"
	rm -rf "$kept.tmp" && mkdir "$kept.tmp"
	for f; do cp -a "$f" "$kept.tmp/"; done
	touch "$kept.tmp/.complete"
	find "$tools_cache" -mindepth 1 -maxdepth 1 -name "$name-*" ! -path "$kept.tmp" -exec rm -rf {} +
	mv "$kept.tmp" "$kept"
}

# bin/kube is one binary holding kube-apiserver, kubelet,
# kube-controller-manager, kube-scheduler and kube-proxy (hack/tools/kube);
# bin/<component> links to it. The version ldflags are those of Kubernetes'
# own builds (hack/lib/version.sh), with the pinned module's version, and its
# publication time as the build date, so a rebuild is the same binary.
kube_components=(kube-apiserver kubelet kube-controller-manager kube-scheduler kube-proxy)
build_kube() (
	cd hack/tools
	export GOFLAGS="-mod=mod -buildvcs=false" GONOSUMDB=k8s.io/kubernetes
	local version date ldflags="-s -w" pkg
	read -r version date < <(go list -m -f '{{.Version}} {{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
	[[ $version =~ ^v([0-9]+)\.([0-9]+)\. ]] || { echo "setup: k8s.io/kubernetes $version is no vX.Y.Z" >&2; return 1; }
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=${BASH_REMATCH[1]} -X $pkg.gitMinor=${BASH_REMATCH[2]}"
		ldflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
	done
	go build -ldflags "$ldflags" -o ../../bin/kube ./kube
)
kube_stamp=$({ cat hack/tools/go.mod hack/tools/go.sum hack/tools/kube/*.go; declare -f build_kube; } | sha256sum | cut -c1-16)
if ! fresh kube "$kube_stamp" bin/kube; then
	echo "setup: building bin/kube (${kube_components[*]})"
	build_kube
	echo "$kube_stamp" >bin/.kube.stamp
	keep kube "$kube_stamp" bin/kube
fi
for c in "${kube_components[@]}"; do
	[[ -L bin/$c && "$(readlink "bin/$c")" == kube ]] || ln -sfn kube "bin/$c"
done
rm -f bin/.kube-apiserver.stamp # from when kube-apiserver was built alone

# containerd, its runc shim and ctr, from a module of their own
# (hack/tools/containerd) so containerd's dependencies never move the
# Kubernetes pin. Static (no cgo), without the btrfs, devmapper and zfs
# snapshotters; the shim without gRPC, as containerd's Makefile builds it. The
# shim stays a binary of its own: it re-executes os.Executable(), the link's
# target, so a multi-call binary would start containerd in its place.
build_containerd() (
	cd hack/tools/containerd
	export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
	local pkg=github.com/containerd/containerd/v2 version ldflags tags="no_btrfs no_devmapper no_zfs urfave_cli_no_docs"
	version=$(go list -m -f '{{.Version}}' $pkg)
	ldflags="-s -w -X $pkg/version.Version=$version -X $pkg/version.Package=$pkg"
	go build -tags "$tags" -ldflags "$ldflags" -o ../../../bin/ $pkg/cmd/containerd $pkg/cmd/ctr
	go build -tags "$tags no_grpc" -ldflags "$ldflags" -o ../../../bin/ $pkg/cmd/containerd-shim-runc-v2
)
containerd_stamp=$({ cat hack/tools/containerd/go.mod hack/tools/containerd/go.sum; declare -f build_containerd; } | sha256sum | cut -c1-16)
if ! fresh containerd "$containerd_stamp" bin/containerd bin/containerd-shim-runc-v2 bin/ctr; then
	echo "setup: building bin/containerd, bin/containerd-shim-runc-v2, bin/ctr"
	build_containerd
	echo "$containerd_stamp" >bin/.containerd.stamp
	keep containerd "$containerd_stamp" bin/containerd bin/containerd-shim-runc-v2 bin/ctr
fi

# Helm, for the chart's tests (deploy/helm/knmstate), from its own module.
build_helm() (
	cd hack/tools/helm
	export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
	local version
	version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
	go build -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" -o ../../../bin/helm helm.sh/helm/v3/cmd/helm
)
helm_stamp=$({ cat hack/tools/helm/go.mod hack/tools/helm/go.sum; declare -f build_helm; } | sha256sum | cut -c1-16)
if ! fresh helm "$helm_stamp" bin/helm; then
	echo "setup: building bin/helm"
	build_helm
	echo "$helm_stamp" >bin/.helm.stamp
	keep helm "$helm_stamp" bin/helm
fi

# The web views' npm packages, and the console plugin's (web/plugin: the
# console's SDK wants its own React and topology versions), exactly as the
# committed lock files say; again only when a lock file changed or its
# node_modules is gone.
for dir in web web/plugin; do
	name=${dir//\//-}
	stamp=$(sha256sum "$dir/package-lock.json" | cut -c1-16)
	if [[ "$(cat "bin/.$name.stamp" 2>/dev/null)" != "$stamp" || ! -d $dir/node_modules ]]; then
		echo "setup: npm ci in $dir/"
		(cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
		echo "$stamp" >"bin/.$name.stamp"
	fi
done

# NetworkManager with its OVS plugin (Debian's is built without): the
# tests that drive Open vSwitch through NetworkManager (hack/nm-ovs.sh).
hack/nm-ovs.sh

# controller-gen is installed from its own module at a pinned version, so its
# dependencies never move the Kubernetes pin above.
controller_tools=v0.21.0
if [[ "$(cat bin/.controller-gen.stamp 2>/dev/null)" != "$controller_tools" || ! -x bin/controller-gen ]]; then
	echo "setup: building bin/controller-gen $controller_tools"
	GOBIN="$PWD/bin" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$controller_tools"
	echo "$controller_tools" >bin/.controller-gen.stamp
fi
