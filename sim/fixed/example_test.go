package fixed_test

import (
	"fmt"

	"github.com/tickwire/tickwire/sim/fixed"
)

// A unit walks toward its target at most speed a tick, in integer
// coordinates: the same steps on every peer.
func ExampleLimit() {
	const speed = 24
	x, y := int32(0), int32(0)
	tx, ty := int32(100), int32(-30)
	for x != tx || y != ty {
		dx, dy := fixed.Limit(tx-x, ty-y, speed)
		x, y = x+dx, y+dy
		fmt.Println(x, y)
	}
	// Output:
	// 23 -6
	// 46 -13
	// 69 -20
	// 92 -27
	// 100 -30
}

func ExampleLength() {
	fmt.Println(fixed.Length(-3, 4), fixed.Length(1, 1))
	// Output: 5 1
}
