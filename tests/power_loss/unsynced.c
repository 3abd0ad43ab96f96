/* What a power cut would leave: an LD_PRELOAD layer that records, at every successful
 * fsync or fdatasync of a file or folder under $UNSYNCED_ROOT, what is now durable.
 *
 * - A file synced: its whole content is copied to $UNSYNCED_JOURNAL/<pid>-<n> and the
 *   line "F <ino> <btime> <copy>" appended to $UNSYNCED_JOURNAL/log.
 * - A folder synced: its entries are written to a copy, one "<ino> <btime> <type> <name>"
 *   line each, and "D <ino> <btime> <copy>" appended to the log.
 *
 * Everything else (writes, renames, creations, deletions) goes to the kernel as usual
 * and is lost at the cut unless a later sync made it durable: the state after a cut at
 * any moment is rebuilt from the log (tests/power_loss.rs). An inode is named by its
 * number and birth time, as numbers are reused after a deletion. sync() and syncfs()
 * are not modelled: they append "S" and the test fails if one is found.
 *
 * Built by the test with `cc -shared -fPIC`; only tidemark's own processes load it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_syncfs)(int);
static void (*real_sync)(void);
static const char *root, *journal;
static size_t root_len;
static unsigned long counter;

__attribute__((constructor)) static void init(void) {
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_syncfs = dlsym(RTLD_NEXT, "syncfs");
    real_sync = dlsym(RTLD_NEXT, "sync");
    root = getenv("UNSYNCED_ROOT");
    journal = getenv("UNSYNCED_JOURNAL");
    if (!root || !journal)
        root = NULL;
    else
        root_len = strlen(root);
}

static void append(const char *line) {
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/log", journal);
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        abort();
    size_t n = strlen(line);
    if (write(fd, line, n) != (ssize_t)n)
        abort();
    close(fd);
}

/* The inode's birth time in nanoseconds (0 where the file system keeps none). */
static unsigned long long btime(int dirfd, const char *path, int flags) {
    struct statx sx;
    if (statx(dirfd, path, flags | AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &sx))
        return 0;
    if (!(sx.stx_mask & STATX_BTIME))
        return 0;
    return (unsigned long long)sx.stx_btime.tv_sec * 1000000000ull + sx.stx_btime.tv_nsec;
}

static void copy_file(int fd, const char *to) {
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    int in = open(self, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || out < 0)
        abort();
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, n) != n)
            abort();
    if (n < 0)
        abort();
    close(in);
    close(out);
}

static void list_folder(int fd, const char *to) {
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    DIR *d = opendir(self);
    FILE *out = fopen(to, "we");
    if (!d || !out)
        abort();
    int dfd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
            continue; /* gone meanwhile */
        char type = S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : 'o';
        fprintf(out, "%lu %llu %c %s\n", (unsigned long)st.st_ino,
                btime(dfd, e->d_name, 0), type, e->d_name);
    }
    closedir(d);
    fclose(out);
}

static void record(int fd) {
    if (!root)
        return;
    char self[64], path[PATH_MAX];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(self, path, sizeof path - 1);
    if (len < 0)
        return;
    path[len] = 0;
    if (strncmp(path, root, root_len) || (path[root_len] && path[root_len] != '/'))
        return;
    struct stat st;
    if (fstat(fd, &st))
        return;
    char copy[PATH_MAX], line[PATH_MAX + 128];
    unsigned long n = __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST);
    snprintf(copy, sizeof copy, "%s/%d-%lu", journal, (int)getpid(), n);
    unsigned long long born = btime(fd, "", AT_EMPTY_PATH);
    if (S_ISREG(st.st_mode)) {
        copy_file(fd, copy);
        snprintf(line, sizeof line, "F %lu %llu %s\n", (unsigned long)st.st_ino, born, copy);
    } else if (S_ISDIR(st.st_mode)) {
        list_folder(fd, copy);
        snprintf(line, sizeof line, "D %lu %llu %s\n", (unsigned long)st.st_ino, born, copy);
    } else {
        return;
    }
    append(line);
}

int fsync(int fd) {
    int r = real_fsync(fd);
    if (r == 0)
        record(fd);
    return r;
}

int fdatasync(int fd) {
    int r = real_fdatasync(fd);
    if (r == 0)
        record(fd);
    return r;
}

int syncfs(int fd) {
    if (root)
        append("S\n");
    return real_syncfs(fd);
}

void sync(void) {
    if (root)
        append("S\n");
    real_sync();
}
