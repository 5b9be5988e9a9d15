/* The profile tests' workload: three named functions doing a known
 * number of loop iterations each (argv[1..3]); with a 4th argument it
 * first waits for a byte on stdin, so a sampler can attach before it
 * works. Built with -fno-omit-frame-pointer -O1 by the tests. */
#include <stdlib.h>
#include <unistd.h>

volatile unsigned long sink;

__attribute__((noinline)) static void spin(long n) {
    unsigned long x = 0;
    for (long i = 0; i < n; i++)
        x = x * 31 + (unsigned long)i;
    sink += x;
}

__attribute__((noinline)) void work_a(long n) { spin(n); sink += 1; }
__attribute__((noinline)) void work_b(long n) {
    unsigned long x = 7;
    for (long i = 0; i < n; i++)
        x = x * 33 + (unsigned long)i;
    sink += x;
}
__attribute__((noinline)) void extra_work(long n) {
    unsigned long x = 3;
    for (long i = 0; i < n; i++)
        x = x * 37 + (unsigned long)i;
    sink += x;
}

int main(int argc, char **argv) {
    if (argc < 4)
        return 2;
    if (argc > 4) {
        char c;
        if (read(0, &c, 1) != 1)
            return 3;
    }
    work_a(atol(argv[1]));
    work_b(atol(argv[2]));
    extra_work(atol(argv[3]));
    return 0;
}
