// gopeer measures the Go side of chanflow's side-by-side benchmarks (docs/benchmarks.md). Each
// shape mirrors one in bench/runtime_bench.cc; scripts/bench.py runs this binary under
// GOMAXPROCS=1 and GOMAXPROCS=2 and compares medians.
//
//	gopeer -reps 5 [-only regexp] [-scale 1.0]
//
// Output: one line per shape, "RESULT <key> <unit> <v1> <v2> ...", one value per repetition
// (after one unmeasured warm-up run). Every shape checks its own result and exits non-zero when
// the check fails, so a broken peer can never report a fast number.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	reps  = flag.Int("reps", 5, "measured repetitions per shape (one warm-up run is added)")
	only  = flag.String("only", "", "run only shapes whose key matches this regexp")
	scale = flag.Float64("scale", 1.0, "multiply iteration counts (e.g. 0.2 for a smoke run)")
)

func scaled(n int) int {
	m := int(float64(n) * *scale)
	if m < 1 {
		m = 1
	}
	return m
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "gopeer: "+format+"\n", args...)
	os.Exit(1)
}

func nsPer(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / float64(n) }

// pingPong: one round trip = main sends on an unbuffered channel, the echo goroutine receives and
// answers on a second unbuffered channel.
func pingPong(n int) float64 {
	req, resp := make(chan int), make(chan int)
	go func() {
		for x := range req {
			resp <- x + 1
		}
	}()
	v := 0
	t := time.Now()
	for i := 0; i < n; i++ {
		req <- v
		v = <-resp
	}
	d := time.Since(t)
	close(req)
	if v != n {
		fail("pingpong: got %d want %d", v, n)
	}
	return nsPer(d, n)
}

// osPingPong: pingPong with the pinging side locked to its OS thread (runtime.LockOSThread), as a
// goroutine calling into C or a thread-bound library runs: each blocking receive stops its thread
// and the echo's answer hands it a P again. chanflow's peer is an OS thread blocking on a channel
// (the executor's block 0, a Python thread).
func osPingPong(n int) float64 {
	out := make(chan float64)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		out <- pingPong(n)
	}()
	return <-out
}

// buffered: one producer goroutine streams n ints through chan(capacity) to the main goroutine.
func buffered(n, capacity int) float64 {
	c := make(chan int, capacity)
	t := time.Now()
	go func() {
		for i := 0; i < n; i++ {
			c <- i
		}
		close(c)
	}()
	sum := 0
	for x := range c {
		sum += x
	}
	d := time.Since(t)
	if sum != n*(n-1)/2 {
		fail("buffered: sum %d", sum)
	}
	return nsPer(d, n)
}

// selectUncontended: one goroutine bounces a token between two cap-1 channels through a 2-case
// select (same shape as BenchmarkSelectUncontended, single goroutine).
func selectUncontended(n int) float64 {
	a, b := make(chan int, 1), make(chan int, 1)
	a <- 0
	hitsA := 0
	t := time.Now()
	for i := 0; i < n; i++ {
		select {
		case <-a:
			hitsA++
			b <- 0
		case <-b:
			a <- 0
		}
	}
	d := time.Since(t)
	if hitsA != (n+1)/2 {
		fail("select uncontended: %d hits on a of %d", hitsA, n)
	}
	return nsPer(d, n)
}

// selectDefault: a receive case plus default on an empty channel; default always runs.
func selectDefault(n int) float64 {
	c := make(chan int)
	defaults := 0
	t := time.Now()
	for i := 0; i < n; i++ {
		select {
		case <-c:
		default:
			defaults++
		}
	}
	d := time.Since(t)
	if defaults != n {
		fail("select default: %d defaults of %d", defaults, n)
	}
	return nsPer(d, n)
}

// selectTwoProducers: two producer goroutines each send n/2 values on their own unbuffered
// channel; main receives all n through a 2-case select. ns per received message.
func selectTwoProducers(n int) float64 {
	a, b := make(chan int), make(chan int)
	half := n / 2
	prod := func(c chan int) {
		for i := 0; i < half; i++ {
			c <- 1
		}
		close(c)
	}
	t := time.Now()
	go prod(a)
	go prod(b)
	got, open := 0, 2
	for open > 0 {
		select {
		case v, ok := <-a:
			if !ok {
				a = nil
				open--
			} else {
				got += v
			}
		case v, ok := <-b:
			if !ok {
				b = nil
				open--
			} else {
				got += v
			}
		}
	}
	d := time.Since(t)
	if got != 2*half {
		fail("select 2 producers: got %d want %d", got, 2*half)
	}
	return nsPer(d, 2*half)
}

