// Command netem-probe measures what a network path does to datagrams:
// run it with -echo in one place and with -send in another, and it
// reports loss, duplicates, reordering and round-trip times. Used by
// scripts/netem-tc.sh to compare kernel netem with tickwire-netem.
//
//	netem-probe -echo :9000
//	netem-probe -send 10.199.0.2:9000 -n 2000 -interval 1ms
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"time"
)

func main() {
	echo := flag.String("echo", "", "answer datagrams on this address")
	send := flag.String("send", "", "send probes to this echo address")
	n := flag.Int("n", 1000, "probes to send")
	interval := flag.Duration("interval", time.Millisecond, "time between probes")
	size := flag.Int("size", 100, "probe size in bytes (at least 12)")
	wait := flag.Duration("wait", 2*time.Second, "how long to wait for stragglers after the last probe")
	flag.Parse()
	switch {
	case *echo != "":
		err := serve(*echo) // returns only on failure
		fmt.Fprintln(os.Stderr, "netem-probe:", err)
		os.Exit(1)
	case *send != "" && *size >= 12 && *n > 0:
		if err := probe(*send, *n, *interval, *size, *wait); err != nil {
			fmt.Fprintln(os.Stderr, "netem-probe:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "netem-probe: need -echo ADDR, or -send ADDR with -n > 0 and -size >= 12")
		os.Exit(2)
	}
}

// serve echoes datagrams until the socket fails.
func serve(addr string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening on %v\n", pc.LocalAddr())
	buf := make([]byte, 65536)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		pc.WriteTo(buf[:n], from)
	}
}

func probe(addr string, n int, interval time.Duration, size int, wait time.Duration) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	start := time.Now()
	go func() {
		buf := make([]byte, size)
		for i := range n {
			binary.BigEndian.PutUint32(buf, uint32(i))
			binary.BigEndian.PutUint64(buf[4:], uint64(time.Since(start)))
			c.Write(buf)
			time.Sleep(interval)
		}
	}()
	seen := make([]int, n)
	var rtts []time.Duration
	received, reordered, highest := 0, 0, -1
	buf := make([]byte, 65536)
	deadline := start.Add(time.Duration(n)*interval + wait)
	for {
		c.SetReadDeadline(deadline)
		k, err := c.Read(buf)
		if err != nil {
			break
		}
		if k < 12 {
			continue
		}
		i := int(binary.BigEndian.Uint32(buf))
		if i >= n {
			continue
		}
		received++
		seen[i]++
		if seen[i] > 1 {
			continue
		}
		if i < highest {
			reordered++
		}
		highest = max(highest, i)
		rtts = append(rtts, time.Since(start)-time.Duration(binary.BigEndian.Uint64(buf[4:])))
	}
	unique, dups := 0, 0
	for _, s := range seen {
		if s > 0 {
			unique++
			dups += s - 1
		}
	}
	slices.Sort(rtts)
	var mean time.Duration
	for _, r := range rtts {
		mean += r
	}
	p := func(q float64) time.Duration {
		if len(rtts) == 0 {
			return 0
		}
		return rtts[min(len(rtts)-1, int(q*float64(len(rtts))))]
	}
	if len(rtts) > 0 {
		mean /= time.Duration(len(rtts))
	}
	fmt.Printf("sent=%d received=%d lost=%.2f%% duplicates=%d reordered=%.2f%% rtt mean=%v p50=%v p99=%v\n",
		n, received, 100*float64(n-unique)/float64(n), dups, 100*float64(reordered)/float64(max(unique, 1)),
		mean.Round(time.Microsecond), p(0.5).Round(time.Microsecond), p(0.99).Round(time.Microsecond))
	return nil
}
