package gc

import "github.com/gokubelet/kubelet/pkg/node/signals"

func statfs(path string) (capacity, available int64, err error) {
	fs, err := signals.Statfs(path)
	if err != nil {
		return 0, 0, err
	}
	return fs.Capacity, fs.Available, nil
}
