// Package addrlimit holds the per-address limits of tickwire's public
// endpoints, what one client address may hold at once and how fast it
// may act:
//
//   - Key: what the limits count by, an IPv4 address or the /64 of an
//     IPv6 one (a host usually has the whole /64); an IPv4-mapped IPv6
//     address counts as its IPv4 address;
//   - Counts: a count per key of what it holds (connections, sockets,
//     rooms), refused at a maximum;
//   - Buckets: a token bucket per key (golang.org/x/time/rate) for how
//     fast it acts, which says how long to wait when it is empty.
//
// Its memory is bounded whatever a sender does with its addresses. A
// Counts keeps a key only while it holds something, so it is no larger
// than what its user lets be held at once, and each user caps that in
// all. A Buckets must keep a key whose bucket is not full, and anyone
// makes one by asking once from a new address. So it forgets the keys
// whose buckets have refilled each time it has doubled, and it keeps at
// most the number of keys it was made with: at that cap it forgets the
// fullest buckets, down to three quarters of the cap. Those give their
// keys back the fewest tokens. A bucket that a key has emptied goes
// last; to push it out, a sender must empty as many others first,
// spending their tokens. The work of forgetting is proportional to the
// keys made since the last time.
//
// Nothing here reads the clock: Buckets.Take is handed the time, so
// tests run in virtual time. Both types are safe for concurrent use.
//
// Users: package lobby (its create, join and chat buckets, and the rooms
// and sockets one address holds) and tickwire-server (the connections
// one address holds on each listener, and the buckets of POST /api/join
// and POST /play/spectate).
package addrlimit
