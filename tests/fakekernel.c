/* A fake kernel CRNG at the C library boundary, for tests: LD_PRELOAD=fakekernel.so.
 *
 * Simulation (URANDOM_SHIM_SIMULATE) only makes the shim *believe* the CRNG is unready; the interpreter's own code
 * and the kernel are untouched. This library makes getrandom() itself behave like an unready kernel, so the real
 * code paths run: CPython's own os.urandom and os.getrandom (with the GIL held or released exactly as they really
 * do), the shim's helper thread, GRND_INSECURE, and OpenSSL's seeding.
 *
 * It replaces getrandom(), getentropy() and syscall(SYS_getrandom, ...): CPython calls getrandom() or the system
 * call depending on how it was built (os.getrandom always uses the system call), and OpenSSL uses getentropy().
 *
 *   FAKE_KERNEL_UNREADY=PATH  while PATH exists the CRNG is "not initialised":
 *                             - GRND_NONBLOCK fails with EAGAIN;
 *                             - GRND_INSECURE returns bytes that spell "WEAK-RNG" over and over, so weak bytes are
 *                               visible in any output (a request shorter than the mark gets bytes that differ);
 *                             - flags 0 (and GRND_RANDOM) blocks until PATH is deleted, then returns real bytes.
 *   FAKE_KERNEL_ERRNO=N       every getrandom() fails with errno N: 38 (ENOSYS) is a kernel before 3.17, 1 (EPERM)
 *                             a seccomp filter that denies it.
 *   FAKE_KERNEL_URANDOM_WAITS=1  with FAKE_KERNEL_UNREADY, opening /dev/urandom or /dev/random also blocks until PATH
 *                             is deleted, as a read of /dev/urandom runs the jitter generator on Linux 5.18+: what
 *                             every interpreter's own start does for its hash secret, unless PYTHONHASHSEED is set.
 *                             An open with O_NONBLOCK never waits.
 *
 *   FAKE_KERNEL_RELEASE=R     uname() says the kernel's release is R (say 5.10.0-28-amd64): what the shim reads to
 *                             know whether /dev/urandom waits (5.18+) and whether /dev/random answers (5.6+). With
 *                             FAKE_KERNEL_URANDOM_WAITS unset, /dev/urandom behaves as such a kernel's would.
 *
 * /dev/random, as on Linux 5.6+, where it blocks only until the CRNG is initialised: while PATH exists, poll() never
 * reports it readable (it waits out its timeout), and a read of it blocks until PATH is deleted (EAGAIN if the file
 * is non-blocking). PyPy, which has no os.getrandom, asks the kernel this way.
 * Without either, or once PATH is gone, every call goes to the real kernel.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define FAKE_GRND_NONBLOCK 0x0001
#define FAKE_GRND_INSECURE 0x0004

static const char MARK[] = "WEAK-RNG";

typedef long (*syscall_fn)(long, ...);

static syscall_fn real_syscall(void) {
    static syscall_fn fn = NULL;
    if (fn == NULL) fn = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
    return fn;
}

static int unready(void) {
    const char *path = getenv("FAKE_KERNEL_UNREADY");
    struct stat st;
    return path != NULL && *path != '\0' && stat(path, &st) == 0;
}

static long fake_getrandom(void *buf, size_t size, unsigned int flags) {
    const char *fail = getenv("FAKE_KERNEL_ERRNO");
    if (fail != NULL && *fail != '\0') {
        errno = atoi(fail);
        return -1;
    }
    if (unready()) {
        if (flags & FAKE_GRND_INSECURE) {
            if (size < sizeof MARK - 1)  /* too short for the mark (a hash seed): bytes that differ per call */
                return real_syscall()(SYS_getrandom, buf, size, flags);
            for (size_t i = 0; i < size; i++) ((char *)buf)[i] = MARK[i % 8];
            return (long)size;
        }
        if (flags & FAKE_GRND_NONBLOCK) {
            errno = EAGAIN;
            return -1;
        }
        while (unready()) {  /* "in the kernel": no Python code runs in this thread meanwhile */
            struct timespec pause = {0, 5 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    return real_syscall()(SYS_getrandom, buf, size, flags);
}

ssize_t getrandom(void *buf, size_t size, unsigned int flags) { return fake_getrandom(buf, size, flags); }

int getentropy(void *buf, size_t size) {
    if (size > 256) {
        errno = EIO;
        return -1;
    }
    return fake_getrandom(buf, size, 0) == (long)size ? 0 : -1;
}

long syscall(long number, ...) {
    va_list args;
    long arg[6];
    va_start(args, number);
    for (int i = 0; i < 6; i++) arg[i] = va_arg(args, long);
    va_end(args);
    if (number == SYS_getrandom) return fake_getrandom((void *)arg[0], (size_t)arg[1], (unsigned int)arg[2]);
    return real_syscall()(number, arg[0], arg[1], arg[2], arg[3], arg[4], arg[5]);
}

/* /dev/urandom on Linux 5.18+: its first read waits for the CRNG (here, the open does). */
static void wait_for_dev_random(const char *path, int flags) {
    if (flags & O_NONBLOCK) return;
    const char *waits = getenv("FAKE_KERNEL_URANDOM_WAITS");
    if (path == NULL || waits == NULL || strcmp(waits, "1") != 0) return;
    if (strcmp(path, "/dev/urandom") != 0 && strcmp(path, "/dev/random") != 0) return;
    while (unready()) {
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

#define FAKE_OPEN(name)                                                         \
    int name(const char *path, int flags, ...) {                                \
        static open_fn real = NULL;                                             \
        va_list args;                                                           \
        va_start(args, flags);                                                  \
        mode_t mode = (mode_t)va_arg(args, int);                                \
        va_end(args);                                                           \
        if (real == NULL) real = (open_fn)dlsym(RTLD_NEXT, #name);              \
        wait_for_dev_random(path, flags);                                              \
        return real(path, flags, mode);                                         \
    }
#define FAKE_OPENAT(name)                                                       \
    int name(int dir, const char *path, int flags, ...) {                       \
        static openat_fn real = NULL;                                           \
        va_list args;                                                           \
        va_start(args, flags);                                                  \
        mode_t mode = (mode_t)va_arg(args, int);                                \
        va_end(args);                                                           \
        if (real == NULL) real = (openat_fn)dlsym(RTLD_NEXT, #name);            \
        wait_for_dev_random(path, flags);                                              \
        return real(dir, path, flags, mode);                                    \
    }
FAKE_OPEN(open)
FAKE_OPEN(open64)
FAKE_OPENAT(openat)
FAKE_OPENAT(openat64)

/* What a binary built with _FORTIFY_SOURCE calls instead (Debian's /usr/bin/python3 uses __open64_2). */
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);
#define FAKE_OPEN_2(name)                                                       \
    int name(const char *path, int flags) {                                     \
        static open2_fn real = NULL;                                            \
        if (real == NULL) real = (open2_fn)dlsym(RTLD_NEXT, #name);             \
        wait_for_dev_random(path, flags);                                              \
        return real(path, flags);                                               \
    }
#define FAKE_OPENAT_2(name)                                                     \
    int name(int dir, const char *path, int flags) {                            \
        static openat2_fn real = NULL;                                          \
        if (real == NULL) real = (openat2_fn)dlsym(RTLD_NEXT, #name);           \
        wait_for_dev_random(path, flags);                                              \
        return real(dir, path, flags);                                          \
    }
FAKE_OPEN_2(__open_2)
FAKE_OPEN_2(__open64_2)
FAKE_OPENAT_2(__openat_2)
FAKE_OPENAT_2(__openat64_2)

/* /dev/random's readiness, as Linux 5.6+ reports it: poll() and read(). */
static int is_dev_random(int fd) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 8;
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);

int poll(struct pollfd *fds, nfds_t n, int timeout) {
    static poll_fn real = NULL;
    if (real == NULL) real = (poll_fn)dlsym(RTLD_NEXT, "poll");
    int ours = 0;
    for (nfds_t i = 0; i < n && !ours; i++) ours = is_dev_random(fds[i].fd);
    if (!ours || !unready()) return real(fds, n, timeout);
    /* The other descriptors are polled in slices of 5 ms, with /dev/random left out (a negative fd is ignored). */
    long long deadline = timeout < 0 ? -1 : now_ms() + timeout;
    int saved[n > 0 ? n : 1];
    for (nfds_t i = 0; i < n; i++) {
        saved[i] = fds[i].fd;
        if (is_dev_random(fds[i].fd)) fds[i].fd = -1;
    }
    int result;
    for (;;) {
        long long left = deadline < 0 ? 5 : deadline - now_ms();
        result = real(fds, n, left < 0 ? 0 : (left < 5 ? (int)left : 5));
        if (result != 0 || !unready() || (deadline >= 0 && now_ms() >= deadline)) break;
    }
    for (nfds_t i = 0; i < n; i++) fds[i].fd = saved[i];
    if (result == 0 && !unready()) return real(fds, n, 0);
    return result;
}

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t size) {
    (void)size;
    return poll(fds, n, timeout);
}

typedef ssize_t (*read_fn)(int, void *, size_t);

ssize_t read(int fd, void *buf, size_t size) {
    static read_fn real = NULL;
    if (real == NULL) real = (read_fn)dlsym(RTLD_NEXT, "read");
    const char *path = getenv("FAKE_KERNEL_UNREADY");
    if (path != NULL && *path != '\0' && is_dev_random(fd)) {
        if (unready() && (fcntl(fd, F_GETFL) & O_NONBLOCK)) {
            errno = EAGAIN;
            return -1;
        }
        while (unready()) {
            struct timespec pause = {0, 5 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    return real(fd, buf, size);
}

typedef int (*uname_fn)(struct utsname *);

int uname(struct utsname *name) {
    static uname_fn real = NULL;
    if (real == NULL) real = (uname_fn)dlsym(RTLD_NEXT, "uname");
    int result = real(name);
    const char *release = getenv("FAKE_KERNEL_RELEASE");
    if (result == 0 && release != NULL && *release != '\0') {
        strncpy(name->release, release, sizeof name->release - 1);
        name->release[sizeof name->release - 1] = '\0';
    }
    return result;
}
