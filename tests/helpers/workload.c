// SPDX-License-Identifier: GPL-2.0
/*
 * Known workloads for lsmpmon's guest tests and probe-cost benchmark: each
 * does exactly N of one operation and prints one JSON line with the time per
 * operation (CLOCK_MONOTONIC; virtual ns in a QEMU -icount guest).
 *
 *   workload stat N PATH          N stat(PATH)
 *   workload open_close N PATH    N open(PATH) + close
 *   workload create N DIR         create DIR/f0 .. f(N-1), empty
 *   workload prctl N PATH         N prctl(PR_GET_DUMPABLE) (PATH unused): no
 *        LSM handles it, so security_task_prctl returns -ENOSYS (not a denial)
 *   workload landlock_open N PATH N open(PATH), each denied (EACCES) by a
 *        Landlock ruleset that handles reading files and allows none
 *   workload fanotify_slow N PATH DELAY_MS
 *        a child opens PATH N times while this process, a fanotify
 *        FAN_OPEN_PERM listener, answers each after DELAY_MS: every open
 *        blocks (a real context switch) inside the kernel's open path.
 *   workload rt_preempt N PATH SPIN_US
 *        a SCHED_FIFO child wakes N times (every 100 us) and spins SPIN_US
 *        each time, while this process stat()s PATH until the child is done:
 *        on a kernel that preempts in kernel mode (preempt=full, lazy) some
 *        wakeups land inside a hook. Prints the number of stats as "n".
 *
 * Hooks whose callers are not named security_<hook> (PATH unused unless said):
 *   workload fork_exec N PROG     N fork + exec PROG (cred_prepare, each twice)
 *   workload session_keyring N X  N children each join a new session keyring
 *        and hand it to this process (KEYCTL_SESSION_TO_PARENT), which
 *        installs it returning from wait() (cred_transfer, once a child)
 *   workload udp N X              N datagrams from an unconnected socket to
 *        one bound on 127.0.0.1, each received (sk_getsecid when routed,
 *        socket_sock_rcv_skb when queued)
 *   workload userns N X           N children each unshare(CLONE_NEWUSER)
 *   workload settime N X          N clock_settime(CLOCK_REALTIME, now)
 *   workload mount N DIR          N tmpfs mounts on DIR, each unmounted
 *   workload mmap N X             N private writable 8 MiB maps, each unmapped
 *        (vm_enough_memory)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/keyctl.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/fanotify.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void report(const char *op, long n, long long start, long long end)
{
	printf("{\"op\":\"%s\",\"n\":%ld,\"ns_per_op\":%.1f}\n", op, n,
	       (double)(end - start) / (double)n);
	fflush(stdout);
}

static int fanotify_slow(long n, const char *path, long delay_ms)
{
	int fan = fanotify_init(FAN_CLASS_CONTENT, O_RDONLY);
	if (fan < 0)
		die("fanotify_init");
	if (fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, path) < 0)
		die("fanotify_mark");
	long long start = now_ns();
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		for (long i = 0; i < n; i++) {
			int fd = open(path, O_RDONLY);
			if (fd < 0)
				die("open");
			close(fd);
		}
		_exit(0);
	}
	struct timespec delay = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };
	long answered = 0;
	char buf[4096];
	while (answered < n) {
		ssize_t len = read(fan, buf, sizeof(buf));
		if (len < 0)
			die("read fanotify");
		struct fanotify_event_metadata *m = (void *)buf;
		for (; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
			nanosleep(&delay, NULL);
			struct fanotify_response r = { .fd = m->fd, .response = FAN_ALLOW };
			if (write(fan, &r, sizeof(r)) != sizeof(r))
				die("write fanotify");
			close(m->fd);
			answered++;
		}
	}
	int status;
	waitpid(child, &status, 0);
	report("fanotify_slow", n, start, now_ns());
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/*
 * Opens `path` n times inside a Landlock ruleset that handles reading files
 * and allows nothing: each open is denied by security_file_open (-EACCES).
 */
static int landlock_open(long n, const char *path)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE };
	int ruleset = syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);

	if (ruleset < 0)
		die("landlock_create_ruleset");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("no_new_privs");
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		die("landlock_restrict_self");
	for (long i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY);
		if (fd >= 0 || errno != EACCES) {
			fprintf(stderr, "workload: open %s was not denied with EACCES\n", path);
			return 1;
		}
	}
	return 0;
}

