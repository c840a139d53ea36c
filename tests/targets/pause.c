/* pause.c - a static program that waits for a signal: the "container" of tests/targets.sh,
 * run under chroot so that its executable's path is one its owner controls. */
#include <unistd.h>

int main(void)
{
	pause();
	return 0;
}
