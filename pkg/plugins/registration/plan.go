// Package registration is the node's plugin manager: one registration
// mechanism for every plugin that registers through a socket in
// <root-dir>/plugins_registry (k8s.io/kubelet's pluginregistration v1: CSI
// drivers through their node-driver-registrar, DRA drivers). Each kind of
// plugin is a Handler behind it, chosen by the type the plugin's GetInfo
// names.
//
// The manager watches the directory (fsnotify, with a periodic rescan as
// the safety net) and converges the sockets it finds with the plugins it
// registered:
//
//   - a new socket (or one created anew: a different modification time) is
//     registered: GetInfo, the handler's ValidatePlugin and RegisterPlugin,
//     then NotifyRegistrationStatus with the outcome; a failure is retried
//     with back-off, and the plugin is told why;
//   - a socket that is gone deregisters its plugin (DeRegisterPlugin);
//   - after a kubelet restart the sockets still there are registered
//     again, as new.
//
// The decision of what to do is plan, a pure function; the I/O (watching,
// dialing, calling handlers) is in manager.go.
package registration

import (
	"sort"
	"time"
)

// socket is a plugin socket as found on disk.
type socket struct {
	// ModTime tells a socket created anew under the same path.
	ModTime time.Time
}

// registered is what the manager registered for a socket.
type registered struct {
	ModTime time.Time
	Type    string
	Name    string
	// Endpoint is the plugin's service endpoint (GetInfo's, else the
	// socket's path).
	Endpoint string
}

// steps are what plan decides: sockets to deregister (their plugin first)
// and sockets to register, each sorted by path.
type steps struct {
	Deregister []string
	Register   []string
}

// plan converges found (the sockets on disk) with done (the plugins
// registered, by socket path): a registered socket that is gone, or was
// created anew, is deregistered; a socket without a registration, or
// created anew, is registered. Sockets whose registration failed are not
// in done, so they are planned again (the caller applies back-off).
func plan(found map[string]socket, done map[string]registered) steps {
	var s steps
	for path, r := range done {
		f, ok := found[path]
		if !ok || !f.ModTime.Equal(r.ModTime) {
			s.Deregister = append(s.Deregister, path)
		}
	}
	for path, f := range found {
		r, ok := done[path]
		if !ok || !f.ModTime.Equal(r.ModTime) {
			s.Register = append(s.Register, path)
		}
	}
	sort.Strings(s.Deregister)
	sort.Strings(s.Register)
	return s
}
