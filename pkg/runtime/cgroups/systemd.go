package cgroups

import (
	"errors"
	"fmt"
	"path"

	libcg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/systemd"
)

// systemdDriver creates and configures slices through systemd (D-Bus), as
// the upstream kubelet does with libcontainer's systemd manager; reads go
// to cgroupfs at the slices' paths.
type systemdDriver struct {
	fs *fsDriver
}

// NewSystemd returns the systemd driver. It fails when systemd is not the
// init system (there is no one to create slices).
func NewSystemd(l Layout) (Driver, error) {
	if !systemd.IsRunningSystemd() {
		return nil, errors.New("cgroupDriver is systemd but systemd is not running on this machine (no /run/systemd/system); use cgroupDriver: cgroupfs")
	}
	return &systemdDriver{fs: &fsDriver{layout: l, style: DriverSystemd, enabled: map[string]bool{}}}, nil
}

func (d *systemdDriver) Version() Version                     { return d.fs.layout.Version }
func (d *systemdDriver) Name() string                         { return DriverSystemd }
func (d *systemdDriver) Exists(n Name) bool                   { return d.fs.Exists(n) }
func (d *systemdDriver) Children(n Name) []string             { return d.fs.Children(n) }
func (d *systemdDriver) Dir(controller string, n Name) string { return d.fs.Dir(controller, n) }

// unitConfig is libcontainer's description of the slice for n.
func (d *systemdDriver) unitConfig(n Name, r *Resources) *libcg.Cgroup {
	dir, base := path.Split(n.Systemd())
	parent := "-.slice"
	if dir != "/" {
		parent = path.Base(dir)
	}
	res := &libcg.Resources{SkipDevices: true, SkipFreezeOnSet: true}
	if r != nil {
		if r.Memory != nil {
			res.Memory = *r.Memory
		}
		if r.CPUShares != nil {
			if d.fs.layout.Version == V2 {
				res.CpuWeight = SharesToWeight(*r.CPUShares)
			} else {
				res.CpuShares = *r.CPUShares
			}
		}
		if r.CPUQuota != nil {
			res.CpuQuota = *r.CPUQuota
		}
		if r.CPUPeriod != nil {
			res.CpuPeriod = *r.CPUPeriod
		}
		if r.Pids != nil {
			res.PidsLimit = *r.Pids
		}
	}
	return &libcg.Cgroup{Name: base, Parent: parent, Systemd: true, Resources: res}
}

type unitManager interface {
	Apply(pid int) error
	Set(r *libcg.Resources) error
	Destroy() error
}

func (d *systemdDriver) manager(n Name, r *Resources) (unitManager, *libcg.Cgroup, error) {
	cfg := d.unitConfig(n, r)
	if d.fs.layout.Version == V2 {
		m, err := systemd.NewUnifiedManager(cfg, "")
		return m, cfg, err
	}
	m, err := systemd.NewLegacyManager(cfg, nil)
	return m, cfg, err
}

func (d *systemdDriver) Ensure(n Name, r *Resources) error {
	m, cfg, err := d.manager(n, r)
	if err != nil {
		return fmt.Errorf("systemd slice %s: %w", cfg.Name, err)
	}
	if err := m.Apply(-1); err != nil {
		return fmt.Errorf("creating systemd slice %s: %w", cfg.Name, err)
	}
	return m.Set(cfg.Resources)
}

func (d *systemdDriver) Set(n Name, r *Resources) error {
	m, cfg, err := d.manager(n, r)
	if err != nil {
		return fmt.Errorf("systemd slice %s: %w", cfg.Name, err)
	}
	return m.Set(cfg.Resources)
}

func (d *systemdDriver) Remove(n Name) error {
	m, cfg, err := d.manager(n, nil)
	if err != nil {
		return fmt.Errorf("systemd slice %s: %w", cfg.Name, err)
	}
	return m.Destroy()
}
