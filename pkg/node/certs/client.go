// Package certs is the node's TLS identity toward the API server: the
// client certificate obtained by TLS bootstrap (--bootstrap-kubeconfig,
// a CertificateSigningRequest for kubernetes.io/kube-apiserver-client-kubelet)
// and rotated before it expires (rotateCertificates), and the serving
// certificate requested the same way (serverTLSBootstrap,
// kubernetes.io/kubelet-serving). Certificates live in --cert-dir under
// upstream's names: kubelet-client-current.pem, kubelet-server-current.pem
// (symlinks to the dated files client-go's certificate store writes).
//
// The mechanics are client-go's: k8s.io/client-go/util/certificate (the
// rotating manager and its file store), .../certificate/csr (request and
// wait) and k8s.io/client-go/util/connrotation (closing connections so
// that a new certificate is used at once).
package certs

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
)

// Names of the certificate pairs in --cert-dir (<name>-current.pem).
const (
	ClientPairName = "kubelet-client"
	ServerPairName = "kubelet-server"
	// pendingKeyFile keeps the key of a bootstrap CSR until its
	// certificate arrives, so a restart reuses the same request.
	pendingKeyFile = "kubelet-client.key.tmp"
)

// ClientOptions say how the kubelet authenticates to the API server.
type ClientOptions struct {
	// KubeconfigPath is --kubeconfig. With a bootstrap kubeconfig it is
	// written by the bootstrap (pointing at the certificate in CertDir)
	// unless it already holds a certificate that has not expired.
	KubeconfigPath string
	// BootstrapKubeconfigPath is --bootstrap-kubeconfig (may be empty).
	BootstrapKubeconfigPath string
	// CertDir is --cert-dir.
	CertDir  string
	NodeName string
	// Rotate is rotateCertificates: the client certificate is renewed
	// through CSRs when 70–90% of its lifetime has passed, and the API
	// clients switch to the new one at once.
	Rotate bool
	// WaitTimeout bounds the wait for a bootstrap certificate when not
	// rotating (default 1h, as upstream).
	WaitTimeout time.Duration
}

// Client is the kubelet's API client identity.
type Client struct {
	// Config is the base configuration of every API client of the
	// kubelet (copy it before setting QPS or content type).
	Config *rest.Config

	manager certificate.Manager
	dialer  *connrotation.Dialer
	// checkPeriod is how often Run looks for a rotated certificate.
	checkPeriod time.Duration
	// exitAfter: with no usable certificate for this long while the API
	// server answers, Run fails (the process should restart, as upstream).
	exitAfter time.Duration
}

// Manager is the rotating certificate manager (nil without rotation).
func (c *Client) Manager() certificate.Manager { return c.manager }

// NewClient prepares the API client identity. Without rotation and with a
// bootstrap kubeconfig it blocks until the bootstrap certificate is issued
// (or ctx ends). With rotation it returns at once: the manager requests
// the certificate in the background when Run starts, and requests fail
// with 401 until it arrives.
func NewClient(ctx context.Context, o ClientOptions) (*Client, error) {
	if !o.Rotate {
		if o.BootstrapKubeconfigPath != "" {
			if err := Bootstrap(ctx, o); err != nil {
				return nil, err
			}
		}
		cfg, err := loadKubeconfig(o.KubeconfigPath)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", o.KubeconfigPath, err)
		}
		return &Client{Config: cfg}, nil
	}
	return newRotatingClient(o)
}

