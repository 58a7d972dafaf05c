package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCert writes a self-signed certificate for 127.0.0.1 and its key
// to PEM files and returns their paths and a pool that trusts it.
func testCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "tickwire test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile, pool
}

// TestTLS: with -tls-cert and -tls-key both listeners answer HTTPS with
// the certificate (the lobby and the token endpoint included) and refuse
// plain HTTP.
func TestTLS(t *testing.T) {
	certFile, keyFile, pool := testCert(t)
	s := startServer(t, nil, "-tls-cert", certFile, "-tls-key", keyFile, "-dev-join")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, u := range []string{"https://" + s.http.String() + "/", "https://" + s.http.String() + "/healthz", "https://" + s.admin.String() + "/metrics"} {
		res, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.TLS == nil {
			t.Errorf("GET %s: HTTP %d, TLS %v", u, res.StatusCode, res.TLS != nil)
		}
	}
	res, err := c.Post("https://"+s.http.String()+"/api/join", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"token"`) {
		t.Errorf("POST /api/join over TLS: HTTP %d %s", res.StatusCode, b)
	}
	if code := status(t, "GET", "http://"+s.http.String()+"/healthz"); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the HTTPS listener: HTTP %d, want 400", code)
	}
}

func TestTLSFlags(t *testing.T) {
	certFile, keyFile, _ := testCert(t)
	otherCert, _, _ := testCert(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-tls-cert", certFile}, "-tls-cert and -tls-key go together"},
		{[]string{"-tls-key", keyFile}, "-tls-cert and -tls-key go together"},
		{[]string{"-tls-cert", certFile + ".missing", "-tls-key", keyFile}, "cert.pem.missing"},
		{[]string{"-tls-cert", otherCert, "-tls-key", keyFile}, "private key does not match public key"},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	if o, err := parseFlags([]string{"-tls-cert", certFile, "-tls-key", keyFile}, io.Discard); err != nil || o.tls == nil {
		t.Errorf("good pair: %v", err)
	}
	var out strings.Builder
	if code := run(t.Context(), []string{"-tls-cert", certFile}, &out, nil); code != 2 || !strings.Contains(out.String(), "-tls-key") {
		t.Errorf("-tls-cert alone: exit %d, %q", code, out.String())
	}
}
