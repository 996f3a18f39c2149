/* A Java program for tests/t_realprog.sh, run with -Xint: HotSpot's template interpreter
 * runs every method, in frames it lays out itself, with no CFI; the return addresses of
 * its calls into interpreted methods follow no call instruction. The leaf runs under
 * exactly five interpreted frames: main -> a -> b -> c -> leaf.
 * Usage: java -Xint -cp DIR Interp SECONDS. */
public class Interp {
    static long leaf(long n) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s += i * i % 7;
        return s;
    }

    static long c(long n) {
        return leaf(n) + 1;
    }

    static long b(long n) {
        return c(n) + 1;
    }

    static long a(long n) {
        return b(n) + 1;
    }

    public static void main(String[] args) {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        long s = 0;
        while (System.nanoTime() < end)
            s += a(20000);
        System.out.println(s);
    }
}
