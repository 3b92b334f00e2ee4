package registration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// DirName is the directory under --root-dir where plugins put their
// registration sockets.
const DirName = "plugins_registry"

// Handler is one kind of plugin (CSIPlugin, DRAPlugin): the manager hands
// it the plugins of its type. Calls for one socket never overlap; calls for
// different sockets may.
type Handler interface {
	// ValidatePlugin checks a plugin's name, endpoint and the versions it
	// supports before it is registered; an error is told to the plugin.
	ValidatePlugin(name, endpoint string, versions []string) error
	// RegisterPlugin makes the plugin known (it may call the plugin at
	// endpoint); an error is told to the plugin, and registration is
	// retried with back-off.
	RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error
	// DeRegisterPlugin forgets a plugin whose socket is gone (or was
	// created anew, before it registers again).
	DeRegisterPlugin(ctx context.Context, name, endpoint string)
}

// Timeouts of the registration calls (upstream's: 10 s to dial, then 1 s
// for GetInfo, 5 s for NotifyRegistrationStatus; here connecting and
// GetInfo share one bound).
const (
	infoTimeout   = 10 * time.Second
	notifyTimeout = 5 * time.Second
	// registerTimeout bounds a handler's RegisterPlugin.
	registerTimeout = 30 * time.Second
)

// Back-off of a socket whose registration failed, and the rescan that
// catches what the watch missed.
const (
	retryBase      = 500 * time.Millisecond
	retryMax       = time.Minute
	rescanInterval = 10 * time.Second
)

// Manager watches Dir and registers the plugins whose sockets appear there
// with the Handler of their type. Run it with Start.
type Manager struct {
	Dir      string
	Handlers map[string]Handler

	mu      sync.Mutex
	plugins map[string]registered // by socket path; written by the loop only
}

// Plugin is a registered plugin.
type Plugin struct {
	Socket, Type, Name, Endpoint string
}

// Plugins lists the registered plugins, by socket path.
func (m *Manager) Plugins() []Plugin {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Plugin, 0, len(m.plugins))
	for path, r := range m.plugins {
		out = append(out, Plugin{Socket: path, Type: r.Type, Name: r.Name, Endpoint: r.Endpoint})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Socket < out[j].Socket })
	return out
}

// result is the outcome of one register or deregister, back to the loop.
type result struct {
	path       string
	deregister bool
	reg        registered
	err        error
}

// Start watches and converges until ctx ends; then it returns nil,
// leaving plugins registered (a restarted kubelet registers them again).
func (m *Manager) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("dir", m.Dir)
	ctx = klog.NewContext(ctx, log)
	if err := os.MkdirAll(m.Dir, 0o750); err != nil {
		return fmt.Errorf("plugin registration directory: %w", err)
	}
	m.mu.Lock()
	m.plugins = map[string]registered{}
	m.mu.Unlock()

	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", m.Dir, err)
	}
	defer watcher.Close()
	watched := map[string]bool{}

	var (
		results   = make(chan result)
		inFlight  = map[string]bool{}
		failures  = map[string]int{}
		notBefore = map[string]time.Time{}
		wg        sync.WaitGroup
	)
	// On return, calls in flight finish (bounded by their timeouts and
	// ctx) while their results are drained.
	defer func() {
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		for {
			select {
			case <-results:
			case <-finished:
				return
			}
		}
	}()
	rescan := time.NewTicker(rescanInterval)
	defer rescan.Stop()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()

	converge := func() {
		found, dirs := scan(m.Dir)
		for _, d := range dirs {
			if !watched[d] {
				if err := watcher.Add(d); err != nil {
					log.Error(err, "Cannot watch a plugin directory; the rescan will find its sockets", "path", d)
				} else {
					watched[d] = true
				}
			}
		}
		m.mu.Lock()
		done := make(map[string]registered, len(m.plugins))
		for k, v := range m.plugins {
			done[k] = v
		}
		m.mu.Unlock()
		now := time.Now()
		next := time.Time{}
		s := plan(found, done)
		for _, path := range s.Deregister {
			if inFlight[path] {
				continue
			}
			inFlight[path] = true
			r := done[path]
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.deregister(ctx, path, r)
				results <- result{path: path, deregister: true}
			}()
		}
		for _, path := range s.Register {
			if inFlight[path] {
				continue
			}
			if _, stale := done[path]; stale {
				continue // deregistered first, registered at the next pass
			}
			if t := notBefore[path]; now.Before(t) {
				if next.IsZero() || t.Before(next) {
					next = t
				}
				continue
			}
			inFlight[path] = true
			mod := found[path].ModTime
			wg.Add(1)
			go func() {
				defer wg.Done()
				reg, err := m.register(ctx, path)
				reg.ModTime = mod
				results <- result{path: path, reg: reg, err: err}
			}()
		}
		// Sockets that are gone forget their back-off.
		for path := range failures {
			if _, ok := found[path]; !ok {
				delete(failures, path)
				delete(notBefore, path)
			}
		}
		if !next.IsZero() {
			retry.Reset(time.Until(next))
		}
	}

	converge()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-watcher.Events:
			if !ok {
				return errors.New("plugin directory watch closed")
			}
			if ev.Op&fsnotify.Remove != 0 || ev.Op&fsnotify.Rename != 0 {
				delete(watched, ev.Name) // a removed directory
			}
			converge()
		case err, ok := <-watcher.Errors:
			if !ok {
				return errors.New("plugin directory watch closed")
			}
			log.Error(err, "Plugin directory watch error; rescanning")
			converge()
		case <-rescan.C:
			converge()
		case <-retry.C:
			converge()
		case r := <-results:
			delete(inFlight, r.path)
			m.mu.Lock()
			switch {
			case r.deregister:
				delete(m.plugins, r.path)
			case r.err == nil:
				m.plugins[r.path] = r.reg
				delete(failures, r.path)
				delete(notBefore, r.path)
			default:
				failures[r.path]++
				wait := backoff(failures[r.path])
				notBefore[r.path] = time.Now().Add(wait)
				log.Error(r.err, "Plugin registration failed; retrying", "socket", r.path, "retryIn", wait)
			}
			m.mu.Unlock()
			converge()
		}
	}
}

