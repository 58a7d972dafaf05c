// Package e2e holds the end-to-end tests of the real binaries: it builds
// tickwire-server, tickwire-bot and tickwire-netem, starts them on
// loopback and checks what they report and what went on the wire (the
// loss suite, the live capture test, and the captures decrypted with a
// key log). It has no code of its own.
package e2e
