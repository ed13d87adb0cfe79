#!/usr/bin/env bash
# make demo: a three-node knmstate lab on this machine, two example
# policies applied and checked from the API and from inside a node, a
# policy that breaks a node's gateway and the handler's rollback of it, and
# the lab taken down again. Needs root (network namespaces); `make demo`
# runs `make setup build` first. Nothing is left behind, even on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

LAB=demo
KNMSTATE=bin/knmstate
export KUBECONFIG=/tmp/knmstate-lab-$LAB/kubeconfig
step=0

bold='' plain=''
if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; fi
heading() { # title
	step=$((step + 1))
	printf '\n%s== %d. %s ==%s\n' "$bold" "$step" "$1" "$plain"
}
say() { printf '%s\n' "$*" | fold -s -w 78; }
run() { # the command, shown as a user would type it, then run
	local shown=() a
	for a in "$@"; do
		if [[ $a =~ [^A-Za-z0-9_./:=@,+-] ]]; then a="'$a'"; fi
		shown+=("$a")
	done
	printf '\n$ %s\n' "${shown[*]}"
	"$@"
}

if [[ $EUID -ne 0 ]]; then
	echo "make demo needs root: the lab's nodes are network namespaces" >&2
	exit 1
fi
if [[ -e /run/netns/knml-${LAB}_switch || -e /tmp/knmstate-lab-$LAB ]]; then
	echo "a lab named $LAB is running or left over: $KNMSTATE lab down --name $LAB first" >&2
	exit 1
fi
if ! "$KNMSTATE" handler --help | grep -q -- --max-retries; then
	echo "$KNMSTATE handler does not reconcile policies yet (no --max-retries flag): nothing to demonstrate" >&2
	exit 1
fi
down() {
	heading "Take the lab down"
	say "lab down stops every process of the lab and removes its namespaces, mounts and files."
	run "$KNMSTATE" lab down --name "$LAB"
	local left
	left=$({ compgen -G "/run/netns/knml-${LAB}_*" || true; } | wc -l)
	printf '\nnetwork namespaces of the lab left: %s; lab directory: %s\n' "$left" \
		"$([[ -e /tmp/knmstate-lab-$LAB ]] && echo "still there" || echo "gone")"
}
trap down EXIT

heading "Start a lab of three nodes"
say "The lab runs a real etcd and kube-apiserver, the knmstate controller, and per node a network namespace with NICs eth0..eth2 on a virtual switch (192.0.2.0/24, DHCP on eth0), a knmstate handler and a node runtime. The handlers get a 10 s gateway probe and one attempt per policy, so the rollback below takes seconds."
run "$KNMSTATE" lab up --nodes 3 --name "$LAB" \
	--handler-arg=--max-retries=1 --handler-arg=--probe-ping-timeout=10s
run kubectl get nodes -o wide

heading "Apply two example policies"
say "examples/linux-bridge.yaml: on every node, a Linux bridge br1 with eth1 as its port, IPv4 from DHCP."
say "examples/static-ip.yaml: on node02 only, 198.51.100.12/24 on eth2."
run kubectl apply -f examples/linux-bridge.yaml -f examples/static-ip.yaml
run kubectl wait --for condition=Available nncp --all --timeout=180s

heading "Policies and their enactments (one per policy and node)"
run kubectl get nncp,nnce

heading "What node02 reports: its NodeNetworkState (excerpt)"
say "The handler keeps the node's NodeNetworkState up to date from the kernel; here its interfaces and IPv4 addresses."
run kubectl get nns node02 -o jsonpath='NAME{"\t"}TYPE{"\t"}STATE{"\t"}CONTROLLER{"\t"}IPV4{"\n"}{range .status.currentState.interfaces[*]}{.name}{"\t"}{.type}{"\t"}{.state}{"\t"}{.controller}{"\t"}{.ipv4.address[*].ip}{"\n"}{end}'

heading "What node02's kernel has: ip addr inside the node"
run "$KNMSTATE" lab exec --name "$LAB" node02 -- ip -brief addr
run "$KNMSTATE" lab exec --name "$LAB" node02 -- ip -brief link show master br1

heading "A policy that breaks node02's gateway, and its rollback"
say "examples/break-gateway.yaml adds a default route through 192.0.2.254, which nobody answers. The handler applies it, its probe pings the new gateway and gets no reply, so it rolls the change back and reports the failure."
run grep -v '^#' examples/break-gateway.yaml
run "$KNMSTATE" lab exec --name "$LAB" node02 -- ip -4 route show default
before=$("$KNMSTATE" lab exec --name "$LAB" node02 -- ip -4 route show default)
run kubectl apply -f examples/break-gateway.yaml
run kubectl wait --for condition=Degraded nncp/break-gateway --timeout=150s
run kubectl get nncp break-gateway
run kubectl get nnce node02.break-gateway -o jsonpath='{.status.conditions[?(@.type=="Failing")].message}{"\n"}'
say ""
say "node02's default route after the rollback:"
run "$KNMSTATE" lab exec --name "$LAB" node02 -- ip -4 route show default
after=$("$KNMSTATE" lab exec --name "$LAB" node02 -- ip -4 route show default)
if [[ "$after" == "$before" ]]; then
	printf '\nstate restored: the default routes are the same as before the policy\n'
else
	printf '\nNOT restored: before\n%s\nafter\n%s\n' "$before" "$after" >&2
	exit 1
fi
run kubectl delete nncp break-gateway
