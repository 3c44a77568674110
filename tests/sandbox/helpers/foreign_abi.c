// Makes a syscall through a foreign ABI: "x32" (the x32 numbering on x86_64) or "i386"
// (int 0x80). Either must end the run as a seccomp violation; prints ESCAPED if it returned.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  long ret = -1;
  if (strcmp(argv[1], "x32") == 0) {
    long nr = 0x40000000L | 39;  // getpid in the x32 table
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
  } else if (strcmp(argv[1], "i386") == 0) {
    long nr = 20;  // getpid in the i386 table
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr) : "memory");
  } else {
    return 2;
  }
  printf("ESCAPED: %s syscall returned %ld\n", argv[1], ret);
  return 0;
}
