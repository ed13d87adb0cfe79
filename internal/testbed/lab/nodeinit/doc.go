// Package nodeinit is the init process of a lab node in kubelet mode
// (`knmstate lab node-init`): PID 1 of the node's own PID namespace,
// started inside the node's network, mount and UTS namespaces. It makes the
// node's private mounts (its PID namespace's /proc, a tmpfs on /run, the
// node's own /var/lib and /var/log, read-only files over /proc/sys entries
// the kubelet checks),
// then starts the node's daemons in order (containerd, the kubelet,
// kube-proxy), each once the previous one is ready, restarts them with
// back-off when they exit, reaps every orphan (container shims are
// re-parented to it) and, on SIGTERM, stops them and exits. Its exit ends
// everything left in the node's PID namespace.
//
// What to run comes from a Spec file the lab writes; this package decides
// nothing about Kubernetes. Its mounts are made in the node's mount
// namespace, which is a slave of the lab's: nothing it mounts reaches the
// machine's own mount namespace, and it never touches anything outside the
// paths the Spec names.
package nodeinit
