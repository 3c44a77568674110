// Hostile behaviours in one small binary (fast to start), for the leak test and a few others.
//   hostile forkbomb | membomb | spin | sleep-ignore-term | daemon MARKER | flood | fill PATH |
//           mount | fds
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static int forkbomb(void) {
  for (;;) (void)fork();
}

static int membomb(void) {
  for (;;) {
    char* p = malloc(1 << 20);
    if (!p) return 1;
    memset(p, 1, 1 << 20);
  }
}

static int spin(void) {
  volatile unsigned long x = 0;
  for (;;) x++;
}

static int sleep_ignoring_term(void) {
  signal(SIGTERM, SIG_IGN);
  for (;;) pause();
}

// Double fork and setsid, then exec a sleeper whose argv carries MARKER so the test can look
// for it on the host afterwards. The main process exits at once.
static int daemonize(const char* marker) {
  pid_t p = fork();
  if (p == 0) {
    setsid();
    if (fork() == 0) {
      execl("/bin/sleep", "sleep", "3600", marker, (char*)NULL);
      _exit(127);
    }
    _exit(0);
  }
  return 0;
}

static int flood(void) {
  static char buf[65536];
  memset(buf, 'x', sizeof buf);
  for (;;)
    if (write(1, buf, sizeof buf) < 0) return 1;
}

static int fill(const char* path) {
  static char buf[1 << 20];
  memset(buf, 'f', sizeof buf);
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) return 1;
  long long total = 0;
  for (;;) {
    ssize_t n = write(fd, buf, sizeof buf);
    if (n <= 0) {
      printf("wrote %lld bytes, then errno %d\n", total, errno);
      return 0;
    }
    total += n;
  }
}

static int fds(void) {
  int count = 0;
  while (open("/dev/null", O_RDONLY) >= 0) count++;
  printf("opened %d, then errno %d\n", count, errno);
  return 0;
}

int main(int argc, char** argv) {
  signal(SIGXFSZ, SIG_IGN);  // let fill see EFBIG instead of dying
  if (argc < 2) return 2;
  const char* mode = argv[1];
  if (!strcmp(mode, "forkbomb")) return forkbomb();
  if (!strcmp(mode, "membomb")) return membomb();
  if (!strcmp(mode, "spin")) return spin();
  if (!strcmp(mode, "sleep-ignore-term")) return sleep_ignoring_term();
  if (!strcmp(mode, "daemon") && argc > 2) return daemonize(argv[2]);
  if (!strcmp(mode, "flood")) return flood();
  if (!strcmp(mode, "fill") && argc > 2) return fill(argv[2]);
  if (!strcmp(mode, "fds")) return fds();
  if (!strcmp(mode, "mount")) {
    int rc = mount("none", "/tmp", "tmpfs", 0, NULL);
    printf("ESCAPED: mount returned %d\n", rc);
    return 0;
  }
  return 2;
}
