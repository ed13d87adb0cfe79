// Package ovsdb is a client of the Open vSwitch database management
// protocol (RFC 7047): JSON-RPC 1.0 over a unix or TCP stream socket, with
// transact (insert, select, update, mutate, delete, wait, comment), monitor
// with change notifications, echo (answered for the server, and sent as a
// liveness probe), list_dbs and get_schema.
//
// It knows nothing of Open vSwitch's schema or of nmstate: rows are maps of
// column name to OVSDB JSON values, with small helpers for the atom, set,
// map and uuid encodings. It must not start, stop or configure a daemon.
//
// No maintained Go OVSDB client is served by the module proxy this project
// builds from (libovsdb and its forks are refused), hence this one.
package ovsdb
