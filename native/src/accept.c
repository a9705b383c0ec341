/*
 * Accepting client connections, many per call.
 *
 * A listener's readiness event lets the worker take a batch of the connections waiting in
 * its accept queue. spl_accept() takes up to `max` of them with accept4(2), each already
 * non-blocking and close-on-exec (no fcntl or ioctl after it), sets TCP_NODELAY on TCP
 * ones (heads and small bodies are written whole: Nagle's delay only adds latency), and
 * reports each peer's IPv4 address and port as plain integers, so that the caller keeps a
 * client address without building an address object (Python: one int, not a tuple, a
 * string and an int). Another family's peer is left to the caller (getpeername(2)).
 * No allocation: the peer address lives on the stack.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "splicer/engine.h"

int spl_accept(int lfd, struct spl_accepted *out, uint32_t max, uint32_t flags)
{
	uint32_t n = 0;

	if (lfd < 0 || (out == NULL && max > 0))
		return -EINVAL;
	while (n < max) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue; /* interrupted, or a connection reset while queued: the next one */
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break; /* the queue is empty */
			if (n > 0)
				break; /* report what was taken; the error comes again on the next call */
			return -errno;
		}
		out[n].fd = fd;
		out[n].family = ss.ss_family;
		out[n].port = 0;
		out[n].addr = 0;
		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;

			out[n].addr = ntohl(sin->sin_addr.s_addr);
			out[n].port = ntohs(sin->sin_port);
		}
		if ((flags & SPL_ACCEPT_NODELAY) && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)) {
			int one = 1;

			/* cannot fail on a connected TCP socket but for a reset already in: the
			 * connection then fails on its first read or write, where it is handled */
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		n++;
	}
	return (int)n;
}
