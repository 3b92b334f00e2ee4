package kubernetes

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The provider's trust rule: nothing in the target cluster decides what it
// does. Labels and annotations on target objects are only a filter for
// its informer and a note for humans; anyone with write access to a target
// namespace can set them. What the provider acts on is what it made
// itself, kept in memory as ownedPod records: which origin pod (namespace,
// name, UID) each target pod (namespace, name, UID) stands for, and which
// token copies (Secret name and UID, service account, audience, lifetime)
// it minted for it. A record is created only from a pod the engine hands
// to CreatePod (an API pod bound to this node), and the target UID in it
// is the one the target's API server returned when the provider created
// the pod. A target pod counts as this node's only if its namespace, name
// and UID are those of a record.
//
// With a state directory (InitConfig.StateDir, under the kubelet's root
// dir, written by this process only) each record is also a file there, so
// a restarted kubelet adopts exactly the pods it created and nothing a
// tenant planted beside them. Without one the records live in memory
// only, and a restarted provider adopts nothing (an existing target pod
// under a wanted name then blocks that pod's creation with a reason).

// ownedPod is one origin pod's copy in the target.
type ownedPod struct {
	OriginNamespace string    `json:"originNamespace"`
	OriginName      string    `json:"originName"`
	OriginUID       types.UID `json:"originUID"`
	// ServiceAccount is the origin pod's service account (tokens).
	ServiceAccount string `json:"serviceAccount"`
	// TargetNamespace is where the copy lives; its name is OriginName.
	TargetNamespace string `json:"targetNamespace"`
	// TargetUID is the UID the target returned on create ("" while the
	// pod is not created yet).
	TargetUID types.UID    `json:"targetUID,omitempty"`
	Tokens    []ownedToken `json:"tokens,omitempty"`
}

// ownedToken is one service account token copy (a Secret in the target).
type ownedToken struct {
	Secret            string    `json:"secret"`
	SecretUID         types.UID `json:"secretUID"`
	Audience          string    `json:"audience,omitempty"`
	ExpirationSeconds int64     `json:"expirationSeconds"`
	// Expiry of the token in the Secret; not kept on disk, so a restarted
	// provider renews every token once.
	Expiry time.Time `json:"-"`
}

func (o *ownedPod) key() string       { return o.OriginNamespace + "/" + o.OriginName }
func (o *ownedPod) targetKey() string { return o.TargetNamespace + "/" + o.OriginName }

func (o *ownedPod) token(secret string) *ownedToken {
	for i := range o.Tokens {
		if o.Tokens[i].Secret == secret {
			return &o.Tokens[i]
		}
	}
	return nil
}

func (o *ownedPod) valid() error {
	switch {
	case o.OriginUID == "" || o.TargetUID == "":
		return errors.New("no origin or target UID")
	case len(validation.IsDNS1123Label(o.OriginNamespace)) > 0, len(validation.IsDNS1123Label(o.TargetNamespace)) > 0:
		return errors.New("bad namespace")
	case len(validation.IsDNS1123Subdomain(o.OriginName)) > 0:
		return errors.New("bad name")
	case o.ServiceAccount == "" && len(o.Tokens) > 0:
		return errors.New("tokens without a service account")
	}
	for _, t := range o.Tokens {
		if t.Secret == "" || t.SecretUID == "" || t.ExpirationSeconds <= 0 {
			return errors.New("incomplete token copy")
		}
	}
	return nil
}

// records keeps ownedPod records in a directory, one file per origin pod
// UID. A nil *records keeps nothing.
type records struct{ dir string }

func newRecords(dir string) (*records, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("kubernetes provider: state dir: %w", err)
	}
	return &records{dir: dir}, nil
}

func (r *records) path(uid types.UID) (string, error) {
	s := string(uid)
	if s == "" || strings.ContainsAny(s, "/\\") || s == "." || s == ".." {
		return "", fmt.Errorf("origin UID %q is not a file name", s)
	}
	return filepath.Join(r.dir, s+".json"), nil
}

// save writes o atomically.
func (r *records) save(o *ownedPod) error {
	if r == nil {
		return nil
	}
	p, err := r.path(o.OriginUID)
	if err != nil {
		return err
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func (r *records) remove(uid types.UID) error {
	if r == nil {
		return nil
	}
	p, err := r.path(uid)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// load reads every record; files that do not decode or are incomplete
// are returned as errors (and left alone).
func (r *records) load() ([]*ownedPod, []error) {
	if r == nil {
		return nil, nil
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, []error{err}
	}
	var out []*ownedPod
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var o ownedPod
		if err := json.Unmarshal(b, &o); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.Name(), err))
			continue
		}
		if err := o.valid(); err != nil || e.Name() != string(o.OriginUID)+".json" {
			errs = append(errs, fmt.Errorf("%s: not a usable record: %v", e.Name(), err))
			continue
		}
		out = append(out, &o)
	}
	return out, errs
}
