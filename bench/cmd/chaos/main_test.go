package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestParse: the defaults are the documented run (60 minutes, 16 rooms
// of 4, a kill every 20 s through "delay 40ms 10ms loss 2%"), and every
// bad flag is refused with a message that names it.
func TestParse(t *testing.T) {
	o, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.duration != time.Hour || o.rooms != 16 || o.size != 4 || o.killEvery != 20*time.Second || o.doubleEvery != 5 ||
		o.stall != 3*time.Second || o.spec != "delay 40ms 10ms loss 2%" {
		t.Fatalf("defaults: %+v", o)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-rooms", "0"}, "-rooms"},
		{[]string{"-rooms", "65"}, "-rooms"},
		{[]string{"-room-size", "2"}, "-room-size"},
		{[]string{"-kill-every", "10ms"}, "-kill-every"},
		{[]string{"-duration", "30s"}, "-duration"},
		{[]string{"-stall", "0s"}, "-stall"},
		{[]string{"-double-every", "-1"}, "-double-every"},
		{[]string{"-spec", "delay fast"}, "-spec"},
		{[]string{"-bin", "/nonexistent"}, "-bin"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		if _, err := parse(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}
