package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Driver creates, configures and removes the cgroups of the hierarchy.
type Driver interface {
	// Ensure creates the cgroup n (and its missing parents) when it does not
	// exist, then applies r.
	Ensure(n Name, r *Resources) error
	// Set applies r to the existing cgroup n.
	Set(n Name, r *Resources) error
	// Exists reports whether n exists.
	Exists(n Name) bool
	// Remove deletes n when it is empty; a missing cgroup is no error.
	Remove(n Name) error
	// Children lists the names of n's child cgroups.
	Children(n Name) []string
	// Dir is n's directory for one controller ("memory", "pids", "cpu"),
	// "" when the controller is not mounted.
	Dir(controller string, n Name) string
	// Version is the cgroup version in use.
	Version() Version
	// Name is the driver's name (cgroupfs or systemd).
	Name() string
}

// fsDriver writes cgroupfs directly. With style systemd it reads the
// systemd driver's slice paths (the systemd driver delegates reads here).
type fsDriver struct {
	layout Layout
	style  string

	// enabled caches the v2 parents whose subtree_control was checked.
	mu      sync.Mutex
	enabled map[string]bool
}

// NewCgroupfs returns the cgroupfs driver over the detected layout.
func NewCgroupfs(l Layout) Driver {
	return &fsDriver{layout: l, style: DriverCgroupfs, enabled: map[string]bool{}}
}

func (d *fsDriver) Version() Version { return d.layout.Version }
func (d *fsDriver) Name() string     { return DriverCgroupfs }

func (d *fsDriver) path(n Name) string { return n.Path(d.style) }

func (d *fsDriver) Dir(controller string, n Name) string {
	return d.layout.Dir(controller, d.path(n))
}

func (d *fsDriver) Exists(n Name) bool {
	// memory is the controller every supported setup mounts; cpu as the
	// fallback for a machine without it.
	for _, c := range []string{"memory", "cpu"} {
		if dir := d.Dir(c, n); dir != "" {
			_, err := os.Stat(dir)
			return err == nil
		}
	}
	return false
}

func (d *fsDriver) Ensure(n Name, r *Resources) error {
	if d.layout.Version == V2 {
		if err := d.mkdirV2(n); err != nil {
			return err
		}
	} else if err := d.mkdirV1(n); err != nil {
		return err
	}
	return d.Set(n, r)
}

// mkdirV1 creates n in every mounted hierarchy, as the runtime does for
// the cgroups below it; a new cpuset level gets its parent's CPUs and
// memory nodes, without which no task could join it.
func (d *fsDriver) mkdirV1(n Name) error {
	p := d.path(n)
	for _, mnt := range d.layout.MountPoints() {
		dir := filepath.Join(mnt, p)
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		if mnt == d.layout.Mounts["cpuset"] {
			if err := mkdirCpuset(mnt, p); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
	}
	return nil
}

func mkdirCpuset(mnt, p string) error {
	cur := mnt
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		if part == "" {
			continue
		}
		parent := cur
		cur = filepath.Join(cur, part)
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", cur, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, _ := os.ReadFile(filepath.Join(cur, f))
			if strings.TrimSpace(string(v)) != "" {
				continue
			}
			pv, err := os.ReadFile(filepath.Join(parent, f))
			if err != nil || strings.TrimSpace(string(pv)) == "" {
				continue
			}
			if err := os.WriteFile(filepath.Join(cur, f), pv, 0o644); err != nil {
				return fmt.Errorf("copying %s to %s: %w", f, cur, err)
			}
		}
	}
	return nil
}

// mkdirV2 creates n level by level, enabling in each parent the
// controllers it offers, so the pods below can be limited.
func (d *fsDriver) mkdirV2(n Name) error {
	p := d.path(n)
	cur := d.layout.Unified
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		if part == "" {
			continue
		}
		if err := d.enableControllers(cur); err != nil {
			return err
		}
		cur = filepath.Join(cur, part)
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", cur, err)
		}
	}
	return nil
}

