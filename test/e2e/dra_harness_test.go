package e2e

// The harness for Dynamic Resource Allocation (resource.k8s.io/v1) with a
// DRA driver this project did not write: upstream's DRA test driver,
// k8s.io/kubernetes/test/e2e/dra/test-driver (built by
// hack/build-upstream.sh dra-test-driver; hack/test.sh exports its path
// as GOKUBELET_DRA_TEST_DRIVER).
//
// What the harness relies on, from upstream v1.37.2
// (test/e2e/dra/test-driver/app/server.go and kubeletplugin.go, and the
// helper it uses, k8s.io/dynamic-resource-allocation/kubeletplugin):
//
//   - Command line: `dra-test-driver [--kubeconfig F] [--drivername N] [-v L]
//     kubelet-plugin --node-name NODE --plugin-registration-path DIR
//     --datadir DIR --cdi-dir DIR [--num-devices 4]`. A KUBECONFIG in the
//     environment overrides --kubeconfig (so the harness drops it); without
//     either the driver wants an in-cluster config. SIGTERM/SIGINT stop it
//     cleanly: both sockets are removed.
//   - Registration: a pluginregistration/v1 Registration server on
//     <plugin-registration-path>/<driver>-reg.sock. GetInfo answers
//     Type "DRAPlugin", Name <driver>, Endpoint <datadir>/<driver>/dra.sock,
//     SupportedVersions ["v1.DRAPlugin", "v1beta1.DRAPlugin",
//     "v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"] (services, not
//     versions: the constants DRAPluginService of k8s.io/kubelet's dra/v1
//     and dra/v1beta1 and DRAResourceHealthService of dra-health/v1 and
//     v1alpha1).
//   - The DRA socket is <datadir>/<driver>/dra.sock: the driver only
//     creates <datadir> itself, so the harness makes <datadir>/<driver>.
//   - ResourceSlices: the driver publishes them itself with its kubeconfig
//     (resourceslice controller, owner the Node, looked up by name): one
//     pool named after the node, spec.nodeName the node, spec.driver the
//     driver, devices device-00 .. device-NN (--num-devices, default 4),
//     no attributes. They stay when the driver stops: the harness deletes
//     them.
//   - NodePrepareResources (gRPC k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin,
//     and the same through v1beta1): the helper reads each claim from the
//     API (it must be allocated and have the UID asked for), then for each
//     allocation result of this driver writes the CDI spec
//     <cdi-dir>/<driver>-<claim UID>-<request>.json (kind <driver>/test,
//     one device claim-<claim UID>-<request> whose containerEdits are env
//     only: claim_<claim name>_<request>=true, with every character outside
//     [a-zA-Z0-9] of that name made "_", plus user_<k>=<v> / admin_<k>=<v>
//     for opaque config parameters of the claim / the class) and answers one
//     Device per result: request names, pool, device and CDI device ID
//     "<driver>/test=claim-<claim UID>-<request>". NodeUnprepareResources
//     removes the spec file; it is idempotent.
//
// containerd 2 reads CDI specs from /var/run/cdi (and /etc/cdi) by default,
// so the CDI devices the kubelet passes in CRI's CDIDevices are resolved
// there: the harness uses that directory.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/gokubelet/kubelet/test/framework"
)

const (
	// draCDIDir is where the driver writes its CDI specs: containerd 2's
	// default CDI spec directory.
	draCDIDir = "/var/run/cdi"
	// draRequest is the name of the one request of draObjects' template.
	draRequest = "dev"
	// draPodClaim is the name of draPod's pod-level resource claim.
	draPodClaim = "dev"
)

// draDriver is upstream's DRA test driver running as the kubelet plugin of
// the e2e node.
type draDriver struct {
	Name string
	Node string
	// RegSocket is the registration socket in the kubelet's
	// plugins_registry; DataDir the driver's own directory, holding
	// DRASocket, the endpoint GetInfo announces.
	RegSocket string
	DataDir   string
	DRASocket string

	cmd  *osexec.Cmd
	done chan struct{} // closed when its stderr is drained (it exited)

	mu  sync.Mutex
	log []string
}

