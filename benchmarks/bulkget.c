/*
 * bulkget: a keep-alive HTTP/1.1 GET load generator for large bodies (splicer benchmarks).
 *
 * Opens CONNS connections to HOST:PORT and, on each, sends "GET PATH" again as soon as the
 * previous response has been read in full, until DURATION seconds have passed. Requests in
 * flight at that moment are completed (so every counted body is whole and the elapsed time
 * matches the bytes), unless they need more than TAIL further seconds: those are abandoned
 * and counted as "unfinished". Response bodies are never copied to user space:
 * recv(MSG_TRUNC) on a TCP socket drops the queued bytes inside the kernel.
 *
 * Bodies are delimited by Content-Length or by `Transfer-Encoding: chunked`. A chunked body's
 * size lines, the CRLF after each chunk's data and the trailer section are peeked at
 * (recv(MSG_PEEK)) and parsed; the chunk data is dropped in the kernel like any body.
 * body_bytes counts body data only (for chunked bodies: the chunks' data, without the
 * framing, which framing_bytes counts).
 *
 * Prints one JSON object on stdout: bytes, requests, elapsed seconds and error counts.
 *
 * With `put=FILE`, each request is instead a POST whose body is FILE (sent with sendfile(2),
 * never copied to user space), and the response expected is a 204 (an origin that answers
 * before it has read the body, as nginx's `return 204` does, tests early responses): a
 * request is complete when its response has been read and its body sent, whichever ends
 * last. upload_bytes counts the body bytes sent.
 *
 * Usage: bulkget HOST PORT PATH CONNS DURATION [TAIL] [close | put=FILE]
 *   HOST      IPv4 address (e.g. 127.0.0.1)
 *   DURATION  seconds (fractional allowed) during which new requests are started
 *   TAIL      extra seconds allowed to finish the requests in flight (default 60)
 *   close     send "Connection: close" and open a new connection per request
 *   put=FILE  upload FILE in each request (POST), expect 204
 *
 * Exit status: 0 when every response was a complete 200, 1 when any error was counted,
 * 2 on usage or setup errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX 16384
#define RECV_CHUNK (1LL << 30)
#define LINE_MAX_ 1024         /* longest chunk-size or trailer line */
#define PEEK_MAX 512           /* bytes peeked at once for chunk framing */

enum state { ST_IDLE, ST_HEAD, ST_BODY, ST_UPLOAD };  /* ST_UPLOAD: response read, body not all sent */
/* where a chunked body is: size line, chunk data, the CRLF after the data, trailer, done */
enum cstate { CS_SIZE, CS_DATA, CS_DATA_END, CS_TRAILER, CS_DONE };

struct conn {
    int fd;
    enum state state;
    int want_out;              /* EPOLLOUT registered (request not fully written) */
    size_t sent;               /* bytes of the request written so far */
    long long body_left;       /* put: body bytes still to send */
    size_t head_len;           /* bytes in head[] */
    long long remaining;       /* body bytes still expected (chunked: of the current chunk) */
    int status;
    int server_close;          /* response carried Connection: close */
    int chunked;               /* response carried Transfer-Encoding: chunked */
    enum cstate cst;
    size_t line_len;           /* bytes of the current framing line in line[] */
    char line[LINE_MAX_ + 1];
    char head[HEAD_MAX + 1];
};

struct counters {
    long long requests;        /* complete responses */
    long long ok;              /* complete 200 responses */
    long long body_bytes;      /* body bytes received (of complete and incomplete bodies) */
    long long head_bytes;      /* response head bytes received */
    long long bad_status;      /* complete responses with a status other than 200 */
    long long short_bodies;    /* connection ended before the whole body arrived */
    long long bad_heads;       /* unparseable head, no Content-Length nor chunked, head too
                                  large, malformed chunked framing */
    long long conn_errors;     /* connect/send/recv failures, close before any response */
    long long connects;        /* connections opened */
    long long unfinished;      /* responses abandoned after DURATION + TAIL */
    long long chunked;         /* complete responses with a chunked body */
    long long chunks;          /* chunks with data (not the last-chunk) of chunked bodies */
    long long framing_bytes;   /* chunked framing received: size lines, CRLFs, trailers */
    long long upload_bytes;    /* put: request body bytes sent */
};

