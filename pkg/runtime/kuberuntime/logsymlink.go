package kuberuntime

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultContainerLogSymlinkDir is where the upstream kubelet links every
// container's log for log collectors (fluentd, Fluent Bit, ... read
// /var/log/containers/*.log).
const DefaultContainerLogSymlinkDir = "/var/log/containers"

// logSymlinkPath is the link of a container's log, as upstream names it:
// <dir>/<pod>_<namespace>_<container>-<containerID>.log, cut to 255 bytes.
func logSymlinkPath(dir, podName, namespace, containerName, containerID string) string {
	const maxName, ext = 255, ".log"
	name := fmt.Sprintf("%s_%s_%s-%s", podName, namespace, containerName, containerID)
	if len(name) > maxName-len(ext) {
		name = name[:maxName-len(ext)]
	}
	return filepath.Join(dir, name+ext)
}

// linkContainerLog links the log of a started container into the symlink
// directory, only when the log exists (a dangling link helps no one).
func (m *Manager) linkContainerLog(podName, namespace, containerName, containerID, logPath string) error {
	if m.opts.ContainerLogSymlinkDir == "" {
		return nil
	}
	if _, err := os.Stat(logPath); os.IsNotExist(err) {
		return nil
	}
	if err := os.MkdirAll(m.opts.ContainerLogSymlinkDir, 0o755); err != nil {
		return err
	}
	link := logSymlinkPath(m.opts.ContainerLogSymlinkDir, podName, namespace, containerName, containerID)
	if err := os.Symlink(logPath, link); err != nil && !os.IsExist(err) {
		return err
	}
	return nil
}

// unlinkContainerLog removes the link of a removed container. The link's
// name is made from the pod's and the container's names (the container's
// labels), so it is removed by name: matching the directory against a
// pattern cost a scan of every link on the node for each removed container.
func (m *Manager) unlinkContainerLog(podName, namespace, containerName, containerID string) {
	if m.opts.ContainerLogSymlinkDir == "" || containerID == "" || podName == "" || containerName == "" {
		return
	}
	_ = os.Remove(logSymlinkPath(m.opts.ContainerLogSymlinkDir, podName, namespace, containerName, containerID))
}