// Bootstrap makes sure --kubeconfig holds a client certificate that has
// not expired: otherwise it requests one with the bootstrap kubeconfig's
// credentials (a CSR named after its key and subject, so a restart finds
// the same request), waits until the controller manager approves and
// signs it, stores it in CertDir and writes --kubeconfig pointing there.
func Bootstrap(ctx context.Context, o ClientOptions) error {
	log := klog.FromContext(ctx)
	if ok, why := kubeconfigUsable(o.KubeconfigPath); ok {
		log.V(2).Info("Kubeconfig holds a valid client certificate; no bootstrap needed", "kubeconfig", o.KubeconfigPath)
		return nil
	} else {
		log.Info("Bootstrapping a client certificate", "reason", why, "bootstrapKubeconfig", o.BootstrapKubeconfigPath)
	}
	bcfg, err := loadKubeconfig(o.BootstrapKubeconfigPath)
	if err != nil {
		return fmt.Errorf("--bootstrap-kubeconfig %s: %w", o.BootstrapKubeconfigPath, err)
	}
	client, err := kubernetes.NewForConfig(bcfg)
	if err != nil {
		return err
	}
	store, err := certificate.NewFileStore(ClientPairName, o.CertDir, o.CertDir, "", "")
	if err != nil {
		return fmt.Errorf("client certificate store in %s: %w", o.CertDir, err)
	}
	keyPath := filepath.Join(o.CertDir, pendingKeyFile)
	keyPEM, _, err := keyutil.LoadOrGenerateKeyFile(keyPath)
	if err != nil {
		return fmt.Errorf("bootstrap key %s: %w", keyPath, err)
	}
	timeout := o.WaitTimeout
	if timeout == 0 {
		timeout = time.Hour
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	certPEM, err := requestClientCert(wctx, client, keyPEM, o.NodeName)
	if err != nil {
		return fmt.Errorf("bootstrapping the client certificate: %w", err)
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return err
	}
	_ = os.Remove(keyPath)
	if err := writeKubeconfig(bcfg, o.KubeconfigPath, store.CurrentPath()); err != nil {
		return err
	}
	log.Info("Client certificate issued", "cert", store.CurrentPath(), "kubeconfig", o.KubeconfigPath)
	return nil
}

// requestClientCert creates (or finds) the node's client CSR and waits
// for its certificate, retrying while the API server is unreachable.
func requestClientCert(ctx context.Context, client kubernetes.Interface, keyPEM []byte, nodeName string) ([]byte, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("the bootstrap key cannot sign")
	}
	subject := &pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}
	csrPEM, err := certutil.MakeCSR(key, subject, nil, nil)
	if err != nil {
		return nil, err
	}
	usages := certificate.DefaultKubeletClientGetUsages(key)
	name, err := csrName(signer.Public(), subject, usages)
	if err != nil {
		return nil, err
	}
	var reqName string
	var reqUID types.UID
	err = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		n, uid, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, name, certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
		if err != nil {
			klog.FromContext(ctx).Info("Creating the bootstrap CSR failed; retrying", "err", err)
			return false, nil
		}
		reqName, reqUID = n, uid
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Waiting for the client CSR to be approved and signed", "csr", reqName)
	return csr.WaitForCertificate(ctx, client, reqName, reqUID)
}

