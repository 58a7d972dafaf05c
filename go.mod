module github.com/tickwire/tickwire

go 1.26.8

require (
	github.com/klauspost/compress v1.20.3
	github.com/pierrec/lz4/v4 v4.1.33
	golang.org/x/net v0.62.0 // indirect
)
