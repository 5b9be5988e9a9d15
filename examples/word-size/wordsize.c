/* The 32-vs-64-bit question in miniature: the same C built -m32 and -m64.
 *
 * Part 1, pointers: a random binary search tree of N nodes (two pointers
 * and a `long` key each: 12 bytes of payload on i386, 24 on x86-64, before
 * malloc's own header), built, then searched and summed. Memory follows
 * the pointer size.
 * Part 2, arithmetic: a 64-bit hash mix (splitmix64) over M rounds, which
 * x86-64 does in single instructions and i386 in multi-word sequences.
 *
 *   wordsize [N] [M] [--hold SECONDS]
 * prints sizes and a checksum; --hold keeps the tree alive before exiting
 * so its memory can be sampled.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct node {
    struct node *left, *right;
    long key;
};

static uint64_t mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static struct node *insert(struct node *root, struct node *n) {
    struct node **at = &root;
    while (*at) at = n->key < (*at)->key ? &(*at)->left : &(*at)->right;
    *at = n;
    return root;
}

static long sum(const struct node *t) {
    long s = 0;
    while (t) { /* recurse left, loop right: bounded stack on a random tree */
        s += t->key + sum(t->left);
        t = t->right;
    }
    return s;
}

int main(int argc, char **argv) {
    long n = 300000, m = 20000000, hold = 0;
    int pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--hold") && i + 1 < argc) hold = atol(argv[++i]);
        else if (pos++ == 0) n = atol(argv[i]);
        else m = atol(argv[i]);
    }
    struct node *root = NULL;
    uint64_t seed = 42;
    for (long i = 0; i < n; i++) {
        struct node *x = malloc(sizeof *x);
        if (!x) { perror("malloc"); return 1; }
        x->left = x->right = NULL;
        x->key = (long)(mix(seed++) >> 40);
        root = insert(root, x);
    }
    long found = 0;
    for (long i = 0; i < n; i++) {
        long k = (long)(mix(42 + (uint64_t)i) >> 40);
        const struct node *t = root;
        while (t && t->key != k) t = k < t->key ? t->left : t->right;
        found += t != NULL;
    }
    uint64_t h = 0;
    for (long i = 0; i < m; i++) h = mix(h + (uint64_t)i);
    printf("bits=%d sizeof(void*)=%zu sizeof(node)=%zu nodes=%ld found=%ld sum=%ld hash=%016llx\n",
           (int)(8 * sizeof(void *)), sizeof(void *), sizeof(struct node), n, found, sum(root),
           (unsigned long long)h);
    fflush(stdout);
    if (hold > 0) sleep((unsigned)hold);
    return 0;
}
