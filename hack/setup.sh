#!/usr/bin/env bash
# Idempotent machine set-up for knmstate: Debian packages and the pinned
# kube-apiserver / controller-gen built from hack/tools. Fast when done.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(etcd-server iproute2 dnsmasq openvswitch-switch qemu-system-x86 busybox-static cpio kmod xz-utils zstd ca-certificates)

# kubectl drives make demo and test/e2e; Debian's kubernetes-client when absent.
if ! command -v kubectl >/dev/null; then
	packages+=(kubernetes-client)
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Tools built from the pinned tools module. The stamp is the hash of the
# module files, so a changed pin rebuilds and an unchanged one is free.
mkdir -p bin
stamp=$(cat hack/tools/go.mod hack/tools/go.sum | sha256sum | cut -c1-16)
build_tool() { # name package
	local name=$1 pkg=$2
	if [[ -x bin/$name && "$(cat "bin/.$name.stamp" 2>/dev/null)" == "$stamp" ]]; then
		return
	fi
	echo "setup: building bin/$name"
	(cd hack/tools && GOFLAGS=-mod=mod GONOSUMDB=k8s.io/kubernetes go build -o "../../bin/$name" "$pkg")
	echo "$stamp" >"bin/.$name.stamp"
}
build_tool kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver

# controller-gen is installed from its own module at a pinned version, so its
# dependencies never move the kube-apiserver pin above.
controller_tools=v0.21.0
if [[ "$(cat bin/.controller-gen.stamp 2>/dev/null)" != "$controller_tools" || ! -x bin/controller-gen ]]; then
	echo "setup: building bin/controller-gen $controller_tools"
	GOBIN="$PWD/bin" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$controller_tools"
	echo "$controller_tools" >bin/.controller-gen.stamp
fi
