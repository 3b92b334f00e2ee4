package url

import (
	"errors"
	neturl "net/url"
	"strings"
)

// Redact returns the static pod URL as logs and events may show it: the
// scheme, host and path, with any user information and query replaced by
// "REDACTED" and the fragment dropped. A staticPodURL often carries a
// token or a password in one of those, and Node events are readable by
// anyone who may list events.
func Redact(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	if u.Opaque != "" {
		return u.Scheme + ":REDACTED"
	}
	out := &neturl.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	if u.User != nil {
		out.User = neturl.User("REDACTED")
	}
	if u.RawQuery != "" || u.ForceQuery {
		out.RawQuery = "REDACTED"
	}
	return out.String()
}

// redactErr is err with every URL it carries (net/http's *url.Error, and
// the configured URL anywhere in the message) redacted.
func redactErr(err error, raw string) error {
	if err == nil {
		return nil
	}
	var ue *neturl.Error
	if errors.As(err, &ue) {
		ue.URL = Redact(ue.URL)
	}
	msg := err.Error()
	if raw != "" {
		msg = strings.ReplaceAll(msg, raw, Redact(raw))
	}
	if u, perr := neturl.Parse(raw); perr == nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "REDACTED")
		}
		if u.RawQuery != "" {
			msg = strings.ReplaceAll(msg, u.RawQuery, "REDACTED")
		}
	}
	return errors.New(msg)
}
