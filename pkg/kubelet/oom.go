package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"k8s.io/klog/v2"
)

// selfOOMScoreAdjPath is where the kubelet sets its own OOM score.
const selfOOMScoreAdjPath = "/proc/self/oom_score_adj"

// setOwnOOMScoreAdj gives the kubelet process the configured oom_score_adj
// (oomScoreAdj, default -999), as upstream does at start, so the OOM killer
// picks pods before the kubelet. Where the kernel refuses (on these
// machines a negative value is refused even for root), the kubelet runs on
// with the score it has and says why: this is never a reason not to start.
func setOwnOOMScoreAdj(log klog.Logger, value *int32) {
	if value == nil {
		return
	}
	err := os.WriteFile(selfOOMScoreAdjPath, []byte(strconv.Itoa(int(*value))), 0)
	if cause := oomScoreAdjRefusal(*value, err); cause != "" {
		log.Info("Warning: the kubelet's own oom_score_adj is not set", "oomScoreAdj", *value, "cause", cause)
		return
	}
	log.V(2).Info("Set the kubelet's own oom_score_adj", "oomScoreAdj", *value)
}

// oomScoreAdjRefusal explains why writing value to the kubelet's
// oom_score_adj failed with err; "" when it did not fail.
func oomScoreAdjRefusal(value int32, err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrPermission) && value < 0:
		return fmt.Sprintf("the kernel refused to lower it to %d (%v): this machine lets no process, even root, take a negative OOM score; the kubelet keeps the score it inherited", value, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("the kernel refused %d (%v): the kubelet lacks the privilege to change its OOM score", value, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("cannot set it to %d: %s does not exist (%v): no procfs here", value, selfOOMScoreAdjPath, err)
	default:
		return fmt.Sprintf("writing %d to %s failed: %v", value, selfOOMScoreAdjPath, err)
	}
}
