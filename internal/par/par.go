// Package par runs independent pieces of work on all cores. kgen's stages
// are per kernel and per file, so the only parallelism it needs is "do these
// n things, keep results by index, report errors in order".
package par

import (
	"runtime"
	"sync"
)

// Do calls f(0..n-1) on up to GOMAXPROCS goroutines (more for blocking
// work; see Workers) and returns the error of the lowest index that failed,
// so the outcome does not depend on scheduling.
func Do(n, workers int, f func(i int) error) error {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers && w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// IOWorkers is the worker count for work bound by system calls (reading and
// writing many small files), which overlap beyond the core count.
func IOWorkers() int { return 4 * runtime.GOMAXPROCS(0) }
