/* A Java program for tests/t_realprog.sh and bench/b_realprog.sh: HotSpot interprets it,
 * then compiles fib and mix (C1, then C2) into its code cache, where no CFI describes the
 * code and compiled frames keep no frame pointer (the default, -XX:-PreserveFramePointer).
 * Usage: java -cp DIR Work SECONDS. */
public class Work {
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static long mix(long[] a) {
        long s = 0;
        for (int i = 0; i < a.length; i++) {
            a[i] = a[i] * 31 + i;
            s += a[i];
        }
        return s;
    }

    public static void main(String[] args) {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        long[] a = new long[4096];
        long s = 0;
        while (System.nanoTime() < end) {
            s += fib(20);
            s += mix(a);
        }
        System.out.println(s);
    }
}
