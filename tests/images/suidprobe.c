/* suidprobe.c - installed setuid+setgid root (mode 6755) in the tiny test
 * image: prints its real and effective ids, so a test can see whether the
 * image was mounted nosuid (effective ids stay the caller's) or not. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("uid=%d euid=%d gid=%d egid=%d\n", (int)getuid(),
	       (int)geteuid(), (int)getgid(), (int)getegid());
	return 0;
}
