/*
 * sendmmsg-bench: the C reference for udp's benchmarks (go test -bench . ./udp).
 * Sends 100-byte datagrams over loopback with sendmmsg (batches of 64) and
 * reports datagrams per second and CPU per datagram, the same way the Go
 * benchmarks do, so both can be measured on one machine under one load.
 *
 *   cc -O2 -o /tmp/sendmmsg-bench scripts/sendmmsg-bench.c -lpthread
 *   /tmp/sendmmsg-bench send 3     # sender only, to a bound socket nobody reads
 *   /tmp/sendmmsg-bench pair 3     # sender thread + receiver thread (recvmmsg)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { BATCH = 64, SIZE = 100 };

static atomic_int stop;
static struct sockaddr_in dst;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu(int who) {
	struct rusage ru;
	getrusage(who, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int udp_socket(int port) {
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	int tos = 46 << 2, buf = 4 << 20;
	setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("bind");
		exit(1);
	}
	return fd;
}

static long long sent;

static void *sender(void *arg) {
	int fd = *(int *)arg;
	static char bufs[BATCH][SIZE];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	memset(msgs, 0, sizeof msgs);
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = SIZE;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_name = &dst;
		msgs[i].msg_hdr.msg_namelen = sizeof dst;
	}
	while (!atomic_load(&stop)) {
		int n = sendmmsg(fd, msgs, BATCH, 0);
		if (n > 0)
			sent += n;
	}
	return NULL;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "send";
	double secs = argc > 2 ? atof(argv[2]) : 3;
	int rx = udp_socket(0), tx = udp_socket(0);
	socklen_t len = sizeof dst;
	getsockname(rx, (struct sockaddr *)&dst, &len);

	if (strcmp(mode, "send") == 0) {
		double t0 = now(), c0 = cpu(RUSAGE_SELF);
		pthread_t th;
		pthread_create(&th, NULL, sender, &tx);
		usleep(secs * 1e6);
		atomic_store(&stop, 1);
		pthread_join(th, NULL);
		double dt = now() - t0, dc = cpu(RUSAGE_SELF) - c0;
		printf("send: %.0f datagrams/s, %.2f us CPU per datagram\n", sent / dt, dc / sent * 1e6);
		return 0;
	}
	/* pair: the sender runs in a thread, this thread receives. */
	pthread_t th;
	pthread_create(&th, NULL, sender, &tx);
	static char bufs[BATCH][2048];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	memset(msgs, 0, sizeof msgs);
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof bufs[i];
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	long long got = 0;
	double t0 = now(), c0 = cpu(RUSAGE_SELF), r0 = cpu(RUSAGE_THREAD);
	while (now() - t0 < secs) {
		int n = recvmmsg(rx, msgs, BATCH, 0, NULL);
		if (n > 0)
			got += n;
	}
	double dt = now() - t0, dc = cpu(RUSAGE_SELF) - c0, dr = cpu(RUSAGE_THREAD) - r0;
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("pair: %.0f datagrams/s received, %.2f us CPU per datagram (all threads), receiver thread %.2f us\n",
	       got / dt, dc / got * 1e6, dr / got * 1e6);
	return 0;
}
