/*
 * chunkorigin: an HTTP/1.1 origin that answers with chunked bodies of fixed chunk sizes
 * (splicer benchmarks: benchmarks/chunk_crossover.py).
 *
 * For every SIZE given, `GET /c/SIZE` is answered 200 with `Transfer-Encoding: chunked` and
 * the contents of BODYFILE as the body, cut into chunks of exactly SIZE bytes (the last one
 * shorter when SIZE does not divide the file's length), then the last-chunk "0" and no
 * trailers. Any other path gets an empty 404. Connections are kept alive unless the request
 * says `Connection: close` or is HTTP/1.0.
 *
 * Each whole response (head and chunked body) is built once at start-up in a memfd and sent
 * with sendfile(2), so serving costs about what nginx's sendfile does: the origin's CPU is
 * not what is measured. One thread, epoll, non-blocking sockets; requests on a connection
 * are answered one after another (pipelined ones wait in the connection's buffer).
 *
 * Usage: chunkorigin BODYFILE PORT[,PORT...] SIZE...
 *   BODYFILE  the body (read once)
 *   PORT      127.0.0.1 ports to listen on (comma-separated)
 *   SIZE      chunk sizes in bytes (1 .. the body's length)
 *
 * Runs until killed (SIGTERM, SIGINT). Exit status 2 on usage or setup errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PORTS 8
#define MAX_SIZES 64
#define RBUF 8192

struct resp {
    long long size;            /* chunk size; the path is /c/SIZE */
    char path[32];
    int fd;                    /* memfd holding the whole response */
    off_t len;
};

struct conn {
    int fd;
    int listener;              /* a listening socket (the other fields unused) */
    const struct resp *r;      /* response being sent, or NULL */
    const char *small;         /* short response (404) being sent from memory, or NULL */
    size_t small_len;
    off_t off;                 /* bytes of the response sent so far */
    int close_after;
    unsigned events;           /* the epoll events registered */
    size_t rlen;               /* bytes in rbuf */
    char rbuf[RBUF + 1];
};

static const char not_found[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
static struct resp resps[MAX_SIZES];
static int nresps;
static int epfd;

static void die(const char *what)
{
    perror(what);
    exit(2);
}

static void watch(struct conn *c, int op, unsigned events)
{
    struct epoll_event ev;
    if (op == EPOLL_CTL_MOD && c->events == events)
        return;
    c->events = events;
    memset(&ev, 0, sizeof(ev));
    ev.events = events;
    ev.data.ptr = c;
    if (epoll_ctl(epfd, op, c->fd, &ev) < 0)
        die("chunkorigin: epoll_ctl");
}

static void conn_close(struct conn *c)
{
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
}

/* Build the response for chunk size `size` from body[0..blen) in a memfd. */
static void build(struct resp *r, const char *body, off_t blen)
{
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    off_t pos = 0;
    size_t cap = (size_t)blen + sizeof(head) + ((size_t)blen / (size_t)r->size + 2) * 24, n = 0;
    char *buf = malloc(cap);

    if (!buf)
        die("chunkorigin: malloc");
    memcpy(buf, head, sizeof(head) - 1);
    n = sizeof(head) - 1;
    while (pos < blen) {
        off_t k = blen - pos < r->size ? blen - pos : r->size;
        n += (size_t)sprintf(buf + n, "%llx\r\n", (long long)k);
        memcpy(buf + n, body + pos, (size_t)k);
        n += (size_t)k;
        memcpy(buf + n, "\r\n", 2);
        n += 2;
        pos += k;
    }
    memcpy(buf + n, "0\r\n\r\n", 5);
    n += 5;
    r->fd = memfd_create("chunkorigin", MFD_CLOEXEC);
    if (r->fd < 0)
        die("chunkorigin: memfd_create");
    for (size_t w = 0; w < n;) {
        ssize_t k = write(r->fd, buf + w, n - w);
        if (k < 0)
            die("chunkorigin: write");
        w += (size_t)k;
    }
    r->len = (off_t)n;
    free(buf);
}

/* Send what remains of the current response. Returns 1 when it is all sent, 0 when the
 * socket is full, -1 on error. */
static int send_more(struct conn *c)
{
    if (c->small) {
        while ((size_t)c->off < c->small_len) {
            ssize_t n = send(c->fd, c->small + c->off, c->small_len - (size_t)c->off, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    return 0;
                if (errno == EINTR)
                    continue;
                return -1;
            }
            c->off += n;
        }
        return 1;
    }
    while (c->off < c->r->len) {
        ssize_t n = sendfile(c->fd, c->r->fd, &c->off, (size_t)(c->r->len - c->off));
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            return -1;
    }
    return 1;
}

/* Answer the complete requests in rbuf, one after another, until the socket is full.
 * Returns -1 when the connection is to be closed. */
static int serve(struct conn *c)
{
    for (;;) {
        char *end, *sp, *line_end;
        size_t hlen;
        int st;

        if (c->r || c->small) {
            st = send_more(c);
            if (st < 0)
                return -1;
            if (st == 0) {
                watch(c, EPOLL_CTL_MOD, EPOLLOUT);
                return 0;
            }
            c->r = NULL;
            c->small = NULL;
            if (c->close_after)
                return -1;
        }
        c->rbuf[c->rlen] = 0;
        end = strstr(c->rbuf, "\r\n\r\n");
        if (!end) {
            if (c->rlen >= RBUF)
                return -1;  /* request head too large */
            watch(c, EPOLL_CTL_MOD, EPOLLIN);
            return 0;
        }
        hlen = (size_t)(end - c->rbuf) + 4;
        line_end = strstr(c->rbuf, "\r\n");
        *end = 0;  /* look at this head only (a pipelined request may follow) */
        c->close_after = (line_end - c->rbuf >= 8 && memcmp(line_end - 8, "HTTP/1.0", 8) == 0)
                         || strcasestr(c->rbuf, "\nConnection: close") != NULL;
        c->small = not_found;
        c->small_len = sizeof(not_found) - 1;
        if ((strncmp(c->rbuf, "GET ", 4) == 0) && (sp = memchr(c->rbuf + 4, ' ', (size_t)(line_end - c->rbuf - 4)))) {
            size_t plen = (size_t)(sp - c->rbuf - 4);
            for (int i = 0; i < nresps; i++) {
                if (strlen(resps[i].path) == plen && memcmp(resps[i].path, c->rbuf + 4, plen) == 0) {
                    c->r = &resps[i];
                    c->small = NULL;
                    break;
                }
            }
        }
        c->off = 0;
        memmove(c->rbuf, c->rbuf + hlen, c->rlen - hlen);
        c->rlen -= hlen;
    }
}

static void on_readable(struct conn *c)
{
    ssize_t n = recv(c->fd, c->rbuf + c->rlen, RBUF - c->rlen, 0);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        conn_close(c);
        return;
    }
    if (n == 0) {
        conn_close(c);
        return;
    }
    c->rlen += (size_t)n;
    if (serve(c) < 0)
        conn_close(c);
}

