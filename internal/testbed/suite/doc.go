// Package suite is the kit every lab suite under test/ shares: its
// TestMain (Main: the repository's root, the binaries under test from the
// flags every suite reads the same way, -suite.knmstate, -suite.images and
// -suite.kubelet), its labs (Kit.Up and Kit.UpT: brought up, taken down,
// and a failure when anything of them is left), Eventually (the one
// poller), Kubectl (the real kubectl against a lab) and node exec
// (Lab.Exec, in whatever mode the lab runs its nodes).
//
// A suite defines none of these itself; kit_test.go fails when a file of
// test/ does. The kit owns no global state: the flags are registered by
// Main, once per test binary, and what Main found is the Kit it passes on.
package suite