// csrName is a stable name for a CSR: the same key, subject and usages
// give the same name, so a retried request finds the first one.
func csrName(pub crypto.PublicKey, subject *pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, part := range append([][]byte{der, []byte(subject.CommonName)}, orgs(subject, usages)...) {
		// Length-prefixed, so that no two inputs hash alike.
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return "node-csr-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:32], nil
}

func orgs(subject *pkix.Name, usages []certificatesv1.KeyUsage) [][]byte {
	var out [][]byte
	for _, o := range subject.Organization {
		out = append(out, []byte(o))
	}
	for _, u := range usages {
		out = append(out, []byte(u))
	}
	return out
}

// validPair reports whether the PEM pair parses and its certificate has
// not expired.
func validPair(certPEM, keyPEM []byte) bool {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return false
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	return err == nil && time.Now().Before(leaf.NotAfter)
}

// kubeconfigUsable reports whether the kubeconfig exists and its client
// certificates have not expired.
func kubeconfigUsable(path string) (bool, string) {
	if _, err := os.Stat(path); err != nil {
		return false, "kubeconfig missing"
	}
	cfg, err := loadKubeconfig(path)
	if err != nil {
		return false, "kubeconfig unreadable: " + err.Error()
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		return false, err.Error()
	}
	// Loads the certificate files into the config's data fields.
	if _, err := transport.TLSConfigFor(tc); err != nil {
		return false, "kubeconfig credentials unreadable: " + err.Error()
	}
	certs, err := certutil.ParseCertsPEM(tc.TLS.CertData)
	if err != nil || len(certs) == 0 {
		return false, "kubeconfig has no client certificate"
	}
	for _, c := range certs {
		if time.Now().After(c.NotAfter) {
			return false, fmt.Sprintf("client certificate expired at %s", c.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return true, ""
}

func loadKubeconfig(path string) (*rest.Config, error) {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// writeKubeconfig writes a kubeconfig for the bootstrap's server and CA
// with the certificate pair at pemPath.
func writeKubeconfig(bcfg *rest.Config, path, pemPath string) error {
	cluster := &clientcmdapi.Cluster{Server: bcfg.Host, InsecureSkipTLSVerify: bcfg.Insecure, TLSServerName: bcfg.ServerName}
	if bcfg.CAFile != "" {
		cluster.CertificateAuthority = bcfg.CAFile
	} else {
		cluster.CertificateAuthorityData = bcfg.CAData
	}
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"default-cluster": cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pemPath, ClientKey: pemPath}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(kc, path)
}

// newRotatingClient follows upstream's rules for rotation:
//  1. only a kubeconfig: its certificate seeds the store and is rotated
//     out at the first opportunity;
//  2. a bootstrap kubeconfig and no usable kubeconfig: the kubeconfig is
//     written to point at the store, and the first certificate is
//     requested with the bootstrap credentials;
//  3. both, the kubeconfig usable: the bootstrap kubeconfig is not needed
//     at start (an unreadable one is no error).
//
// Whenever the node has no valid certificate (before the first one, or
// once it expired), the bootstrap credentials ask for one, else the
// kubeconfig's own: a restarted upstream kubelet would bootstrap with
// them too.
func newRotatingClient(o ClientOptions) (*Client, error) {
	var userCfg, fallbackCfg *rest.Config
	ok, _ := kubeconfigUsable(o.KubeconfigPath)
	if o.BootstrapKubeconfigPath == "" || ok {
		cfg, err := loadKubeconfig(o.KubeconfigPath)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", o.KubeconfigPath, err)
		}
		userCfg, fallbackCfg = rest.CopyConfig(cfg), cfg
		if o.BootstrapKubeconfigPath != "" {
			if bcfg, err := loadKubeconfig(o.BootstrapKubeconfigPath); err == nil {
				fallbackCfg = bcfg
			}
		}
	} else {
		bcfg, err := loadKubeconfig(o.BootstrapKubeconfigPath)
		if err != nil {
			return nil, fmt.Errorf("--bootstrap-kubeconfig %s: %w", o.BootstrapKubeconfigPath, err)
		}
		fallbackCfg = bcfg
		pem := filepath.Join(o.CertDir, ClientPairName+"-current.pem")
		if err := writeKubeconfig(bcfg, o.KubeconfigPath, pem); err != nil {
			return nil, err
		}
		userCfg = rest.AnonymousClientConfig(bcfg)
		userCfg.CertFile, userCfg.KeyFile = pem, pem
	}
	// The seed pair: the kubeconfig's own certificate, from data or files.
	seedCert, seedKey := userCfg.CertData, userCfg.KeyData
	if len(seedCert) == 0 && userCfg.CertFile != "" {
		if b, err := os.ReadFile(userCfg.CertFile); err == nil {
			seedCert = b
		}
		if b, err := os.ReadFile(userCfg.KeyFile); err == nil {
			seedKey = b
		}
	}
	if !validPair(seedCert, seedKey) {
		// An expired seed would be presented, and used to ask for its
		// successor, in vain: start from the bootstrap credentials.
		seedCert, seedKey = nil, nil
	}
	store, err := certificate.NewFileStore(ClientPairName, o.CertDir, o.CertDir, userCfg.CertFile, userCfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("client certificate store in %s: %w", o.CertDir, err)
	}
	c := &Client{
		dialer:      connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext),
		checkPeriod: time.Second,
		exitAfter:   5 * time.Minute,
	}
	var csrCfg *rest.Config
	c.manager, err = certificate.NewManager(&certificate.Config{
		// The current certificate asks for its successor (selfnodeclient),
		// the fallback credentials for a first one. The choice is made per
		// request, not per rotation: a rotation that straddles the expiry
		// (its CSR created just before, signed or read after, as when the
		// API server was away) goes on with the fallback instead of
		// waiting out client-go's 15 minutes as an anonymous user.
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) {
			return kubernetes.NewForConfig(csrCfg)
		},
		Template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName: "system:node:" + o.NodeName, Organization: []string{"system:nodes"},
		}},
		SignerName:              certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:               certificate.DefaultKubeletClientGetUsages,
		BootstrapCertificatePEM: seedCert,
		BootstrapKeyPEM:         seedKey,
		CertificateStore:        store,
		Name:                    ClientPairName,
	})
	if err != nil {
		return nil, fmt.Errorf("client certificate manager: %w", err)
	}
	rotating, err := c.rotatingConfig(userCfg)
	if err != nil {
		return nil, err
	}
	csrCfg = c.csrConfig(rotating, fallbackCfg)
	c.Config = rotating
	return c, nil
}

