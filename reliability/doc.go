// Package reliability tracks which packets arrived and carries messages
// that must: per-connection packet acks with RTT, jitter and loss
// estimates, delivered/lost notifications, the reliable ordered channel on
// kcp-go's ARQ core, and unreliable and sequenced channels.
//
// It performs no I/O and reads no clock: callers pass now in and take
// bytes out.
package reliability