// spawn: n goroutines each send their index once on one unbuffered channel; main receives all.
func spawn(n int) float64 {
	c := make(chan int)
	t := time.Now()
	for i := 0; i < n; i++ {
		go func(i int) { c <- i }(i)
	}
	sum := 0
	for i := 0; i < n; i++ {
		sum += <-c
	}
	d := time.Since(t)
	if sum != n*(n-1)/2 {
		fail("spawn: sum %d", sum)
	}
	return nsPer(d, n)
}

// daisy: n goroutines in a chain, each forwards one value plus one from its right channel to its
// left. All stages are started and have reached their receive (a WaitGroup, not a sleep) before
// the clock starts; the measured time is one value passing through the whole chain. Returns ms.
func daisy(n int) float64 {
	first := make(chan int)
	left := first
	var ready sync.WaitGroup
	ready.Add(n)
	for i := 0; i < n; i++ {
		right := make(chan int)
		go func(l, r chan int) {
			ready.Done()
			l <- 1 + <-r
		}(left, right)
		left = right
	}
	ready.Wait()
	runtime.Gosched()
	t := time.Now()
	go func(c chan int) { c <- 0 }(left)
	v := <-first
	d := time.Since(t)
	if v != n {
		fail("daisy: got %d want %d", v, n)
	}
	return float64(d.Nanoseconds()) / 1e6
}

func skynetNode(out chan<- int, num, size, div int) {
	if size == 1 {
		out <- num
		return
	}
	sub := make(chan int, div)
	step := size / div
	for i := 0; i < div; i++ {
		go skynetNode(sub, num+i*step, step, div)
	}
	sum := 0
	for i := 0; i < div; i++ {
		sum += <-sub
	}
	out <- sum
}

// skynet: a 10-ary tree of goroutines with `leaves` leaves; each returns its ordinal sum. ms.
func skynet(leaves int) float64 {
	out := make(chan int, 1)
	t := time.Now()
	go skynetNode(out, 0, leaves, 10)
	sum := <-out
	d := time.Since(t)
	if want := leaves * (leaves - 1) / 2; sum != want {
		fail("skynet: sum %d want %d", sum, want)
	}
	return float64(d.Nanoseconds()) / 1e6
}

func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		fail("read /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		fail("parse statm: %v", err)
	}
	return pages * int64(os.Getpagesize())
}

// parkedMemory: resident bytes per goroutine while n goroutines are parked on a receive.
func parkedMemory(n int) float64 {
	runtime.GC()
	before := residentBytes()
	gate := make(chan struct{})
	var started, finished sync.WaitGroup
	started.Add(n)
	finished.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			started.Done()
			<-gate
			finished.Done()
		}()
	}
	started.Wait()
	after := residentBytes()
	close(gate)
	finished.Wait()
	return float64(after-before) / float64(n)
}

type shape struct {
	key, unit string
	run       func() float64
	// fresh shapes measure process-wide state (resident memory): they run once, without a
	// warm-up, and only when -only selects them, so the caller starts one process per sample.
	fresh bool
}

func main() {
	flag.Parse()
	var filter *regexp.Regexp
	if *only != "" {
		filter = regexp.MustCompile(*only)
	}
	shapes := []shape{
		{"pingpong", "ns", func() float64 { return pingPong(scaled(1_000_000)) }, false},
		{"ospingpong", "ns", func() float64 { return osPingPong(scaled(100_000)) }, false},
		{"buffered128", "ns", func() float64 { return buffered(scaled(10_000_000), 128) }, false},
		{"select2_uncontended", "ns", func() float64 { return selectUncontended(scaled(10_000_000)) }, false},
		{"select_default", "ns", func() float64 { return selectDefault(scaled(50_000_000)) }, false},
		{"select2_producers", "ns", func() float64 { return selectTwoProducers(scaled(1_000_000)) }, false},
		{"spawn100k", "ns", func() float64 { return spawn(100_000) }, false},
		{"daisy10k", "ms", func() float64 { return daisy(10_000) }, false},
		{"skynet1m", "ms", func() float64 { return skynet(1_000_000) }, false},
		{"parked_mem100k", "bytes", func() float64 { return parkedMemory(100_000) }, true},
	}
	fmt.Printf("# %s GOMAXPROCS=%d NumCPU=%d\n", runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())
	for _, s := range shapes {
		if filter != nil && !filter.MatchString(s.key) {
			continue
		}
		if s.fresh {
			if filter == nil {
				continue
			}
			fmt.Printf("RESULT %s %s %s\n", s.key, s.unit, strconv.FormatFloat(s.run(), 'g', 6, 64))
			continue
		}
		s.run() // warm-up: grows the goroutine free list and heap like a long-running program
		vals := make([]string, 0, *reps)
		for i := 0; i < *reps; i++ {
			vals = append(vals, strconv.FormatFloat(s.run(), 'g', 6, 64))
		}
		fmt.Printf("RESULT %s %s %s\n", s.key, s.unit, strings.Join(vals, " "))
	}
}
