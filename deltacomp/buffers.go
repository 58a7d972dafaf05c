package deltacomp

// resizeBytes returns b with length n, reusing its storage when it is large
// enough; the contents are not cleared.
func resizeBytes(b []byte, n int) []byte {
	if cap(b) < n {
		b = make([]byte, n, n+n/4)
	}
	return b[:n]
}
