// Package kubeletconfig turns the kubelet's command line and its
// KubeletConfiguration file (kubelet.config.k8s.io/v1beta1) into the
// validated Settings the kubelet core starts from.
//
// The order of operations is the contract, and it mirrors the upstream
// kubelet so that a file and flags that work there work here:
//
//  1. The file named by --config is decoded as the upstream kubelet v1.37
//     decodes it (DecodeConfig / LoadConfigFile): apiVersion and kind must
//     be kubelet.config.k8s.io/v1beta1 KubeletConfiguration; decoding is
//     strict first, and when it fails only on unknown or duplicated
//     fields, lenient, with a warning naming each such field and the
//     file. Relative paths in the file are resolved against the file's
//     folder. Then the drop-ins of --config-dir are merged (MergeDropIns).
//  2. Upstream v1beta1 defaults are applied (SetDefaults). Without a file,
//     the configuration is the defaulted empty object.
//  3. Flags the user set explicitly override the matching fields
//     (Options.Apply); flags left at their default never touch the file's
//     values.
//  4. The result is validated (Validate), every error collected, each
//     naming the field and the reason.
//  5. Fields of the upstream schema that this kubelet does not implement
//     yet (anything outside ImplementedFields) and that the file sets to a
//     non-default value are reported as warnings (UnimplementedFieldWarnings):
//     accepted, never silently dropped, never a reason to refuse the file.
//
// NewSettings(args) runs all of that for a command line; cmd/kubelet uses
// Options directly so it can bind the flags to its cobra command.
//
// Everything here is pure apart from reading the config file and, when
// --hostname-override is absent, asking the OS for the hostname.
package kubeletconfig