// backoff is the wait after the n-th failure in a row.
func backoff(n int) time.Duration {
	d := retryBase
	for i := 1; i < n && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// scan lists the sockets under dir (recursively) and the directories to
// watch. Names starting with "." are skipped, as upstream does.
func scan(dir string) (map[string]socket, []string) {
	found := map[string]socket{}
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: the next scan tells
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, path)
			return nil
		}
		if d.Type()&fs.ModeSocket == 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		found[path] = socket{ModTime: info.ModTime()}
		return nil
	})
	return found, dirs
}

// register asks the plugin at path who it is, has its handler validate and
// register it, and tells the plugin the outcome.
func (m *Manager) register(ctx context.Context, path string) (registered, error) {
	log := klog.FromContext(ctx).WithValues("socket", path)
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return registered{}, fmt.Errorf("plugin socket %s: %w", path, err)
	}
	defer conn.Close()
	client := registerapi.NewRegistrationClient(conn)
	ictx, cancel := context.WithTimeout(ctx, infoTimeout)
	info, err := client.GetInfo(ictx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
	cancel()
	if err != nil {
		return registered{}, fmt.Errorf("GetInfo at %s: %w", path, err)
	}
	endpoint := info.Endpoint
	if endpoint == "" {
		endpoint = path
	}
	reg := registered{Type: info.Type, Name: info.Name, Endpoint: endpoint}
	log = log.WithValues("type", info.Type, "plugin", info.Name, "endpoint", endpoint, "versions", info.SupportedVersions)
	h, ok := m.Handlers[info.Type]
	if !ok {
		err := fmt.Errorf("no handler for plugin type %q (this kubelet registers %s)", info.Type, strings.Join(m.types(), ", "))
		notify(ctx, client, err)
		return registered{}, err
	}
	if err := h.ValidatePlugin(info.Name, endpoint, info.SupportedVersions); err != nil {
		err = fmt.Errorf("plugin %s %q is not valid: %w", info.Type, info.Name, err)
		notify(ctx, client, err)
		return registered{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, registerTimeout)
	err = h.RegisterPlugin(rctx, info.Name, endpoint, info.SupportedVersions)
	cancel()
	if err != nil {
		err = fmt.Errorf("registering plugin %s %q: %w", info.Type, info.Name, err)
		notify(ctx, client, err)
		return registered{}, err
	}
	if nerr := notify(ctx, client, nil); nerr != nil {
		// As upstream: a plugin that was not told it is registered is not
		// registered; it is undone and the registration retried.
		h.DeRegisterPlugin(ctx, info.Name, endpoint)
		return registered{}, fmt.Errorf("telling plugin %s %q it is registered: %w", info.Type, info.Name, nerr)
	}
	log.Info("Plugin registered")
	return reg, nil
}

// notify tells the plugin whether it is registered (err nil) or why not.
func notify(ctx context.Context, client registerapi.RegistrationClient, err error) error {
	status := &registerapi.RegistrationStatus{PluginRegistered: err == nil}
	if err != nil {
		status.Error = err.Error()
	}
	nctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	_, nerr := client.NotifyRegistrationStatus(nctx, status)
	return nerr
}

// deregister hands the plugin of a socket that is gone to its handler.
func (m *Manager) deregister(ctx context.Context, path string, r registered) {
	h, ok := m.Handlers[r.Type]
	if !ok {
		return
	}
	h.DeRegisterPlugin(ctx, r.Name, r.Endpoint)
	klog.FromContext(ctx).Info("Plugin deregistered", "socket", path, "type", r.Type, "plugin", r.Name)
}

func (m *Manager) types() []string {
	out := make([]string, 0, len(m.Handlers))
	for t := range m.Handlers {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