// startDRATestDriver runs the driver named driverName (lowercase, a DNS
// subdomain; keep it short: the socket paths under rootDir must fit in 108
// bytes) for the e2e node, with the admin kubeconfig. Its log (-v=6, which
// includes the gRPC calls it serves and its answers) goes to the test log.
// extra are more driver flags (e.g. "--num-devices=2", "-v=3"). It is
// stopped with SIGTERM, and its ResourceSlices deleted, at cleanup.
func startDRATestDriver(t *testing.T, driverName string, extra ...string) *draDriver {
	t.Helper()
	bin := os.Getenv("GOKUBELET_DRA_TEST_DRIVER")
	if bin == "" {
		t.Fatal("GOKUBELET_DRA_TEST_DRIVER is not set: run through make test (hack/test.sh builds upstream's DRA test driver)")
	}
	nodeName := node(t)
	registry := filepath.Join(rootDir, "plugins_registry")
	plugins := filepath.Join(rootDir, "plugins")
	d := &draDriver{
		Name:      driverName,
		Node:      nodeName,
		RegSocket: filepath.Join(registry, driverName+"-reg.sock"),
		DataDir:   filepath.Join(plugins, driverName),
		DRASocket: filepath.Join(plugins, driverName, "dra.sock"),
		done:      make(chan struct{}),
	}
	if len(d.RegSocket) > 107 || len(d.DRASocket) > 107 {
		t.Fatalf("driver name %q too long for its sockets (%s, %s)", driverName, d.RegSocket, d.DRASocket)
	}
	// The driver makes --cdi-dir and the parent of its data directory
	// but listens in <datadir>/<driver> without making it (upstream's
	// README has an operator mkdir it); plugins_registry is the kubelet's.
	for _, dir := range []string{draCDIDir, registry, d.DataDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{
		"--kubeconfig", filepath.Join(clusterDir, "admin.kubeconfig"),
		"--drivername", driverName,
		"-v", "6",
		"kubelet-plugin",
		"--node-name", nodeName,
		"--plugin-registration-path", registry,
		"--datadir", plugins,
		"--cdi-dir", draCDIDir,
	}
	d.cmd = osexec.Command(bin, append(args, extra...)...)
	// KUBECONFIG would win over --kubeconfig.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBECONFIG=") {
			d.cmd.Env = append(d.cmd.Env, e)
		}
	}
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stdout = d.cmd.Stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("DRA test driver %s: %s", driverName, strings.Join(d.cmd.Args, " "))
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			d.mu.Lock()
			d.log = append(d.log, sc.Text())
			d.mu.Unlock()
			t.Logf("dra-test-driver %s: %s", driverName, sc.Text())
		}
	}()
	t.Cleanup(func() {
		d.Stop(t)
		// The driver leaves its ResourceSlices behind (upstream's e2e
		// deletes them too); a later kubelet would otherwise see a
		// driver that is gone.
		err := client.ResourceV1().ResourceSlices().DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.driver", driverName).String()})
		if err != nil {
			t.Logf("deleting the ResourceSlices of %s: %v", driverName, err)
		}
		_ = os.RemoveAll(d.DataDir)
	})
	return d
}

// Stop ends the driver with SIGTERM (it removes its sockets), killing it if
// it has not exited within 30s. Safe to call more than once.
func (d *draDriver) Stop(t *testing.T) {
	t.Helper()
	if d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Errorf("DRA test driver %s did not exit within 30s of SIGTERM; killing it", d.Name)
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	_ = d.cmd.Wait()
}

// Exited tells whether the driver process has ended (its stderr closed).
func (d *draDriver) Exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Log is what the driver has logged so far.
func (d *draDriver) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.log, "\n")
}