static struct sockaddr_in addr;
static char request[1024];
static size_t request_len;
static int epfd;
static int want_close;
static int stopping;
static struct counters ct;
static int put_fd = -1;         /* put: the file uploaded in each request */
static long long put_size;      /* put: its size, bytes */
static int want_status = 200;   /* the status a complete response must have */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set_events(struct conn *c, int out)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN | (out ? EPOLLOUT : 0);
    ev.data.ptr = c;
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = out;
}

static void conn_close(struct conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->state = ST_IDLE;
    c->want_out = 0;
}

static void conn_next(struct conn *c);

/* Write what remains of the request (and, with put, its body). Returns 0 when written or
 * blocked, -1 on error. */
static int conn_send(struct conn *c)
{
    while (c->sent < request_len || c->body_left > 0) {
        if (c->sent >= request_len) {
            off_t off = (off_t)(put_size - c->body_left);
            ssize_t n = sendfile(c->fd, put_fd, &off, (size_t)(c->body_left < RECV_CHUNK ? c->body_left : RECV_CHUNK));
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    if (!c->want_out)
                        set_events(c, 1);
                    return 0;
                }
                if (errno == EINTR)
                    continue;
                return -1;
            }
            if (n == 0)
                return -1;  /* the file is shorter than it was */
            c->body_left -= n;
            ct.upload_bytes += n;
            continue;
        }
        ssize_t n = send(c->fd, request + c->sent, request_len - c->sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!c->want_out)
                    set_events(c, 1);
                return 0;
            }
            if (errno == EINTR)
                continue;
            return -1;
        }
        c->sent += (size_t)n;
    }
    if (c->want_out)
        set_events(c, 0);
    if (c->state == ST_UPLOAD)
        conn_next(c);  /* the response came first: the request is complete now */
    return 0;
}

static int conn_start_request(struct conn *c)
{
    c->state = ST_HEAD;
    c->sent = 0;
    c->body_left = put_fd >= 0 ? put_size : 0;
    c->head_len = 0;
    c->remaining = 0;
    c->status = 0;
    c->server_close = 0;
    c->chunked = 0;
    c->cst = CS_SIZE;
    c->line_len = 0;
    return conn_send(c);
}

/* Connect and send the first request. Returns -1 (and leaves c idle) on failure. */
static int conn_open(struct conn *c)
{
    int one = 1;
    struct epoll_event ev;

    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    /* A blocking connect: on loopback it completes (or is refused) at once. */
    if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
        goto fail;
    ct.connects++;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) < 0)
        goto fail;
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
        goto fail;
    c->want_out = 0;
    if (conn_start_request(c) < 0) {
        conn_close(c);
        return -1;
    }
    return 0;
fail:
    close(c->fd);
    c->fd = -1;
    c->state = ST_IDLE;
    return -1;
}

/* A connection failed or ended: count it and close it (it is reopened by the main loop). */
static void conn_fail(struct conn *c, long long *counter)
{
    (*counter)++;
    conn_close(c);
}

/* The response on c is complete: count it, then (once its body is sent, with put) reuse,
 * reopen or retire the connection. */
static void conn_done(struct conn *c)
{
    ct.requests++;
    if (c->chunked)
        ct.chunked++;
    if (c->status == want_status)
        ct.ok++;
    else
        ct.bad_status++;
    if (c->body_left > 0) {
        c->state = ST_UPLOAD;  /* an early response: the upload goes on (conn_send) */
        return;
    }
    conn_next(c);
}

static void conn_next(struct conn *c)
{
    if (want_close || c->server_close || stopping) {
        conn_close(c);  /* reopened by the main loop unless stopping */
        return;
    }
    if (conn_start_request(c) < 0)
        conn_fail(c, &ct.conn_errors);
}

