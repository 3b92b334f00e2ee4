package main

import (
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	at := time.Date(2026, 11, 28, 7, 5, 9, 123456789, time.UTC)
	for _, tc := range []struct {
		format, want string
		fails        bool
	}{
		{format: "%3t", want: "07:05:09.123"},
		{format: "%t", want: "07:05:09"},
		{format: "%6t", want: "07:05:09.123456"},
		{format: "at %1t 100%%", want: "at 07:05:09.1 100%"},
		{format: "%7t", fails: true},
		{format: "%c", fails: true},
		{format: "%", fails: true},
	} {
		got, err := render(tc.format, at)
		if tc.fails {
			if err == nil {
				t.Errorf("render(%q) = %q, want an error", tc.format, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("render(%q) = %q, %v; want %q", tc.format, got, err, tc.want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		delay  time.Duration
		format string
		fails  bool
	}{
		{args: []string{"-d0", "%3t"}, delay: 0, format: "%3t"},
		{args: []string{"-d", "250", "%t"}, delay: 250 * time.Millisecond, format: "%t"},
		{args: []string{"%t"}, delay: time.Second, format: "%t"},
		{args: []string{"-d-1", "%t"}, delay: 0, format: "%t"},
		{args: []string{"-dx", "%t"}, fails: true},
		{args: []string{"-t", "%t"}, fails: true},
		{args: nil, fails: true},
		{args: []string{"%t", "%t"}, fails: true},
	} {
		delay, format, err := parseArgs(tc.args)
		if tc.fails {
			if err == nil {
				t.Errorf("parseArgs(%q) succeeded, want an error", tc.args)
			}
			continue
		}
		if err != nil || delay != tc.delay || format != tc.format {
			t.Errorf("parseArgs(%q) = %v, %q, %v; want %v, %q", tc.args, delay, format, err, tc.delay, tc.format)
		}
	}
}
