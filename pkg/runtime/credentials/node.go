package credentials

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// NodeKeyring reads the node's own registry logins, as upstream's default
// keyring: the first valid config.json in the kubelet's root directory,
// the working directory, ~/.docker, /.docker; else the first .dockercfg in
// the root directory, the working directory, ~ and /. The result is cached
// for a minute, so a changed file is picked up without a restart.
type NodeKeyring struct {
	rootDir string
	home    string
	ttl     time.Duration

	mu      sync.Mutex
	read    time.Time
	keyring *Keyring
	source  string
}

// NewNodeKeyring returns the node keyring of a kubelet with that root
// directory.
func NewNodeKeyring(rootDir string) *NodeKeyring {
	home, _ := os.UserHomeDir()
	return &NodeKeyring{rootDir: rootDir, home: home, ttl: time.Minute}
}

// Keyring returns the node's logins and the file they came from ("" when
// none was found).
func (n *NodeKeyring) Keyring() (*Keyring, string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.keyring != nil && time.Since(n.read) < n.ttl {
		return n.keyring, n.source
	}
	n.keyring, n.source = n.load()
	n.read = time.Now()
	return n.keyring, n.source
}

func (n *NodeKeyring) load() (*Keyring, string) {
	wd, _ := os.Getwd()
	jsonDirs := []string{n.rootDir, wd, filepath.Join(n.home, ".docker"), "/.docker"}
	for _, d := range jsonDirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, "config.json")
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if c, err := ParseConfigJSON(b); err == nil {
			k := &Keyring{}
			k.Add(c)
			return k, p
		}
	}
	for _, d := range []string{n.rootDir, wd, n.home, "/"} {
		if d == "" {
			continue
		}
		p := filepath.Join(d, ".dockercfg")
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if c, err := ParseDockercfg(b); err == nil {
			k := &Keyring{}
			k.Add(c)
			return k, p
		}
	}
	return &Keyring{}, ""
}
