package relay

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

var testKey = Key{1, 2, 3, 4, 5, 6, 7, 8}

// testGrant is a grant that binds for an hour from t0.
var t0 = time.Unix(1_800_000_000, 0)

func testGrant(side uint8) Grant {
	return Grant{Alloc: 0x1122334455667788, Side: side, Expires: t0.Add(time.Hour), Budget: 1 << 30}
}

// TestGrantRoundTrip: Open returns what Mint was given (the expiry to the
// second), the token is GrantSize bytes (small enough to ride in any
// datagram), and ReadGrant reads it without the key.
func TestGrantRoundTrip(t *testing.T) {
	for side := range uint8(2) {
		g := testGrant(side)
		g.Expires = g.Expires.Add(700 * time.Millisecond)
		tok, err := Mint(testKey, g)
		if err != nil {
			t.Fatal(err)
		}
		if len(tok) != GrantSize || GrantSize > 100 {
			t.Fatalf("token of %d bytes, GrantSize %d", len(tok), GrantSize)
		}
		got, err := Open(testKey, tok)
		if err != nil {
			t.Fatal(err)
		}
		want := g
		want.Expires = g.Expires.Truncate(time.Second)
		if got != want {
			t.Fatalf("Open = %+v, want %+v", got, want)
		}
		if r, err := ReadGrant(tok); err != nil || r != want {
			t.Fatalf("ReadGrant = %+v, %v", r, err)
		}
	}
}

// TestGrantTamper: changing any bit of a token, or opening it under
// another key, fails the MAC check.
func TestGrantTamper(t *testing.T) {
	tok, err := Mint(testKey, testGrant(SideJoiner))
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(tok) * 8 {
		bad := bytes.Clone(tok)
		bad[i/8] ^= 1 << (i % 8)
		if _, err := Open(testKey, bad); err == nil {
			t.Fatalf("bit %d flipped: Open accepted it", i)
		}
	}
	if _, err := Open(Key{9}, tok); !errors.Is(err, errGrantMAC) {
		t.Fatalf("another key: %v, want bad MAC", err)
	}
	for _, n := range []int{0, GrantSize - 1, GrantSize + 1} {
		if _, err := Open(testKey, make([]byte, n)); err == nil {
			t.Fatalf("a %d-byte token opened", n)
		}
	}
}

// TestMintRefuses: a side beyond 1, a zero budget or no expiry is no
// grant.
func TestMintRefuses(t *testing.T) {
	for _, g := range []Grant{
		{Side: 2, Expires: t0, Budget: 1},
		{Side: 0, Expires: t0, Budget: 0},
		{Side: 0, Budget: 1},
	} {
		if _, err := Mint(testKey, g); err == nil {
			t.Errorf("Mint(%+v) succeeded", g)
		}
	}
}

// TestMintPair: the two grants name one allocation, sides 0 and 1, and
// two pairs name different allocations.
func TestMintPair(t *testing.T) {
	j, h, err := MintPair(testKey, t0, 100)
	if err != nil {
		t.Fatal(err)
	}
	gj, err1 := Open(testKey, j)
	gh, err2 := Open(testKey, h)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if gj.Alloc != gh.Alloc || gj.Side != SideJoiner || gh.Side != SideHost || gj.Budget != 100 || !gj.Expires.Equal(t0) {
		t.Fatalf("pair %+v %+v", gj, gh)
	}
	j2, _, _ := MintPair(testKey, t0, 100)
	if g2, _ := Open(testKey, j2); g2.Alloc == gj.Alloc {
		t.Fatal("two pairs share an allocation id")
	}
}

// FuzzGrant: any token that opens re-mints to itself; ReadGrant never
// panics and agrees with Open where Open succeeds.
func FuzzGrant(f *testing.F) {
	for side := range uint8(2) {
		tok, _ := Mint(testKey, testGrant(side))
		f.Add(tok)
	}
	f.Add(make([]byte, GrantSize))
	f.Fuzz(func(t *testing.T, tok []byte) {
		r, rerr := ReadGrant(tok)
		g, err := Open(testKey, tok)
		if err != nil {
			return
		}
		if rerr != nil || r != g {
			t.Fatalf("Open %+v, ReadGrant %+v %v", g, r, rerr)
		}
		again, err := Mint(testKey, g)
		if err != nil || !bytes.Equal(again, tok) {
			t.Fatalf("re-mint %x %v, want %x", again, err, tok)
		}
	})
}
