// Package idset holds the bookkeeping that deltacomp's Encoder and
// interest's Scheduler both keep per client over entities named by sorted
// proto.NetworkID sets (layouts):
//
//   - Remap: how one layout became the next, built once per change by the
//     layout's owner (deltacomp's Ring, interest's World), so that each
//     client's bitsets over the entities shift with ShiftBits (or
//     MoveBits) instead of merging ids again;
//   - History: the owner's layout numbers, its last HistoryLen remaps, for
//     state a few changes behind, and the entities' slots: numbers they
//     keep while they exist, which per-client arrays are indexed by, so
//     that a change touches only the slots it freed (Remap.Freed);
//   - bitsets over a layout's entities: Bit, SetBit, ClearBit, ResizeBits,
//     OrBits, CopyBits, ClearBits;
//   - Flights: a record per in-flight packet, by sequence number, until
//     it is delivered or lost (each package passes its own cap on the
//     number of packets);
//   - Log: which ids each in-flight packet carried.
//
// It sits under both packages and imports only proto. Nothing here
// allocates once its buffers have grown to the working size.
package idset
