package envvars

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// masterService is the API server's Service in the default namespace: its
// variables (KUBERNETES_SERVICE_HOST, ...) go into every pod, whatever
// enableServiceLinks says, because in-cluster clients read them.
const masterService = "kubernetes"

// ServiceEnv returns the service link variables a pod in namespace ns
// sees: those of the "kubernetes" Service in the default namespace always,
// and, when enableServiceLinks, those of every Service of ns (a Service of
// ns named "kubernetes" then replaces the master service's, as upstream
// projects the namespace's Services onto the master services). Services
// without a cluster IP (headless, or not yet allocated) give none. The
// order is stable: Services by name, then each Service's variables in
// FromService's order.
func ServiceEnv(services []*v1.Service, ns string, enableServiceLinks bool) []v1.EnvVar {
	chosen := map[string]*v1.Service{}
	for _, s := range services {
		if s == nil || !hasClusterIP(s) {
			continue
		}
		switch {
		case s.Namespace == ns && enableServiceLinks:
			chosen[s.Name] = s
		case s.Namespace == metav1.NamespaceDefault && s.Name == masterService:
			if _, taken := chosen[s.Name]; !taken {
				chosen[s.Name] = s
			}
		}
	}
	names := make([]string, 0, len(chosen))
	for n := range chosen {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []v1.EnvVar
	for _, n := range names {
		out = append(out, FromService(chosen[n])...)
	}
	return out
}

func hasClusterIP(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone
}

// envName turns a Service or port name into a variable name part.
func envName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

// FromService returns one Service's variables, as Kubernetes (and Docker
// links before it) define them:
//
//	<NAME>_SERVICE_HOST=<clusterIP>
//	<NAME>_SERVICE_PORT=<first port>
//	<NAME>_SERVICE_PORT_<PORTNAME>=<port>       for each named port
//	<NAME>_PORT=<proto>://<clusterIP>:<first port>
//	<NAME>_PORT_<port>_<PROTO>=<proto>://<clusterIP>:<port>   and its
//	  _PROTO, _PORT and _ADDR companions, for each port.
//
// A Service without ports gives only <NAME>_SERVICE_HOST.
func FromService(s *v1.Service) []v1.EnvVar {
	if !hasClusterIP(s) {
		return nil
	}
	prefix := envName(s.Name)
	out := []v1.EnvVar{{Name: prefix + "_SERVICE_HOST", Value: s.Spec.ClusterIP}}
	if len(s.Spec.Ports) == 0 {
		return out
	}
	portVar := prefix + "_SERVICE_PORT"
	out = append(out, v1.EnvVar{Name: portVar, Value: strconv.Itoa(int(s.Spec.Ports[0].Port))})
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, v1.EnvVar{Name: portVar + "_" + envName(p.Name), Value: strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		url := fmt.Sprintf("%s://%s", strings.ToLower(proto), net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(p.Port))))
		if i == 0 {
			out = append(out, v1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		out = append(out,
			v1.EnvVar{Name: pp, Value: url},
			v1.EnvVar{Name: pp + "_PROTO", Value: strings.ToLower(proto)},
			v1.EnvVar{Name: pp + "_PORT", Value: strconv.Itoa(int(p.Port))},
			v1.EnvVar{Name: pp + "_ADDR", Value: s.Spec.ClusterIP},
		)
	}
	return out
}