// csrConfig is the configuration of the client that requests and waits
// for certificates: each request goes with the manager's current
// certificate while it is valid (the rotating configuration), and with the
// fallback configuration's credentials otherwise. The fallback's transport
// is made at its first use (its certificate files, if any, may not exist
// before).
func (c *Client) csrConfig(rotating, fallback *rest.Config) *rest.Config {
	out := rest.CopyConfig(rotating)
	var (
		mu sync.Mutex
		fb http.RoundTripper
	)
	out.Transport = credentialSwitch{
		current: rotating.Transport,
		valid:   func() bool { return c.manager.Current() != nil },
		fallback: func() (http.RoundTripper, error) {
			mu.Lock()
			defer mu.Unlock()
			if fb != nil {
				return fb, nil
			}
			t, err := rest.TransportFor(fallback)
			if err != nil {
				return nil, fmt.Errorf("the bootstrap credentials' transport: %w", err)
			}
			fb = t
			return fb, nil
		},
	}
	return out
}

// credentialSwitch sends each request through current while valid() holds
// (a client certificate that has not expired) and through fallback
// otherwise.
type credentialSwitch struct {
	current  http.RoundTripper
	fallback func() (http.RoundTripper, error)
	valid    func() bool
}

func (s credentialSwitch) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.valid() {
		return s.current.RoundTrip(r)
	}
	fb, err := s.fallback()
	if err != nil {
		return nil, err
	}
	return fb.RoundTrip(r)
}

// rotatingConfig is cfg with a transport that presents the manager's
// current certificate and dials through the connection tracker.
func (c *Client) rotatingConfig(cfg *rest.Config) (*rest.Config, error) {
	// Without the credentials: the certificate files may not exist yet
	// (bootstrap), and the manager supplies the certificate anyway.
	out := rest.AnonymousClientConfig(cfg)
	tlsCfg, err := rest.TLSConfigFor(out)
	if err != nil {
		return nil, fmt.Errorf("TLS for the API client: %w", err)
	}
	if tlsCfg == nil {
		tlsCfg = &tls.Config{}
	}
	tlsCfg.Certificates = nil
	m := c.manager
	tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if cur := m.Current(); cur != nil {
			return cur, nil
		}
		// No certificate yet: connect without one (requests get 401).
		return &tls.Certificate{}, nil
	}
	out.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsCfg,
		MaxIdleConnsPerHost: 25,
		DialContext:         c.dialer.DialContext,
	})
	// The transport carries all TLS settings now.
	out.TLSClientConfig = rest.TLSClientConfig{}
	return out, nil
}

// Run starts the rotation (a no-op without it) and, whenever the manager
// switches to a new certificate, closes every connection of the API
// clients: their next requests (and the informers' re-lists and
// re-watches) present the new certificate. It returns nil when ctx ends,
// or an error when no valid certificate has been available for five
// minutes while the API server answers — the kubelet cannot go on, and
// exits as upstream does.
func (c *Client) Run(ctx context.Context) error {
	if c.manager == nil {
		<-ctx.Done()
		return nil
	}
	log := klog.FromContext(ctx)
	c.manager.Start()
	defer c.manager.Stop()
	// The first certificate seen closes whatever was connected before
	// (connections made without a certificate, or before a change that
	// happened while starting).
	var last *tls.Certificate
	lastValid := time.Now()
	t := time.NewTicker(c.checkPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur := c.manager.Current()
		now := time.Now()
		if cur != nil && cur.Leaf != nil && now.Before(cur.Leaf.NotAfter) {
			lastValid = now
		} else if now.Sub(lastValid) > c.exitAfter && c.manager.ServerHealthy() {
			return fmt.Errorf("no valid client certificate for %v while the API server answers", c.exitAfter)
		}
		if cur == nil || cur == last {
			continue
		}
		if last == nil {
			log.Info("Client certificate available", "notAfter", cur.Leaf.NotAfter.UTC().Format(time.RFC3339))
		} else {
			log.Info("Client certificate rotated; closing API connections so that they use it", "notAfter", cur.Leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		last = cur
		c.dialer.CloseAll()
	}
}