/* Value of a header line "Name: value" if its name is `name`, else NULL. */
static const char *header_value(const char *line, const char *eol, const char *name)
{
    size_t n = strlen(name);
    const char *p;
    if ((size_t)(eol - line) <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
        return NULL;
    p = line + n + 1;
    while (p < eol && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Parse the head in c->head[0..end). Returns 0, or -1 when it cannot be used. */
static int parse_head(struct conn *c, size_t end)
{
    const char *p = c->head, *stop = c->head + end, *eol;
    long long cl = -1;

    if (end < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
        return -1;
    c->status = atoi(p + 9);
    eol = strstr(p, "\r\n");
    while (eol && eol + 2 < stop) {
        const char *line = eol + 2, *v;
        eol = strstr(line, "\r\n");
        if (!eol || eol == line)
            break;
        if ((v = header_value(line, eol, "Content-Length")) != NULL) {
            char *e;
            cl = strtoll(v, &e, 10);
            if (e == v || cl < 0)
                return -1;
        } else if ((v = header_value(line, eol, "Transfer-Encoding")) != NULL) {
            const char *e = eol;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            /* chunked must be the last (here: the only one we accept) coding */
            if (e - v != 7 || strncasecmp(v, "chunked", 7) != 0)
                return -1;
            c->chunked = 1;
        } else if ((v = header_value(line, eol, "Connection")) != NULL) {
            char val[128];
            size_t len = (size_t)(eol - v) < sizeof(val) - 1 ? (size_t)(eol - v) : sizeof(val) - 1;
            memcpy(val, v, len);
            val[len] = 0;
            if (strcasestr(val, "close"))
                c->server_close = 1;
        }
    }
    if (c->status == 204 || c->status == 304) {  /* never a body (RFC 9112 6.3 rule 1) */
        c->chunked = 0;
        c->remaining = 0;
        return 0;
    }
    if (c->chunked) {  /* Transfer-Encoding overrides Content-Length (RFC 9112 6.3) */
        c->cst = CS_SIZE;
        c->line_len = 0;
        c->remaining = 0;
        return 0;
    }
    if (cl < 0)
        return -1;
    c->remaining = cl;
    return 0;
}

/* A whole framing line of a chunked body is in c->line (ending in LF): act on it.
 * Returns 0, or -1 when it is malformed. */
static int chunk_line(struct conn *c)
{
    const char *p = c->line, *end = c->line + c->line_len;
    long long size = 0;
    int digits = 0;

    if (c->line_len < 2 || end[-2] != '\r')
        return -1;
    end -= 2;  /* without the CRLF */
    switch (c->cst) {
    case CS_SIZE:
        for (; p < end; p++, digits++) {
            int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                  : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;
            if (d < 0)
                break;
            if (digits >= 15)
                return -1;
            size = size * 16 + d;
        }
        if (!digits || (p < end && *p != ';' && *p != ' ' && *p != '\t'))
            return -1;  /* anything after the size must be whitespace or a chunk extension */
        if (size == 0) {
            c->cst = CS_TRAILER;
        } else {
            ct.chunks++;
            c->remaining = size;
            c->cst = CS_DATA;
        }
        return 0;
    case CS_DATA_END:
        if (end != c->line)
            return -1;
        c->cst = CS_SIZE;
        return 0;
    case CS_TRAILER:
        if (end == c->line)
            c->cst = CS_DONE;
        return 0;  /* a trailer field: ignored */
    default:
        return -1;
    }
}

/* Feed p[0..n), the next bytes of a chunked body. Chunk data is consumed (and counted) only
 * when `data` is set; otherwise feeding stops where chunk data begins. Stops at the end of
 * the body. Returns the bytes consumed, or -1 on malformed framing. */
static long long chunk_feed(struct conn *c, const char *p, size_t n, int data)
{
    size_t i = 0;

    while (i < n && c->cst != CS_DONE) {
        const char *lf;
        size_t k;

        if (c->cst == CS_DATA) {
            if (!data)
                break;
            k = (size_t)(c->remaining < (long long)(n - i) ? c->remaining : (long long)(n - i));
            ct.body_bytes += (long long)k;
            c->remaining -= (long long)k;
            i += k;
            if (c->remaining == 0)
                c->cst = CS_DATA_END;
            continue;
        }
        lf = memchr(p + i, '\n', n - i);
        k = lf ? (size_t)(lf - (p + i)) + 1 : n - i;
        if (c->line_len + k > LINE_MAX_)
            return -1;
        memcpy(c->line + c->line_len, p + i, k);
        c->line_len += k;
        ct.framing_bytes += (long long)k;
        i += k;
        if (!lf)
            break;  /* the rest of the line is still to come */
        if (chunk_line(c) < 0)
            return -1;
        c->line_len = 0;
    }
    return (long long)i;
}

/* Read on from a chunked body: framing is peeked at and parsed, then dropped in the kernel
 * together with the chunk data that follows it. */
static void on_chunked(struct conn *c)
{
    while (c->cst != CS_DONE) {
        char peek[PEEK_MAX];
        long long used, want;
        ssize_t n;

        if (c->cst == CS_DATA) {
            size_t w = (size_t)(c->remaining < RECV_CHUNK ? c->remaining : RECV_CHUNK);
            n = recv(c->fd, NULL, w, MSG_TRUNC | MSG_DONTWAIT);
            used = 0;
        } else {
            n = recv(c->fd, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);
            if (n > 0) {
                used = chunk_feed(c, peek, (size_t)n, 0);
                if (used < 0) {
                    conn_fail(c, &ct.bad_heads);
                    return;
                }
                /* drop the framing parsed and, in the same call, the chunk data after it */
                want = used + (c->cst == CS_DATA ? c->remaining : 0);
                n = recv(c->fd, NULL, (size_t)(want < RECV_CHUNK ? want : RECV_CHUNK), MSG_TRUNC | MSG_DONTWAIT);
                if (n < used) {  /* the peeked bytes are queued: cannot happen */
                    conn_fail(c, &ct.conn_errors);
                    return;
                }
            }
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (errno == EINTR)
                continue;
            conn_fail(c, &ct.short_bodies);
            return;
        }
        if (n == 0) {
            conn_fail(c, &ct.short_bodies);
            return;
        }
        if (c->cst == CS_DATA) {
            ct.body_bytes += n - used;
            c->remaining -= n - used;
            if (c->remaining == 0)
                c->cst = CS_DATA_END;
        }
    }
    conn_done(c);
}

static void on_readable(struct conn *c)
{
    if (c->state == ST_UPLOAD) {  /* nothing is due before the next request: only an end */
        char b;
        ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            conn_fail(c, &ct.conn_errors);
        else if (n > 0)
            conn_fail(c, &ct.bad_heads);
        return;
    }
    if (c->state == ST_HEAD) {
        ssize_t n;
        char *end;
        size_t head_end, extra;

        n = recv(c->fd, c->head + c->head_len, HEAD_MAX - c->head_len, 0);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            conn_fail(c, &ct.conn_errors);
            return;
        }
        if (n == 0) {  /* closed before (the whole of) a response head */
            conn_fail(c, &ct.conn_errors);
            return;
        }
        c->head_len += (size_t)n;
        c->head[c->head_len] = 0;
        end = strstr(c->head, "\r\n\r\n");
        if (!end) {
            if (c->head_len >= HEAD_MAX)
                conn_fail(c, &ct.bad_heads);
            return;
        }
        head_end = (size_t)(end - c->head) + 4;
        if (parse_head(c, head_end) < 0) {
            conn_fail(c, &ct.bad_heads);
            return;
        }
        ct.head_bytes += (long long)head_end;
        extra = c->head_len - head_end;
        if (c->chunked) {
            long long used = chunk_feed(c, c->head + head_end, extra, 1);
            if (used < 0 || used < (long long)extra) {  /* malformed, or bytes past the body */
                conn_fail(c, &ct.bad_heads);
                return;
            }
            c->state = ST_BODY;
            if (c->cst == CS_DONE) {
                conn_done(c);
                return;
            }
        } else {
            if ((long long)extra > c->remaining) {  /* bytes past the body: not expected */
                conn_fail(c, &ct.bad_heads);
                return;
            }
            ct.body_bytes += (long long)extra;
            c->remaining -= (long long)extra;
            c->state = ST_BODY;
            if (c->remaining == 0) {
                conn_done(c);
                return;
            }
        }
    }
    if (c->chunked) {
        on_chunked(c);
        return;
    }
    /* ST_BODY: discard the queued body bytes in the kernel, never more than remain. */
    while (c->remaining > 0) {
        size_t want = (size_t)(c->remaining < RECV_CHUNK ? c->remaining : RECV_CHUNK);
        ssize_t n = recv(c->fd, NULL, want, MSG_TRUNC | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (errno == EINTR)
                continue;
            conn_fail(c, &ct.short_bodies);
            return;
        }
        if (n == 0) {
            conn_fail(c, &ct.short_bodies);
            return;
        }
        ct.body_bytes += n;
        c->remaining -= n;
    }
    conn_done(c);
}

int main(int argc, char **argv)
{
    int nconns, i, port;
    double duration, tail = 60.0, t0, deadline, hard_deadline, t_end;
    struct conn *conns;
    struct epoll_event evs[256];

    if (argc < 6 || argc > 8) {
        fprintf(stderr, "usage: %s HOST PORT PATH CONNS DURATION [TAIL] [close | put=FILE]\n", argv[0]);
        return 2;
    }
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    port = atoi(argv[2]);
    addr.sin_port = htons((unsigned short)port);
    if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1 || port <= 0 || port > 65535) {
        fprintf(stderr, "bulkget: bad address %s:%s\n", argv[1], argv[2]);
        return 2;
    }
    nconns = atoi(argv[4]);
    duration = atof(argv[5]);
    if (argc >= 7)
        tail = atof(argv[6]);
    if (argc == 8 && strncmp(argv[7], "put=", 4) == 0) {
        struct stat st;

        put_fd = open(argv[7] + 4, O_RDONLY | O_CLOEXEC);
        if (put_fd < 0 || fstat(put_fd, &st) < 0) {
            perror("bulkget: put file");
            return 2;
        }
        put_size = (long long)st.st_size;
        want_status = 204;
    } else if (argc == 8) {
        if (strcmp(argv[7], "close") != 0) {
            fprintf(stderr, "bulkget: the last argument can only be 'close' or put=FILE\n");
            return 2;
        }
        want_close = 1;
    }
    if (nconns <= 0 || nconns > 10000 || duration <= 0 || tail < 0) {
        fprintf(stderr, "bulkget: bad CONNS, DURATION or TAIL\n");
        return 2;
    }
    if (put_fd >= 0)
        request_len = (size_t)snprintf(request, sizeof(request),
                                       "POST %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: bulkget\r\n"
                                       "Accept: */*\r\nContent-Length: %lld\r\n\r\n",
                                       argv[3], argv[1], port, put_size);
    else
        request_len = (size_t)snprintf(request, sizeof(request),
                                       "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: bulkget\r\n"
                                       "Accept: */*\r\n%s\r\n",
                                       argv[3], argv[1], port, want_close ? "Connection: close\r\n" : "");
    if (request_len >= sizeof(request)) {
        fprintf(stderr, "bulkget: path too long\n");
        return 2;
    }
    epfd = epoll_create1(EPOLL_CLOEXEC);
    conns = calloc((size_t)nconns, sizeof(*conns));
    if (epfd < 0 || !conns) {
        perror("bulkget");
        return 2;
    }
    for (i = 0; i < nconns; i++) {
        conns[i].fd = -1;
        conns[i].state = ST_IDLE;
    }

    t0 = now_s();
    deadline = t0 + duration;
    hard_deadline = deadline + tail;
    for (;;) {
        double t = now_s();
        int active = 0, idle = 0, n;

        if (!stopping && t >= deadline)
            stopping = 1;
        if (t >= hard_deadline)
            break;
        for (i = 0; i < nconns; i++) {
            struct conn *c = &conns[i];
            if (c->fd < 0 && !stopping) {
                if (conn_open(c) < 0)
                    ct.conn_errors++;
            }
            if (c->fd >= 0)
                active++;
            else
                idle++;
        }
        if (stopping && active == 0)
            break;
        n = epoll_wait(epfd, evs, 256, idle && !stopping ? 10 : 50);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("bulkget: epoll_wait");
            return 2;
        }
        for (i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c->fd < 0)
                continue;
            if ((evs[i].events & EPOLLOUT) && (c->state != ST_IDLE) && (c->sent < request_len || c->body_left > 0)) {
                if (conn_send(c) < 0) {
                    conn_fail(c, &ct.conn_errors);
                    continue;
                }
            }
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                on_readable(c);
        }
    }
    t_end = now_s();
    for (i = 0; i < nconns; i++) {
        if (conns[i].fd >= 0) {
            if (conns[i].state != ST_IDLE)
                ct.unfinished++;
            conn_close(&conns[i]);
        }
    }
    printf("{\"conns\": %d, \"duration\": %.3f, \"elapsed\": %.6f, \"requests\": %lld, \"ok\": %lld, "
           "\"body_bytes\": %lld, \"head_bytes\": %lld, \"bad_status\": %lld, \"short_bodies\": %lld, "
           "\"bad_heads\": %lld, \"conn_errors\": %lld, \"connects\": %lld, \"unfinished\": %lld, "
           "\"chunked\": %lld, \"chunks\": %lld, \"framing_bytes\": %lld, \"upload_bytes\": %lld}\n",
           nconns, duration, t_end - t0, ct.requests, ct.ok, ct.body_bytes, ct.head_bytes,
           ct.bad_status, ct.short_bodies, ct.bad_heads, ct.conn_errors, ct.connects, ct.unfinished,
           ct.chunked, ct.chunks, ct.framing_bytes, ct.upload_bytes);
    free(conns);
    close(epfd);
    return (ct.bad_status || ct.short_bodies || ct.bad_heads || ct.conn_errors || ct.unfinished) ? 1 : 0;
}
