// Package interest decides what each player hears about and in what order:
// relevance (spatial grid, radius, always-relevant sets, custom filters), a
// priority accumulator per player and entity, packing entities into one
// MTU-sized packet budget, re-prioritising what a lost packet carried, and
// per-player bandwidth caps.
//
// It decides which entities go out, not how they are encoded: it asks a
// Sizer (deltacomp's Encoder) what each entity costs. It imports only
// proto and internal/idset (the per-client bookkeeping it shares with
// deltacomp), does no I/O and reads no clock (Schedule takes now).
//
// Per tick, the server fills one World (Begin, Add in id order, End with
// the ring's changed bitset); per player and packet it calls
// Scheduler.Schedule and hands the chosen indices to the encoder. The
// reliability layer's Delivered(seq) and Lost(seq) notifications go to
// the encoder, which records what each packet carried; a lost packet's
// entities go from there to Scheduler.Lost, so that one record per packet
// is kept, not two. Schedule and Lost allocate nothing in steady state.
package interest
