/* Preloaded into a process (LD_PRELOAD), registers the executable's own mappings with
 * userfaultfd in asynchronous write-protect mode (Linux 6.7 and later). A mapping so registered
 * takes no fault-around: a fault maps only its own 4 KiB page, where the kernel otherwise maps
 * up to 64 KiB of cached neighbours. /proc/PID/pagemap then shows exactly the text pages the
 * process has run. Asynchronous mode resolves every fault in the kernel: nothing reads the
 * descriptor, and the process runs as it would without it. heap-profile.sh `text` uses it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif

__attribute__((constructor)) static void register_own_mappings(void) {
    char exe[4096];
    ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (length < 0) {
        perror("exact-text-faults: readlink /proc/self/exe");
        return;
    }
    exe[length] = 0;
    int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (uffd < 0) {
        perror("exact-text-faults: userfaultfd");
        return;
    }
    struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC};
    if (ioctl(uffd, UFFDIO_API, &api) != 0) {
        perror("exact-text-faults: UFFDIO_API with UFFD_FEATURE_WP_ASYNC (Linux 6.7+)");
        return;
    }
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) {
        perror("exact-text-faults: /proc/self/maps");
        return;
    }
    char line[8192];
    while (fgets(line, sizeof line, maps)) {
        unsigned long start, end;
        char path[4096] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &start, &end, path) < 2 ||
            strcmp(path, exe) != 0)
            continue;
        struct uffdio_register range = {
            .range = {.start = start, .len = end - start},
            .mode = UFFDIO_REGISTER_MODE_WP,
        };
        if (ioctl(uffd, UFFDIO_REGISTER, &range) != 0)
            fprintf(stderr, "exact-text-faults: UFFDIO_REGISTER %lx-%lx of %s: %s\n", start, end,
                    exe, strerror(errno));
    }
    fclose(maps);
    /* The descriptor stays open: closing it would end the registration. */
}
