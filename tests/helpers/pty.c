/* Runs a command on a pseudo-terminal of a given size inside a guest (busybox
 * has no `script`), types scripted keys into it at given times, and copies
 * everything the command draws to stdout; exits with the command's status.
 *
 *   pty COLS ROWS [SECONDS:KEYS]... -- COMMAND [ARG]...
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: pty COLS ROWS [SECONDS:KEYS]... -- COMMAND...\n");
		return 2;
	}
	struct winsize ws = { .ws_col = atoi(argv[1]), .ws_row = atoi(argv[2]) };
	int cmd = 3;
	while (cmd < argc && strcmp(argv[cmd], "--") != 0)
		cmd++;
	if (cmd + 1 >= argc)
		return 2;
	int master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) || unlockpt(master))
		return perror("pty"), 1;
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		int slave = open(ptsname(master), O_RDWR);
		ioctl(slave, TIOCSCTTY, 0);
		ioctl(slave, TIOCSWINSZ, &ws);
		dup2(slave, 0), dup2(slave, 1), dup2(slave, 2);
		execvp(argv[cmd + 1], argv + cmd + 1);
		_exit(127);
	}
	double start = now_s(), due = start;
	int next = 3;
	char buf[4096];
	for (;;) {
		int wait_ms = -1;
		if (next < cmd) {
			due = start + atof(argv[next]);
			wait_ms = due > now_s() ? (int)((due - now_s()) * 1000) + 1 : 0;
		}
		struct pollfd p = { .fd = master, .events = POLLIN };
		int r = poll(&p, 1, wait_ms);
		if (r == 0 && next < cmd) {
			const char *keys = strchr(argv[next], ':');
			if (keys && write(master, keys + 1, strlen(keys + 1)) < 0)
				break;
			next++;
			continue;
		}
		ssize_t n = read(master, buf, sizeof buf);
		if (n <= 0)
			break; /* EIO: the command closed the terminal */
		fwrite(buf, 1, n, stdout);
	}
	fflush(stdout);
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
