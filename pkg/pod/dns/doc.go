// Package dns computes what a pod's containers see of names: the resolver
// configuration (resolv.conf) by dnsPolicy and dnsConfig, the pod's
// hostname and domain (hostname, subdomain, setHostnameAsFQDN), and the
// kubelet-managed /etc/hosts, with the upstream kubelet's rules and limits.
//
// Everything here is a pure function of the pod and the kubelet's
// settings; reading the host's resolv.conf and /etc/hosts and writing the
// pod's hosts file happen at the edges (ReadResolvConf, WriteHostsFile).
package dns