static void on_accept(struct conn *l)
{
    for (;;) {
        int one = 1, fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct conn *c;
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED || errno == EINTR)
                return;
            perror("chunkorigin: accept4");
            return;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c = calloc(1, sizeof(*c));
        if (!c)
            die("chunkorigin: calloc");
        c->fd = fd;
        watch(c, EPOLL_CTL_ADD, EPOLLIN);
    }
}

int main(int argc, char **argv)
{
    int fd, nports = 0;
    struct stat st;
    char *body, *ports, *tok, *save = NULL;
    struct epoll_event evs[256];

    if (argc < 4 || argc - 3 > MAX_SIZES) {
        fprintf(stderr, "usage: %s BODYFILE PORT[,PORT...] SIZE...\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0)
        die("chunkorigin: body file");
    body = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (body == MAP_FAILED)
        die("chunkorigin: mmap");
    for (int i = 3; i < argc; i++) {
        char *e;
        long long size = strtoll(argv[i], &e, 10);
        if (*e || size <= 0 || size > st.st_size) {
            fprintf(stderr, "chunkorigin: bad SIZE %s (1 .. %lld)\n", argv[i], (long long)st.st_size);
            return 2;
        }
        resps[nresps].size = size;
        snprintf(resps[nresps].path, sizeof(resps[nresps].path), "/c/%lld", size);
        build(&resps[nresps++], body, st.st_size);
    }
    munmap(body, (size_t)st.st_size);
    close(fd);

    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        die("chunkorigin: epoll_create1");
    ports = argv[2];
    for (tok = strtok_r(ports, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        struct sockaddr_in addr;
        int one = 1, port = atoi(tok);
        struct conn *l = calloc(1, sizeof(*l));
        if (!l)
            die("chunkorigin: calloc");
        if (port <= 0 || port > 65535 || ++nports > MAX_PORTS) {
            fprintf(stderr, "chunkorigin: bad PORT %s\n", tok);
            return 2;
        }
        memset(&addr, 0, sizeof(addr));
        addr.sin_family = AF_INET;
        addr.sin_port = htons((unsigned short)port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        l->listener = 1;
        if (l->fd < 0)
            die("chunkorigin: socket");
        setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(l->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(l->fd, 1024) < 0)
            die("chunkorigin: bind/listen");
        watch(l, EPOLL_CTL_ADD, EPOLLIN);
    }
    for (;;) {
        int n = epoll_wait(epfd, evs, 256, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("chunkorigin: epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c->listener)
                on_accept(c);
            else if (c->r || c->small) {
                if (serve(c) < 0)
                    conn_close(c);
            } else
                on_readable(c);
        }
    }
}