func (d *fsDriver) enableControllers(dir string) error {
	d.mu.Lock()
	done := d.enabled[dir]
	d.mu.Unlock()
	if done {
		return nil
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("reading the controllers of %s: %w", dir, err)
	}
	cur, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	on := map[string]bool{}
	for _, c := range strings.Fields(string(cur)) {
		on[c] = true
	}
	var add []string
	for _, c := range strings.Fields(string(avail)) {
		if !on[c] {
			add = append(add, "+"+c)
		}
	}
	if len(add) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(add, " ")), 0o644); err != nil {
			return fmt.Errorf("enabling controllers %v in %s: %w", add, dir, err)
		}
	}
	d.mu.Lock()
	d.enabled[dir] = true
	d.mu.Unlock()
	return nil
}

func (d *fsDriver) Set(n Name, r *Resources) error {
	if r == nil {
		return nil
	}
	if d.layout.Version == V2 {
		return d.setV2(d.layout.Dir("", d.path(n)), r)
	}
	return d.setV1(n, r)
}

func (d *fsDriver) setV1(n Name, r *Resources) error {
	var errs []error
	if dir := d.Dir("cpu", n); dir != "" {
		if r.CPUShares != nil {
			errs = append(errs, write(dir, "cpu.shares", strconv.FormatUint(*r.CPUShares, 10)))
		}
		if r.CPUQuota != nil {
			errs = append(errs, setQuotaV1(dir, *r.CPUQuota, r.CPUPeriod))
		}
	}
	if dir := d.Dir("memory", n); dir != "" && r.Memory != nil {
		v := *r.Memory
		if v == 0 {
			v = -1
		}
		errs = append(errs, write(dir, "memory.limit_in_bytes", strconv.FormatInt(v, 10)))
	}
	if dir := d.Dir("pids", n); dir != "" && r.Pids != nil {
		errs = append(errs, write(dir, "pids.max", pidsValue(*r.Pids)))
	}
	return errors.Join(errs...)
}

// setQuotaV1 writes the period and the quota; when the kernel refuses the
// period for the quota in place (the ratio checks against the children),
// it writes the quota first.
func setQuotaV1(dir string, quota int64, period *uint64) error {
	q := strconv.FormatInt(quota, 10)
	if quota == 0 {
		q = "-1"
	}
	if period == nil {
		return write(dir, "cpu.cfs_quota_us", q)
	}
	p := strconv.FormatUint(*period, 10)
	if err := write(dir, "cpu.cfs_period_us", p); err != nil {
		if err := write(dir, "cpu.cfs_quota_us", q); err != nil {
			return err
		}
		return write(dir, "cpu.cfs_period_us", p)
	}
	return write(dir, "cpu.cfs_quota_us", q)
}

func (d *fsDriver) setV2(dir string, r *Resources) error {
	var errs []error
	if r.CPUShares != nil {
		errs = append(errs, write(dir, "cpu.weight", strconv.FormatUint(SharesToWeight(*r.CPUShares), 10)))
	}
	if r.CPUQuota != nil {
		period := uint64(DefaultQuotaPeriod)
		if r.CPUPeriod != nil {
			period = *r.CPUPeriod
		}
		q := "max"
		if *r.CPUQuota > 0 {
			q = strconv.FormatInt(*r.CPUQuota, 10)
		}
		errs = append(errs, write(dir, "cpu.max", q+" "+strconv.FormatUint(period, 10)))
	}
	if r.Memory != nil {
		v := "max"
		if *r.Memory > 0 {
			v = strconv.FormatInt(*r.Memory, 10)
		}
		errs = append(errs, write(dir, "memory.max", v))
	}
	if r.Pids != nil {
		errs = append(errs, write(dir, "pids.max", pidsValue(*r.Pids)))
	}
	return errors.Join(errs...)
}

func pidsValue(v int64) string {
	if v <= 0 {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

func write(dir, file, val string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0o644); err != nil {
		return fmt.Errorf("writing %s to %s: %w", val, filepath.Join(dir, file), err)
	}
	return nil
}

func (d *fsDriver) Remove(n Name) error {
	p := d.path(n)
	var errs []error
	for _, mnt := range d.layout.MountPoints() {
		if err := syscall.Rmdir(filepath.Join(mnt, p)); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", filepath.Join(mnt, p), err))
		}
	}
	return errors.Join(errs...)
}

func (d *fsDriver) Children(n Name) []string {
	p := d.path(n)
	seen := map[string]bool{}
	var out []string
	for _, mnt := range d.layout.MountPoints() {
		entries, err := os.ReadDir(filepath.Join(mnt, p))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, e.Name())
			}
		}
	}
	return out
}
