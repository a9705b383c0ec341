/*
 * Log lines sent as datagrams, many per system call (sendmmsg(2)).
 *
 * The access log frames a batch of lines into one buffer (splicer/log/logger.py); a
 * datagram target (UDP syslog, a unix datagram socket) takes one message per datagram
 * (RFC 5426 section 3.1). spl_send_lines() cuts the buffer at each line feed and hands the
 * kernel up to SPL_LINES_BATCH datagrams per call, instead of one send(2) per line. It never
 * waits: the socket is non-blocking and MSG_DONTWAIT is passed; a datagram the kernel cannot
 * take now is dropped and counted. No allocation: the message headers live on the stack.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "splicer/engine.h"

#define SPL_LINES_BATCH 64 /* datagrams per sendmmsg(2) call */

static char spl_lf[1] = {'\n'};

int spl_send_lines(int fd, const char *buf, size_t len, uint32_t maxlen, uint32_t flags,
		   struct spl_lines *out)
{
	struct mmsghdr msgs[SPL_LINES_BATCH];
	struct iovec iov[SPL_LINES_BATCH][2];
	size_t pos = 0;

	if (out == NULL || (buf == NULL && len > 0) || fd < 0 || (maxlen != 0 && maxlen < 2))
		return -EINVAL;
	out->sent = 0;
	out->lost = 0;
	out->err = 0;
	while (pos < len) {
		unsigned int n = 0, done = 0;

		/* the next datagrams: each line through its LF, cut to maxlen bytes (the LF kept) */
		memset(msgs, 0, sizeof(msgs));
		while (n < SPL_LINES_BATCH && pos < len) {
			const char *start = buf + pos;
			const char *lf = memchr(start, '\n', len - pos);
			size_t size = lf != NULL ? (size_t)(lf - start) + 1 : len - pos;

			pos += size;
			iov[n][0].iov_base = (void *)start;
			msgs[n].msg_hdr.msg_iov = iov[n];
			if (maxlen != 0 && size > maxlen) {
				iov[n][0].iov_len = maxlen - 1;
				iov[n][1].iov_base = spl_lf;
				iov[n][1].iov_len = 1;
				msgs[n].msg_hdr.msg_iovlen = 2;
			} else {
				iov[n][0].iov_len = size;
				msgs[n].msg_hdr.msg_iovlen = 1;
			}
			n++;
		}
		while (done < n) {
			int r = sendmmsg(fd, msgs + done, n - done, MSG_DONTWAIT | MSG_NOSIGNAL);

			if (r == -1) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ||
				    errno == EMSGSIZE || /* larger than a datagram may be: that line only */
				    (errno == ECONNREFUSED && (flags & SPL_LINES_SKIP_REFUSED))) {
					out->lost++; /* this datagram is dropped: the next may pass */
					done++;
					continue;
				}
				out->err = errno; /* the rest is not sent: the caller counts it */
				return 0;
			}
			if (r == 0) { /* (not documented for a non-empty vector: never loop on it) */
				out->lost++;
				done++;
				continue;
			}
			out->sent += (uint32_t)r;
			done += (unsigned int)r;
			if (done < n) {
				/* a short count: the next datagram failed and its error was lost
				 * (sendmmsg(2) NOTES), e.g. a UDP ICMP unreachable taken from the
				 * socket or a full buffer: it is dropped, as EAGAIN drops one;
				 * a lasting error (a reader gone) comes back on the next call */
				out->lost++;
				done++;
			}
		}
	}
	return 0;
}
