// A Go program whose goroutines allocate so much, against a live heap of pointers so
// large, that the garbage collector makes them assist its marking: their allocations run
// the collector's work on the thread's g0 stack under runtime.systemstack, for the
// goroutine whose known chain is goexit -> main.main.func1 -> worker -> churn -> grow.
// The Makefile builds it as go_frames is built: go_assist stripped, go_assist_debug as
// go build leaves it, go_assist_pie stripped and position-independent.
//
// Usage: go_assist SECONDS
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

type node struct {
	next  *node
	left  *node
	right *node
	pad   [4]uintptr
}

// live is the heap each cycle marks: a few million pointers kept for the whole run.
var live []*node

//go:noinline
func grow(prev *node) *node {
	return &node{next: prev, left: prev}
}

//go:noinline
func churn(rounds int) *node {
	var head *node
	for i := 0; i < rounds; i++ {
		head = grow(head)
		if i%64 == 0 {
			head = nil
		}
	}
	return head
}

//go:noinline
func worker(until time.Time) int {
	n := 0
	for time.Now().Before(until) {
		if churn(4096) != nil {
			n++
		}
	}
	return n
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go_assist SECONDS")
		os.Exit(2)
	}
	seconds, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_assist: SECONDS must be a number")
		os.Exit(2)
	}
	// a collection whenever the heap grows by a tenth: assists all the time
	debug.SetGCPercent(10)
	for i := 0; i < 1<<18; i++ {
		live = append(live, &node{})
	}
	until := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var wg sync.WaitGroup
	total := 0
	var mu sync.Mutex
	for id := 0; id < 4; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := worker(until)
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Println(total&1, len(live)&1)
}
