// Command nmeter stands in for busybox's nmeter applet in the locally built
// busybox test image (hack/e2e-images.sh). Upstream's image is Docker's
// busybox, whose nmeter the node e2e suite's container lifecycle specs call
// for a millisecond clock:
//
//	date -u +%FT$(nmeter -d0 '%3t' | head -n1)Z
//
// Debian's busybox, the base of the local image, is built without nmeter and
// its date has no %N. This covers only what such a clock needs: -d MSEC (the
// delay between lines, default 1000) and the format directives %[N]t (the
// time of day as HH:MM:SS with N decimals, 0-6) and %%. Any other directive
// is refused with a message naming it, rather than printing something else.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	delay, format, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "nmeter: %v\n", err)
		os.Exit(1)
	}
	if _, err := render(format, time.Time{}); err != nil {
		fmt.Fprintf(os.Stderr, "nmeter: %v\n", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		line, _ := render(format, time.Now())
		out.WriteString(line + "\n")
		if err := out.Flush(); err != nil {
			os.Exit(1) // the reader went away (head -n1)
		}
		if delay > 0 {
			time.Sleep(delay)
		}
	}
}

// parseArgs reads nmeter's command line: [-d MSEC] FORMAT.
func parseArgs(args []string) (time.Duration, string, error) {
	delay := time.Second
	var format string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-d" && i+1 < len(args):
			i++
			a = "-d" + args[i]
			fallthrough
		case strings.HasPrefix(a, "-d"):
			ms, err := strconv.Atoi(a[2:])
			if err != nil || ms < -1 {
				return 0, "", fmt.Errorf("bad delay %q", a[2:])
			}
			delay = time.Duration(max(ms, 0)) * time.Millisecond
		case strings.HasPrefix(a, "-") && len(a) > 1:
			return 0, "", fmt.Errorf("option %s is not supported by this stand-in (only -d)", a)
		case format == "":
			format = a
		default:
			return 0, "", fmt.Errorf("unexpected argument %q", a)
		}
	}
	if format == "" {
		return 0, "", fmt.Errorf("usage: nmeter [-d MSEC] FORMAT")
	}
	return delay, format, nil
}

// render expands FORMAT at time t.
func render(format string, t time.Time) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		prec := 0
		if i < len(format) && format[i] >= '0' && format[i] <= '9' {
			prec = int(format[i] - '0')
			i++
		}
		if i >= len(format) {
			return "", fmt.Errorf("format %q ends inside a directive", format)
		}
		switch format[i] {
		case '%':
			b.WriteByte('%')
		case 't':
			if prec > 6 {
				return "", fmt.Errorf("%%%dt: at most 6 decimals", prec)
			}
			fmt.Fprintf(&b, "%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second())
			if prec > 0 {
				frac := t.Nanosecond()
				for range 9 - prec {
					frac /= 10
				}
				fmt.Fprintf(&b, ".%0*d", prec, frac)
			}
		default:
			return "", fmt.Errorf("directive %%%c is not supported by this stand-in (only %%t and %%%%)", format[i])
		}
	}
	return b.String(), nil
}
