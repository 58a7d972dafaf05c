// Package netem makes networks bad on purpose, the way Linux's netem
// qdisc does, without the kernel module: a net.PacketConn wrapper and a
// UDP proxy that delay, jitter, lose (randomly or in Gilbert-Elliott
// bursts), duplicate, reorder, corrupt and rate-limit datagrams, per
// direction, seeded and deterministic.
//
//	spec, err := netem.Parse("delay 50ms 10ms distribution normal loss 5% duplicate 1%")
//	c := netem.Wrap(pc, netem.Config{Egress: spec, Seed: 1})   // any net.PacketConn
//	bc := udp.FromPacketConn(c)                                 // tickwire's BatchConn
//
//	p, err := netem.ListenProxy(":7000", "127.0.0.1:7777", netem.ProxyConfig{Up: up, Down: down})
//
// # Model
//
// Impairment is the queueing discipline alone, a state machine that takes
// the time as an argument; Conn drives one per direction with Go timers
// (so it runs in virtual time under testing/synctest) and Proxy puts a
// Conn on its listening side. The enqueue path follows sch_netem.c:
//
//   - duplicate, then loss (random with netem's correlated get_crandom,
//     or the Gilbert-Elliott state machine), the copy re-enqueued first
//     with duplication off, then corruption, then the limit;
//   - every gap-th datagram is, with the reorder probability, sent at
//     once ahead of the queue; the rest are delayed by tabledist: uniform
//     over [delay-jitter, delay+jitter), or the normal, pareto or
//     paretonormal table (rebuilt as iproute2 builds its .dist files)
//     scaled by the jitter, so jitter reorders as in netem;
//   - with a rate, a datagram's delay counts from the last queued
//     datagram's departure and adds its serialisation time
//     (len+overhead, in cells if given, over the rate).
//
// Simplifications, all documented on Spec and Parse: lengths are UDP
// payloads (netem counts the whole frame: add the header bytes as the
// rate's packet overhead to match), corruption flips a bit of the
// payload only and the datagram is still delivered (the kernel may hit a
// header, and the receiver's UDP checksum then drops it), times need a
// unit, the 4-state loss model, ecn and slot are not implemented.
package netem