static int rt_preempt(long n, const char *path, long spin_us)
{
	struct sched_param prio = { .sched_priority = 50 };
	struct timespec nap = { 0, 100000 };
	struct stat st;
	long long start = now_ns();
	long stats = 0;
	int status;
	pid_t child = fork();

	if (child < 0)
		die("fork");
	if (child == 0) {
		if (sched_setscheduler(0, SCHED_FIFO, &prio) < 0)
			die("sched_setscheduler");
		for (long i = 0; i < n; i++) {
			nanosleep(&nap, NULL);
			long long until = now_ns() + spin_us * 1000;
			while (now_ns() < until)
				;
		}
		_exit(0);
	}
	while (waitpid(child, &status, WNOHANG) == 0) {
		if (stat(path, &st) < 0)
			die("stat");
		stats++;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die("rt_preempt child");
	report("rt_preempt", stats, start, now_ns());
	return 0;
}

/* Runs `child` in a new process and waits for it; dies if it failed. */
static void in_child(void (*child)(const char *), const char *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		child(arg);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		die("child");
}

static void exec_prog(const char *prog)
{
	execl(prog, prog, (char *)NULL);
	die("exec");
}

static void session_to_parent(const char *unused)
{
	(void)unused;
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0)
		die("keyctl join");
	if (syscall(SYS_keyctl, KEYCTL_SESSION_TO_PARENT) < 0)
		die("keyctl session_to_parent");
}

static void new_userns(const char *unused)
{
	(void)unused;
	if (unshare(CLONE_NEWUSER) < 0)
		die("unshare");
}

static void udp(long n)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	socklen_t len = sizeof(to);
	char byte = 'x';
	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (rx < 0 || tx < 0 || bind(rx, (void *)&to, sizeof(to)) < 0 ||
	    getsockname(rx, (void *)&to, &len) < 0)
		die("udp socket");
	for (long i = 0; i < n; i++) {
		if (sendto(tx, &byte, 1, 0, (void *)&to, sizeof(to)) != 1)
			die("sendto");
		if (recv(rx, &byte, 1, 0) != 1)
			die("recv");
	}
	close(rx);
	close(tx);
}

/* The ops above whose hooks' callers are named otherwise; 2: not one. */
static int other_named(const char *op, long n, const char *path)
{
	struct timespec now;

	if (!strcmp(op, "udp")) {
		udp(n);
		return 0;
	}
	for (long i = 0; i < n; i++) {
		if (!strcmp(op, "fork_exec")) {
			in_child(exec_prog, path);
		} else if (!strcmp(op, "session_keyring")) {
			in_child(session_to_parent, path);
		} else if (!strcmp(op, "userns")) {
			in_child(new_userns, path);
		} else if (!strcmp(op, "settime")) {
			if (clock_gettime(CLOCK_REALTIME, &now) < 0 ||
			    clock_settime(CLOCK_REALTIME, &now) < 0)
				die("clock_settime");
		} else if (!strcmp(op, "mount")) {
			if (mount("none", path, "tmpfs", 0, NULL) < 0)
				die("mount");
			if (umount(path) < 0)
				die("umount");
		} else if (!strcmp(op, "mmap")) {
			size_t size = 8 << 20;
			void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED || munmap(p, size) < 0)
				die("mmap");
		} else {
			return 2;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: workload stat|open_close|create|prctl|landlock_open|fanotify_slow|rt_preempt|fork_exec|session_keyring|udp|userns|settime|mount|mmap N PATH [DELAY_MS|SPIN_US]\n");
		return 2;
	}
	const char *op = argv[1];
	long n = atol(argv[2]);
	const char *path = argv[3];
	struct stat st;
	long long start;

	if (!strcmp(op, "stat")) {
		start = now_ns();
		for (long i = 0; i < n; i++)
			if (stat(path, &st) < 0)
				die("stat");
	} else if (!strcmp(op, "open_close")) {
		start = now_ns();
		for (long i = 0; i < n; i++) {
			int fd = open(path, O_RDONLY);
			if (fd < 0)
				die("open");
			close(fd);
		}
	} else if (!strcmp(op, "create")) {
		char name[4096];
		start = now_ns();
		for (long i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "%s/f%ld", path, i);
			int fd = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
			if (fd < 0)
				die("create");
			close(fd);
		}
	} else if (!strcmp(op, "prctl")) {
		start = now_ns();
		for (long i = 0; i < n; i++)
			if (prctl(PR_GET_DUMPABLE) < 0)
				die("prctl");
	} else if (!strcmp(op, "landlock_open")) {
		return landlock_open(n, path);
	} else if (!strcmp(op, "fanotify_slow") && argc >= 5) {
		return fanotify_slow(n, path, atol(argv[4]));
	} else if (!strcmp(op, "rt_preempt") && argc >= 5) {
		return rt_preempt(n, path, atol(argv[4]));
	} else if (start = now_ns(), other_named(op, n, path) == 0) {
		/* done */
	} else {
		fprintf(stderr, "workload: unknown operation %s\n", op);
		return 2;
	}
	report(op, n, start, now_ns());
	return 0;
}
