/*
 * lsmpmon-fork: the program lsmpmon's fork_exit, fork_exec and fork_sh ops
 * create processes from (crates/bench/src/forker.rs), arranged as lmbench's
 * lat_proc (src/lat_proc.c, run by benchmp in src/lib_timing.c): a small
 * static, not position-independent C program (a dozen anonymous pages, the
 * same layout every run), whose first process forks the process that does
 * the forking and waits for it.
 *
 *   lsmpmon-fork COMM [PROGRAM ARG...]
 *
 * COMM: the command name to take (that of the process it serves): the lab's
 * reference MACs and BPF LSM policy recognise their subject by it, and the
 * helper and its children stay their subject. Then, on stdin and stdout,
 * native-endian 64-bit counts: it reads N, creates N processes one after the
 * other (each exits, or executes PROGRAM with an empty environment), waits
 * for each, and answers with how many exited with status 0. The end of its
 * input ends it.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* As lat_proc's do_fork: the child's pid in a global while it lives. */
pid_t child_pid;

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

/*
 * The child of fork_exit does what lat_proc's does: lmbench's
 * handle_scheduler() reads LMBENCH_SCHED (unset: nothing more), then the C
 * library's exit(), whose clean-up writes take copy-on-write faults. Both
 * are part of lat_proc's figure (the getenv() ≈ 13 µs of page faults in a
 * 6.1 guest: BENCHMARKS.md, 'Fidelity to lmbench').
 */
static void exit_as_lat_proc(void)
{
	if (getenv("LMBENCH_SCHED"))
		_exit(3); /* lsmpmon never sets it: a failed child */
	exit(0);
}

/* n processes, one after the other; how many exited with status 0. */
static uint64_t create(uint64_t n, char **program)
{
	char *envp[] = { NULL };
	uint64_t ok = 0;

	for (uint64_t i = 0; i < n; i++) {
		int status;
		pid_t pid = child_pid = fork();

		if (pid == 0) {
			if (program[0]) {
				execve(program[0], program, envp);
				_exit(127);
			}
			exit_as_lat_proc();
		}
		if (pid > 0 && waitpid(pid, &status, 0) == pid && status == 0)
			ok++;
		child_pid = 0;
	}
	return ok;
}

int main(int argc, char **argv)
{
	uint64_t n;
	int status;
	pid_t worker;

	if (argc < 2 || prctl(PR_SET_NAME, argv[1], 0, 0, 0) != 0)
		return 2;
	/* As benchmp: the forking process is a forked copy, its parent waits. */
	worker = fork();
	if (worker < 0)
		return 2;
	if (worker > 0) {
		if (waitpid(worker, &status, 0) != worker || !WIFEXITED(status))
			return 1;
		return WEXITSTATUS(status);
	}
	/* It dies with its parent, which dies with lsmpmon. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() == 1)
		return 2;
	while (transfer(0, &n, sizeof(n), 0)) {
		uint64_t ok = create(n, argv + 2);

		if (!transfer(1, &ok, sizeof(ok), 1))
			return 1;
	}
	return 0;
}
