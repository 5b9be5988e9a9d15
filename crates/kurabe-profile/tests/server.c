/* The profile tests' server: a pre-forking HTTP/1.1 keep-alive server,
 * nginx's shape (a master and worker processes, each worker with
 * threads of its own, all started before any load), whose every request
 * does a known number of loop iterations in two named functions:
 * base_work(argv[1]) and extra_work(argv[2]).
 *
 *   server BASE EXTRA     binds 127.0.0.1 port 0, prints the port, serves
 *
 * Two workers of two threads each accept on the shared socket. A worker
 * dies with its master (PR_SET_PDEATHSIG). Built with
 * -fno-omit-frame-pointer -O1 -pthread by the tests. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;
static long base_n, extra_n;
static int listener;

__attribute__((noinline)) void base_work(long n) {
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

static const char reply[] =
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

/* Answer every complete request head on `fd` until the client closes. */
static void serve(int fd) {
    char buf[16384];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - have - 1);
        if (n <= 0)
            return;
        have += (size_t)n;
        buf[have] = 0;
        char *start = buf, *end;
        while ((end = strstr(start, "\r\n\r\n")) != NULL) {
            base_work(base_n);
            extra_work(extra_n);
            if (write(fd, reply, sizeof reply - 1) != (ssize_t)(sizeof reply - 1))
                return;
            start = end + 4;
        }
        have -= (size_t)(start - buf);
        memmove(buf, start, have);
        if (have >= sizeof buf - 1)
            return;
    }
}

static void *accept_loop(void *arg) {
    (void)arg;
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0)
            continue;
        serve(fd);
        close(fd);
    }
    return NULL;
}

static void worker(void) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pthread_t t;
    pthread_create(&t, NULL, accept_loop, NULL);
    accept_loop(NULL);
}

int main(int argc, char **argv) {
    if (argc != 3)
        return 2;
    base_n = atol(argv[1]);
    extra_n = atol(argv[2]);
    signal(SIGPIPE, SIG_IGN);
    listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(listener, (struct sockaddr *)&a, sizeof a) || listen(listener, 128) ||
        getsockname(listener, (struct sockaddr *)&a, &len))
        return 1;
    for (int i = 0; i < 2; i++)
        if (fork() == 0)
            worker();
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    while (wait(NULL) > 0)
        ;
    return 0;
}
