package main

import (
	"reflect"
	"testing"
)

func TestKubeletOrder(t *testing.T) {
	for round, want := range map[int][]string{
		1: {"ours", "upstream"},
		2: {"upstream", "ours"},
		3: {"ours", "upstream"},
		4: {"upstream", "ours"},
	} {
		if got := kubeletOrder(round); !reflect.DeepEqual(got, want) {
			t.Errorf("round %d: %v, want %v", round, got, want)
		}
	}
}
