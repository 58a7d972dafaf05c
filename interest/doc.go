// Package interest decides what each player hears about and in what order:
// relevance (spatial grid, radius, always-relevant sets, custom filters), a
// priority accumulator per player and entity, packing entities into one
// MTU-sized packet budget, re-prioritising what a lost packet carried, and
// per-player bandwidth caps.
//
// It decides which entities go out, not how they are encoded.
package interest
