// A Go program whose stacks are known: main starts goroutines that run
// worker -> level1 -> level2 -> level3 -> spin, and allocate between rounds so
// that the runtime's garbage collector runs (on the g0 stacks systemstack and
// mcall switch to). The Makefile builds it three times: go_frames stripped of .symtab
// and DWARF (so Go's own .gopclntab is all that describes its code, as in
// Debian's Go packages), go_frames_debug as go build leaves it, and
// go_frames_pie stripped and position-independent.
//
// Usage: go_frames ROUNDS
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

var sink [][]byte

//go:noinline
func spin(n int) int {
	x := n
	for i := 0; i < 4000000; i++ {
		x = x*1103515245 + 12345 + i
	}
	return x
}

//go:noinline
func level3(n int) int { return spin(n) + 3 }

//go:noinline
func level2(n int) int { return level3(n) + 2 }

//go:noinline
func level1(n int) int { return level2(n) + 1 }

//go:noinline
func churn(n int) {
	var keep [][]byte
	for i := 0; i < 200; i++ {
		keep = append(keep, make([]byte, 512+n%64))
	}
	sink = keep
}

//go:noinline
func worker(id, rounds int, out chan<- int) {
	total := 0
	for r := 0; r < rounds; r++ {
		total += level1(id + r)
		churn(r)
	}
	out <- total
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go_frames ROUNDS")
		os.Exit(2)
	}
	rounds, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_frames: ROUNDS must be a number")
		os.Exit(2)
	}
	out := make(chan int)
	var wg sync.WaitGroup
	for id := 0; id < 3; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			worker(id, rounds, out)
		}(id)
	}
	go func() { wg.Wait(); close(out) }()
	sum := 0
	for v := range out {
		sum += v
	}
	fmt.Println(sum & 1)
}
