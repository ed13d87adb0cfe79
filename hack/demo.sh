#!/usr/bin/env bash
# make demo: a throw-away control plane with the nmstate.io API, the
# linux-bridge example policy applied, and what kubectl shows for it.
# Everything (etcd, kube-apiserver, their data) is gone when it returns.
set -euo pipefail
cd "$(dirname "$0")/.."

exec bin/knmstate controlplane run -- bash -euo pipefail -c '
echo "\$ kubectl apply -f examples/linux-bridge.yaml"
kubectl apply -f examples/linux-bridge.yaml
echo
echo "\$ kubectl get nncp"
kubectl get nncp
echo
echo "\$ kubectl get nncp linux-bridge -o jsonpath={.spec.desiredState.interfaces[0].bridge.port[0].name}"
kubectl get nncp linux-bridge -o jsonpath="{.spec.desiredState.interfaces[0].bridge.port[0].name}"
echo
'