// Slices are the driver's ResourceSlices for its node.
func (d *draDriver) Slices(ctx context.Context) ([]resourcev1.ResourceSlice, error) {
	sel := fields.AndSelectors(fields.OneTermEqualSelector("spec.nodeName", d.Node), fields.OneTermEqualSelector("spec.driver", d.Name))
	l, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// GetInfo asks the driver's registration socket what the kubelet's plugin
// watcher would (it does not notify a registration status).
func (d *draDriver) GetInfo(ctx context.Context) (*registerapi.PluginInfo, error) {
	conn, err := grpc.NewClient("unix://"+d.RegSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return registerapi.NewRegistrationClient(conn).GetInfo(ctx, &registerapi.InfoRequest{})
}

// draObjects creates a DeviceClass selecting driverName's devices (CEL
// device.driver == driverName) and, in ns, a ResourceClaimTemplate whose
// one request (draRequest) asks for exactly one device of that class. It
// returns their names; the class is deleted at cleanup (the template goes
// with ns).
func draObjects(t *testing.T, ns, driverName string) (className, templateName string) {
	t.Helper()
	ctx := context.Background()
	// The namespace is a DNS label and the driver a DNS subdomain: unique
	// per test and driver.
	className = ns + "." + driverName
	templateName = driverName
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec: resourcev1.DeviceClassSpec{
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == %q", driverName),
			}}},
		},
	}
	if _, err := client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := client.ResourceV1().DeviceClasses().Delete(context.Background(), className, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting DeviceClass %s: %v", className, err)
		}
	})
	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: templateName, Namespace: ns},
		Spec: resourcev1.ResourceClaimTemplateSpec{
			Spec: resourcev1.ResourceClaimSpec{
				Devices: resourcev1.DeviceClaim{
					Requests: []resourcev1.DeviceRequest{{
						Name: draRequest,
						Exactly: &resourcev1.ExactDeviceRequest{
							DeviceClassName: className,
							AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
							Count:           1,
						},
					}},
				},
			},
		},
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return className, templateName
}

// draPod is testPod with one pod-level resource claim (draPodClaim) made
// from the template and used by its container, which prints its
// environment (where the driver's CDI spec puts draClaimEnv) and sleeps.
func draPod(name, templateName string) *v1.Pod {
	p := testPod(name)
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: draPodClaim, ResourceClaimTemplateName: &templateName}}
	c := &p.Spec.Containers[0]
	c.Command = []string{"sh", "-c", "env; exec sleep 3600"}
	c.Resources.Claims = []v1.ResourceClaim{{Name: draPodClaim}}
	return p
}

// draClaimEnv is the variable the driver's CDI spec sets in containers
// using the claim named claimName (the ResourceClaim generated for a pod:
// pod.Status.ResourceClaimStatuses), for draObjects' request:
// claim_<claim>_<request>=true with every character outside [a-zA-Z0-9]
// made "_" (upstream's nodePrepareResource).
func draClaimEnv(claimName string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString("claim_"+claimName+"_"+draRequest, "_") + "=true"
}

// draCDIDeviceID is the CDI device ID NodePrepareResources returns for the
// claim with uid, for draObjects' request.
func draCDIDeviceID(driverName, claimUID string) string {
	return driverName + "/test=claim-" + claimUID + "-" + draRequest
}

// draCDISpecFile is where the driver writes that device's CDI spec.
func draCDISpecFile(driverName, claimUID string) string {
	return filepath.Join(draCDIDir, driverName+"-"+claimUID+"-"+draRequest+".json")
}

