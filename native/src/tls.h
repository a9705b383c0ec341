/*
 * The engine's side of tls.c: one TLS session per connection (an opaque struct spl_tls,
 * OpenSSL's SSL), read and written in recv(2)'s and send(2)'s ways.
 */
#ifndef SPLICER_TLS_H
#define SPLICER_TLS_H

#include <stddef.h>
#include <sys/types.h>

struct spl_tls_ctx;
struct spl_tls;
struct spl_tls_info;

/* A session on the connected socket fd, server side (accept state): 0 and *out, or -errno. */
int spl_tls_new(struct spl_tls_ctx *c, int fd, struct spl_tls **out);

/* recv(2) on the session (`peek`: the bytes stay, SSL_peek): > 0 bytes, 0 at the end of the
 * session (close_notify or the peer's end of stream), -1 with errno: EAGAIN while the
 * handshake or a record waits for the socket, EPROTO for a failed handshake or a bad record,
 * or the socket's error. The first call performs the handshake. */
ssize_t spl_tls_recv(struct spl_tls *t, void *buf, size_t len, int peek);

/* send(2) on the session: > 0 bytes written (a part, maybe), -1 with errno (EAGAIN: the
 * socket is full; EPIPE: the session ended; EPROTO; the socket's error). */
ssize_t spl_tls_send(struct spl_tls *t, const void *buf, size_t len);

/* What the session's handshake settled (engine.h struct spl_tls_info): 0 and *out once a
 * read through it succeeded (the handshake is through), else -ENOENT. */
int spl_tls_info_of(const struct spl_tls *t, struct spl_tls_info *out);

/* Sends close_notify once (one try, never waiting): the session's writing half ends, as a
 * FIN ends a plain socket's; reading goes on. */
void spl_tls_notify(struct spl_tls *t);

/* Frees the session; with `notify` and a complete handshake, first tries once to send
 * close_notify (never waits). */
void spl_tls_free(struct spl_tls *t, int notify);

#endif
