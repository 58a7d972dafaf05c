// Package e2e holds the end-to-end tests of the real binaries: it builds
// tickwire-server, tickwire-bot and tickwire-netem, starts them on
// loopback and checks what they report and what went on the wire (the
// loss suite, the live capture test, and the captures decrypted with a
// key log). It has no code of its own.
//
// Tests that run a few light processes and mostly wait on real time (the
// host migration, hiccup and loss suite tests) call t.Parallel, so they run side by
// side once the others are done (test.sh gives -parallel 3); the tests
// whose processes need the cores (the browser, the swarms, the loss
// suite) run alone. None asserts a timing that a loaded machine cannot
// keep: those are asserted in virtual time, and logged here.
package e2e
