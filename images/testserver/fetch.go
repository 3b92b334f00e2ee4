package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// fetchConfig is the client mode (--fetch): one HTTPS request with the
// server verified against a CA file and a bearer token read from a file,
// as a pod calls the API server with its service account token. Busybox
// wget cannot verify a CA, hence this.
type fetchConfig struct {
	url       string
	caFile    string
	tokenFile string
	postBody  string
	output    string
	timeout   time.Duration
}

// fetch performs the request and writes the response body to out. An
// answer outside 2xx is an error (the body is still written).
func fetch(cfg fetchConfig, out io.Writer) error {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.caFile != "" {
		pem, err := os.ReadFile(cfg.caFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("no certificate in %s", cfg.caFile)
		}
		tlsCfg.RootCAs = pool
	}
	method, body := http.MethodGet, io.Reader(nil)
	if cfg.postBody != "" {
		method, body = http.MethodPost, strings.NewReader(cfg.postBody)
	}
	req, err := http.NewRequest(method, cfg.url, body)
	if err != nil {
		return err
	}
	if cfg.postBody != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if cfg.tokenFile != "" {
		tok, err := os.ReadFile(cfg.tokenFile)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(tok)))
	}
	client := &http.Client{Timeout: cfg.timeout, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(out, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, cfg.url, resp.Status)
	}
	return nil
}

// runFetch is main for --fetch: exit 0 on a 2xx answer.
func runFetch(cfg fetchConfig) int {
	out := io.Writer(os.Stdout)
	if cfg.output != "" {
		f, err := os.Create(cfg.output)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		out = f
	}
	if err := fetch(cfg, out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
