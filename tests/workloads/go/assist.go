// A Go program whose goroutines allocate so much, against a live heap of pointers so
// large, that the garbage collector makes them assist its marking: their allocations run
// the collector's work on the thread's g0 stack under runtime.systemstack, for the
// goroutine whose known chain is goexit -> main.main.func1 -> worker -> churn -> grow.
// The Makefile builds it as go_frames is built: go_assist stripped, go_assist_debug as
// go build leaves it, go_assist_pie stripped and position-independent.
//
// Usage: go_assist ROUNDS
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
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
func worker(rounds int) int {
	n := 0
	for r := 0; r < rounds; r++ {
		if churn(4096) != nil {
			n++
		}
	}
	return n
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go_assist ROUNDS")
		os.Exit(2)
	}
	rounds, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_assist: ROUNDS must be a number")
		os.Exit(2)
	}
	// the live heap and the goroutines made with the collector off (main allocates nothing
	// after, and assists nothing), then a collection whenever the heap grows by a tenth:
	// the workers assist all the time
	debug.SetGCPercent(-1)
	for i := 0; i < 1<<18; i++ {
		live = append(live, &node{})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	start := make(chan struct{})
	total := 0
	for id := 0; id < 4; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			n := worker(rounds)
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	debug.SetGCPercent(10)
	close(start)
	wg.Wait()
	fmt.Println(total&1, len(live)&1)
}