// TestDRATestDriverPublishes: upstream's DRA test driver, run for the e2e
// node, publishes its node's ResourceSlice itself and offers its
// registration socket in the kubelet's plugins_registry, answering GetInfo
// as a DRA plugin; the harness's DeviceClass, ResourceClaimTemplate and pod
// pass API validation. (Whether the kubelet takes the registration, and
// pods with claims, is for the DRA tests proper.)
func TestDRATestDriverPublishes(t *testing.T) {
	ctx := context.Background()
	driver := fmt.Sprintf("dra-%d.e2e.gokubelet.io", time.Now().UnixNano()%100000)
	d := startDRATestDriver(t, driver)

	framework.Eventually(t, "the driver's ResourceSlice for "+d.Node, func() (bool, string) {
		if d.Exited() {
			t.Fatalf("DRA test driver exited: %s", framework.Tail(d.Log(), 30))
		}
		got, err := d.Slices(ctx)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, s := range got {
			var devices []string
			for _, dev := range s.Spec.Devices {
				devices = append(devices, dev.Name)
			}
			owned := len(s.OwnerReferences) == 1 && s.OwnerReferences[0].Kind == "Node" && s.OwnerReferences[0].Name == d.Node
			seen = append(seen, fmt.Sprintf("%s: pool %q (gen %d, %d slices) node %v devices %v owned by node %v",
				s.Name, s.Spec.Pool.Name, s.Spec.Pool.Generation, s.Spec.Pool.ResourceSliceCount, ptrString(s.Spec.NodeName), devices, owned))
			if s.Spec.Pool.Name == d.Node && s.Spec.NodeName != nil && *s.Spec.NodeName == d.Node && owned &&
				slices.Equal(devices, []string{"device-00", "device-01", "device-02", "device-03"}) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d slices: %v", len(got), seen)
	})

	framework.Eventually(t, "the registration socket in plugins_registry", func() (bool, string) {
		if d.Exited() {
			t.Fatalf("DRA test driver exited: %s", framework.Tail(d.Log(), 30))
		}
		fi, err := os.Stat(d.RegSocket)
		if err != nil {
			return false, err.Error()
		}
		if fi.Mode()&os.ModeSocket == 0 {
			return false, fmt.Sprintf("%s is %v, not a socket", d.RegSocket, fi.Mode())
		}
		info, err := d.GetInfo(ctx)
		if err != nil {
			return false, "GetInfo: " + err.Error()
		}
		ok := info.Type == registerapi.DRAPlugin && info.Name == driver && info.Endpoint == d.DRASocket &&
			slices.Contains(info.SupportedVersions, "v1.DRAPlugin") && slices.Contains(info.SupportedVersions, "v1beta1.DRAPlugin")
		return ok, fmt.Sprintf("GetInfo: %+v", info)
	})
	if fi, err := os.Stat(d.DRASocket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the DRA socket %s: %v %v", d.DRASocket, fi, err)
	}

	// The harness's API objects pass the API server's validation: the
	// class (its CEL selector compiles) and the template are stored, and
	// draPod is accepted by a server-side dry run (nothing is created, the
	// scheduler never sees it).
	ns := namespace(t)
	className, templateName := draObjects(t, ns, driver)
	class, err := client.ResourceV1().DeviceClasses().Get(ctx, className, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(class.Spec.Selectors) != 1 || class.Spec.Selectors[0].CEL == nil || class.Spec.Selectors[0].CEL.Expression != `device.driver == "`+driver+`"` {
		t.Errorf("DeviceClass %s selectors: %+v", className, class.Spec.Selectors)
	}
	tmpl, err := client.ResourceV1().ResourceClaimTemplates(ns).Get(ctx, templateName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := tmpl.Spec.Spec.Devices.Requests; len(r) != 1 || r[0].Name != draRequest || r[0].Exactly == nil || r[0].Exactly.DeviceClassName != className || r[0].Exactly.Count != 1 {
		t.Errorf("ResourceClaimTemplate %s requests: %+v", templateName, r)
	}
	p, err := client.CoreV1().Pods(ns).Create(ctx, draPod("dra-dry-run", templateName), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry run of draPod: %v", err)
	}
	if len(p.Spec.ResourceClaims) != 1 || len(p.Spec.Containers[0].Resources.Claims) != 1 {
		t.Errorf("dry-run pod's claims: %+v %+v", p.Spec.ResourceClaims, p.Spec.Containers[0].Resources.Claims)
	}

	// SIGTERM: the driver removes both sockets.
	d.Stop(t)
	for _, s := range []string{d.RegSocket, d.DRASocket} {
		if _, err := os.Stat(s); !os.IsNotExist(err) {
			t.Errorf("%s still there after the driver stopped: %v", s, err)
		}
	}
}

func ptrString(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
