// Package scenario generates replicated-world workloads for tests and
// benchmarks: sequences of deltacomp.Snapshot (with entity positions and
// kinds for interest) from
//
//   - cubes-ode: the real recording of the cube demo behind Gaffer On
//     Games' "Snapshot Compression" (901 cubes, 3600 frames at 60 Hz), in
//     testdata/cubes-ode-3600.bin.zst (testdata/README.md says where it
//     comes from);
//   - cubes: a generator with the same quantisation for sizes and motion
//     the recording does not cover;
//   - arena: moving players, projectiles that spawn and die, idle NPCs.
//
// The cube record layout (CubeSchema) is the reference example of laying
// out a record for XOR+RLE deltas.
package scenario
