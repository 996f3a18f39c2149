// Mono's JIT, for tests/t_realprog.sh and bench/b_realprog.sh: a recursive method called
// over and over for SECONDS of wall time (args[0], default 2.5). Mono compiles it to code
// that keeps no frame pointer, under JIT code that does (Main, the runtime's invoke
// wrapper): a stack through it has three JIT frames or more.
using System;

class Work
{
	static int Fib(int n)
	{
		return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
	}

	static void Main(string[] args)
	{
		double seconds = args.Length > 0 ? double.Parse(args[0]) : 2.5;
		DateTime end = DateTime.Now.AddSeconds(seconds);
		long sum = 0;

		while (DateTime.Now < end)
			sum += Fib(20);
		Console.WriteLine(sum);
	}
}
