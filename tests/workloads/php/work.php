<?php
// PHP's tracing JIT, for tests/t_realprog.sh and bench/b_realprog.sh: a recursive function
// called over and over for SECONDS of wall time (argv[1], default 2.5), so that the JIT
// compiles it to traces. opcache compiles files only: code given with -r is interpreted.
function fib($n)
{
	return $n < 2 ? $n : fib($n - 1) + fib($n - 2);
}

$end = microtime(true) + (float)($argv[1] ?? 2.5);
$sum = 0;
while (microtime(true) < $end) {
	$sum += fib(20);
}
echo $sum, "\n";
