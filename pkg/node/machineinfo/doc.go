// Package machineinfo reads the facts about this machine that the Node
// object reports: CPU count, memory, huge pages and root-filesystem
// capacity, machine ID, system UUID, boot ID, kernel version, OS image,
// architecture, hostname and the address of the default-route interface.
//
// It owns reading and parsing those files and nothing else: it never talks
// to the API server and never decides what the node advertises (reservations
// and eviction thresholds are nodestatus's business). Parsing is done by pure
// functions over file contents so it can be table-tested; the file reads
// live in Read (read_linux.go) and are the only OS-specific code.
package machineinfo
