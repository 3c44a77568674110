// TIOCSTI: push a character into a terminal's input queue. ESCAPED if the ioctl returned.
#include <stdio.h>
#include <sys/ioctl.h>

int main(void) {
  char c = 'x';
  int rc = ioctl(0, TIOCSTI, &c);
  printf("ESCAPED: TIOCSTI returned %d\n", rc);
  return 0;
}
