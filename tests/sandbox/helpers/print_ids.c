// Prints "ruid euid" — installed setuid-root by the test to show it gains nothing.
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("%d %d\n", (int)getuid(), (int)geteuid());
  return 0;
}
