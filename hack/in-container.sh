#!/usr/bin/env bash
# Runs a command as inside a privileged container: in a private mount
# namespace (nothing mounted there reaches this machine's) with a fresh
# tmpfs on /run, so /run/netns does not exist yet, as on a fresh machine.
# The namespace is made on the last CPU and the command then runs on every
# CPU: namespaces it makes on other CPUs can get smaller ids than its own
# (per-CPU id batches since Linux 6.18), the case that broke the lab's
# node namespaces in containers (docs/lab.md, "In a container").
set -euo pipefail
if (($# == 0)); then
	echo "usage: $0 COMMAND [ARG...]" >&2
	exit 2
fi
all="0-$(($(nproc --all) - 1))"
last="$(($(nproc --all) - 1))"
exec taskset -c "$last" unshare --mount --propagation private \
	taskset -c "$all" sh -c 'mount -t tmpfs -o mode=755 tmpfs /run && exec "$@"' sh "$@"
