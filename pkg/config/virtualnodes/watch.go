package virtualnodes

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"
)

// DefaultWatchInterval is how often Watch re-reads the file.
const DefaultWatchInterval = 5 * time.Second

// Watch re-reads the file every interval until ctx ends and calls
// onChange with every new valid content. An unreadable or invalid file is
// logged (once per content) and ignored: the nodes keep running as they
// are. first is the content the caller started from.
func Watch(ctx context.Context, path string, interval time.Duration, first []byte, onChange func(*Config)) {
	log := klog.FromContext(ctx).WithValues("path", path)
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	last := first
	var lastBad []byte
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(path)
		if err != nil {
			if lastBad == nil || !bytes.Equal(lastBad, []byte(err.Error())) {
				log.Error(err, "Cannot read the virtual nodes config; keeping the nodes as they are")
				lastBad = []byte(err.Error())
			}
			continue
		}
		if bytes.Equal(data, last) {
			continue
		}
		c, err := Decode(data, filepath.Dir(path))
		if err != nil {
			if !bytes.Equal(lastBad, data) {
				log.Error(err, "The changed virtual nodes config is invalid; keeping the nodes as they are")
				lastBad = data
			}
			continue
		}
		log.Info("Virtual nodes config changed")
		last, lastBad = data, nil
		onChange(c)
	}
}
