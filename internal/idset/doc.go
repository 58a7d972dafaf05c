// Package idset holds the bookkeeping that deltacomp's Encoder and
// interest's Scheduler both keep per client over entities named by sorted
// proto.NetworkID sets: bitsets over a set's entities (Bit, SetBit,
// OrBits...) and which ids each in-flight packet carried (Log).
//
// It sits under both packages and imports only proto. Nothing here
// allocates once its buffers have grown to the working size.
package idset
