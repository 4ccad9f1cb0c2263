/*
 * lsmpmon-fork: the process lsmpmon's fork_exit, fork_exec and fork_sh ops
 * create processes from (src/bench/forker.rs), as lmbench's lat_proc forks
 * from its own small C program: static, not position-independent, a dozen
 * anonymous pages, one address-space layout every run.
 *
 *   lsmpmon-fork COMM [PROGRAM ARG...]
 *
 * COMM: the command name to take (that of the process it serves): the lab's
 * reference MACs and BPF LSM policy recognise their subject by it, and the
 * helper and its children stay their subject. Then, on stdin and stdout,
 * native-endian 64-bit counts: it reads N, creates N processes one after the
 * other (each calls the C library's exit(0), as lat_proc's child does, or
 * executes PROGRAM with an empty environment), waits for each, and answers
 * with how many exited with status 0. The end of its input ends it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* All of buf through fd: 1, or 0 at end of file or an error. */
static int transfer(int fd, void *buf, size_t len, int writing)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);

		if (n <= 0)
			return 0;
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

/* n processes, one after the other; how many exited with status 0. */
static uint64_t create(uint64_t n, char **program)
{
	char *envp[] = { NULL };
	uint64_t ok = 0;

	for (uint64_t i = 0; i < n; i++) {
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			if (program[0]) {
				execve(program[0], program, envp);
				_exit(127);
			}
			exit(0);
		}
		if (pid > 0 && waitpid(pid, &status, 0) == pid && status == 0)
			ok++;
	}
	return ok;
}

int main(int argc, char **argv)
{
	uint64_t n;

	if (argc < 2 || prctl(PR_SET_NAME, argv[1], 0, 0, 0) != 0)
		return 2;
	while (transfer(0, &n, sizeof(n), 0)) {
		uint64_t ok = create(n, argv + 2);

		if (!transfer(1, &ok, sizeof(ok), 1))
			return 1;
	}
	return 0;
}
