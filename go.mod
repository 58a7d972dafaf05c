module github.com/tickwire/tickwire

go 1.26.8

require (
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.49.0
)
