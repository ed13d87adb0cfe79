// Package remoteexec runs a command on the far side of a TCP connection,
// with its standard input, output and error streamed and its exit status
// returned: `knmstate lab exec` into a node of a lab whose nodes live in a
// qemu guest, reached through a port qemu forwards from this machine's
// loopback.
//
// The client sends one HTTP request (POST, a bearer token, "Upgrade:
// knmstate-exec" and the Request as JSON); the server answers 101 and both
// sides then speak frames on the raw connection: one type byte, a 4-byte
// big-endian length and the payload. The client sends stdin and stdin-EOF
// frames; the server sends stdout, stderr and, once the command has
// ended and its output is flushed, one exit frame (or an error frame when
// it could not start). A connection lost before the exit frame kills the
// command. There is no terminal: interactive programs that need one do not
// work.
//
// It owns the connection and the command's process; it decides nothing
// about where the command runs: the server's Start function does.
package remoteexec
