/* Runs a command on a pseudo-terminal of a given size inside a guest (busybox
 * has no `script`), types scripted keys into it at given times, and copies
 * everything the command draws to stdout; exits with the command's status.
 *
 *   pty COLS ROWS [[@]SECONDS:KEYS]... -- COMMAND [ARG]...
 *
 * SECONDS count from the start, or with @ from when the command first
 * entered the alternate screen (a full-screen program is drawing: keys are
 * not typed while it is still starting, however slow the machine).
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

/* What a full-screen program writes first: the alternate screen. */
#define ALT_SCREEN "\x1b[?1049h"

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
	double start = now_s(), due = start, screen = 0;
	int next = 3;
	char buf[4096], seen[sizeof(ALT_SCREEN) + sizeof(buf)] = "";
	for (;;) {
		int wait_ms = -1;
		/* "@S:KEYS" counts S from the alternate screen's first appearance. */
		int from_screen = next < cmd && argv[next][0] == '@';
		if (next < cmd && (!from_screen || screen > 0)) {
			due = (from_screen ? screen : start) + atof(argv[next] + from_screen);
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
		if (screen == 0) {
			/* The sequence may straddle two reads: keep the last bytes. */
			size_t kept = strlen(seen);
			memcpy(seen + kept, buf, n);
			seen[kept + n] = 0;
			if (memmem(seen, kept + n, ALT_SCREEN, sizeof(ALT_SCREEN) - 1))
				screen = now_s();
			size_t tail = kept + n < sizeof(ALT_SCREEN) ? kept + n : sizeof(ALT_SCREEN) - 1;
			memmove(seen, seen + kept + n - tail, tail);
			seen[tail] = 0;
		}
	}
	fflush(stdout);
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
