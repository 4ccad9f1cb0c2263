// SPDX-License-Identifier: GPL-2.0
/*
 * A Prometheus-like client for `lsmpmon serve` inside a guest (busybox has
 * no curl): times scrapes with CLOCK_MONOTONIC (virtual ns under -icount),
 * and plays the hostile clients of tests/serve.rs.
 *
 *   scrape PORT N            N scrapes one after another; one JSON line:
 *                            fastest / median / slowest ms, bytes, status
 *   scrape PORT loop MS      a scrape every MS ms until killed (the
 *                            benchmark's scrape loop); nothing printed
 *   scrape PORT hostile PID  1000 idle connections, a head that never ends,
 *                            a 10 MB header and a non-HTTP byte stream at
 *                            once, then one normal scrape; prints
 *                            key=value lines (see tests/serve.rs)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IDLE 1000
#define BIG_BYTES (10 << 20)

static const char REQUEST[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			      "Connection: close\r\n\r\n";

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "scrape: connect: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

/* Reads until the peer closes or timeout_ms passes: bytes read; the first
 * line (status) goes to `status`. */
static long read_reply(int fd, int timeout_ms, char *status, size_t status_len)
{
	static char buf[1 << 16];
	long total = 0;
	double end = now_ms() + timeout_ms;
	status[0] = 0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(end - now_ms());
		if (left <= 0 || poll(&p, 1, left) <= 0)
			break;
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		if (total == 0) {
			size_t k = strcspn(buf, "\r\n");
			if (k >= status_len)
				k = status_len - 1;
			if ((size_t)n < k)
				k = n;
			memcpy(status, buf, k);
			status[k] = 0;
		}
		total += n;
	}
	return total;
}

/* One scrape: ms taken; bytes and status line through the pointers. */
static double scrape(int port, long *bytes, char *status, size_t status_len)
{
	double t0 = now_ms();
	int fd = connect_to(port);
	if (write(fd, REQUEST, sizeof(REQUEST) - 1) < 0)
		status[0] = 0;
	*bytes = read_reply(fd, 30000, status, status_len);
	close(fd);
	return now_ms() - t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int timed(int port, int n)
{
	double ms[1000];
	long bytes = 0;
	char status[64];
	if (n < 1 || n > 1000)
		return 2;
	for (int i = 0; i < n; i++)
		ms[i] = scrape(port, &bytes, status, sizeof(status));
	qsort(ms, n, sizeof(ms[0]), cmp);
	printf("{\"scrapes\":%d,\"fastest_ms\":%.3f,\"median_ms\":%.3f,\"slowest_ms\":%.3f,"
	       "\"bytes\":%ld,\"status\":\"%s\"}\n",
	       n, ms[0], ms[n / 2], ms[n - 1], bytes, status);
	return 0;
}

static void __attribute__((noreturn)) loop(int port, int every_ms)
{
	long bytes;
	char status[64];
	for (;;) {
		scrape(port, &bytes, status, sizeof(status));
		usleep(every_ms * 1000);
	}
}

static long rss_kib(const char *pid)
{
	char path[64], line[256];
	long kib = -1;
	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* Sends up to BIG_BYTES of one header line, stopping when the server stops
 * reading for a second: MiB sent. */
static long send_big_header(int fd)
{
	static char chunk[1 << 16];
	long sent = 0;
	memset(chunk, 'a', sizeof(chunk));
	if (write(fd, "GET /metrics HTTP/1.1\r\nX-Big: ", 30) < 0)
		return 0;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (sent < BIG_BYTES) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (poll(&p, 1, 1000) <= 0 || (p.revents & (POLLERR | POLLHUP)))
			break;
		ssize_t n = write(fd, chunk, sizeof(chunk));
		if (n <= 0)
			break;
		sent += n;
	}
	fcntl(fd, F_SETFL, 0);
	return sent >> 20;
}

static int hostile(int port, const char *pid)
{
	static int idle[IDLE];
	char status[64];
	long bytes;
	struct rlimit r = { 8192, 8192 };
	setrlimit(RLIMIT_NOFILE, &r);
	printf("rss_before_kib=%ld\n", rss_kib(pid));
	for (int i = 0; i < IDLE; i++)
		idle[i] = connect_to(port);
	int endless = connect_to(port);
	if (write(endless, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ", 40) < 0)
		return 1;
	int garbage = connect_to(port);
	if (write(garbage, "\xff\x00\x13\x37\n\n\xfe", 7) < 0)
		return 1;
	int big = connect_to(port);
	printf("big_header_sent_mib=%ld\n", send_big_header(big));
	printf("scrape_ms=%.1f\n", scrape(port, &bytes, status, sizeof(status)));
	printf("scrape_status=%s\nscrape_bytes=%ld\n", status, bytes);
	read_reply(garbage, 5000, status, sizeof(status));
	printf("garbage_reply=%s\n", status);
	read_reply(big, 5000, status, sizeof(status));
	printf("big_header_reply=%s\n", status);
	double t0 = now_ms();
	read_reply(endless, 20000, status, sizeof(status));
	printf("endless_dropped_after_ms=%.0f\n", now_ms() - t0);
	printf("rss_during_kib=%ld\n", rss_kib(pid));
	for (int i = 0; i < IDLE; i++)
		close(idle[i]);
	printf("after_scrape_ms=%.1f\n", scrape(port, &bytes, status, sizeof(status)));
	printf("after_scrape_status=%s\n", status);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 3)
		return timed(atoi(argv[1]), atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[2], "loop"))
		loop(atoi(argv[1]), atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[2], "hostile"))
		return hostile(atoi(argv[1]), argv[3]);
	fprintf(stderr, "usage: scrape PORT N | PORT loop MS | PORT hostile PID\n");
	return 2;
}
