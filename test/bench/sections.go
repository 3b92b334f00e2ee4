package main

import "strings"

// The report's sections written by one mode only (churn, scale, logs) sit between
// markers: the mode that writes one replaces only it, and the others keep it
// when they rewrite the rest of the file.

// keptSections are the sections `make bench` keeps, in order.
var keptSections = []string{"churn", "scale", "logs"}

func sectionMarkers(name string) (begin, end string) {
	return "<!-- " + name + ":begin -->", "<!-- " + name + ":end -->"
}

// withSection puts section (markers included) into doc in place of its old
// section of that name, or at its end.
func withSection(doc, name, section string) string {
	begin, end := sectionMarkers(name)
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i >= 0 && j > i {
		return doc[:i] + strings.TrimRight(section, "\n") + doc[j+len(end):]
	}
	return strings.TrimRight(doc, "\n") + "\n\n" + section
}

// sectionOf returns the named section of doc, markers included ("" when
// none).
func sectionOf(doc, name string) string {
	begin, end := sectionMarkers(name)
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return ""
	}
	return doc[i:j+len(end)] + "\n"
}

// keepSections copies the kept sections of old into doc.
func keepSections(doc, old string) string {
	for _, name := range keptSections {
		if sec := sectionOf(old, name); sec != "" {
			doc = withSection(doc, name, sec)
		}
	}
	return doc
}
