/*
 * TLS - a connection's records read and written by the engine with OpenSSL (haproxy's
 * ssl_sock transport under its raw_sock one): the server side of a client's TLS session.
 *
 * A context (struct spl_tls_ctx) holds one certificate chain and its key, loaded at start
 * from PEM files and checked to match; an SSL object is made per connection, in accept
 * state, and the handshake is driven by the first read of the connection's first head job
 * (SSL_peek performs it), non-blocking, on the engine's events. spl_tls_recv() and
 * spl_tls_send() stand in for recv(2) and send(2) on such a socket: the same returns, with
 * errno EAGAIN while the record layer waits for the socket (either way: the epoll
 * registration asks for both), EPROTO for a handshake failure or a bad record, and 0 for the
 * peer's close_notify or an end of stream. Renegotiation is refused (SSL_OP_NO_RENEGOTIATION),
 * TLS 1.2 is the floor (haproxy's default), and idle connections keep no record buffers
 * (SSL_MODE_RELEASE_BUFFERS). Bodies on such a socket are copied: splice(2) cannot carry
 * user-space records. Sessions write with send(MSG_NOSIGNAL) (spl_bio_write), never raising
 * SIGPIPE.
 *
 * A bind's default context hands server names on to others (SNI: spl_tls_ctx_sni, names from
 * certificates: spl_tls_ctx_names) and offers its ALPN list whichever answers
 * (spl_tls_ctx_alpn); versions, ciphers and the session cache are tuned per context
 * (spl_tls_ctx_tune), client certificates verified (spl_tls_ctx_verify). What a handshake
 * settled is kept once, for the fetches (spl_tls_capture, spl_tls_info_of).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#include "splicer/engine.h"
#include "tls.h"

#ifdef SPL_HAVE_TLS
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define SPL_TLS_NAME_MAX 256 /* a server name's bytes at most (DNS: 253) */

/* One server name a bind answers with another context (SNI, haproxy's crt list). */
struct spl_tls_sni {
	char name[SPL_TLS_NAME_MAX]; /* lower case; "*.example.com" matches one label */
	struct spl_tls_ctx *ctx;
};

struct spl_tls_ctx {
	SSL_CTX *ctx;
	struct spl_tls_sni *sni;     /* this context as a bind's default: the names it hands on */
	uint32_t nsni, capsni;
	uint8_t alpn[256];           /* protocols offered, ALPN wire format; alpn_len 0 = none */
	uint32_t alpn_len;
};

/* A connection's session: OpenSSL's, and what its handshake settled, kept once it completed
 * (spl_tls_info: read by the caller after the completion of the job that did the handshake). */
struct spl_tls {
	SSL *ssl;
	int captured;
	struct spl_tls_info info;
};

/* "file: what (OpenSSL's reason)" into err[0..errlen); clears OpenSSL's error queue. */
static void spl_tls_error(char *err, size_t errlen, const char *what, const char *file)
{
	unsigned long code = 0, e;
	const char *reason = NULL;
	int sys = 0;

	while ((e = ERR_get_error()) != 0) { /* the queue, oldest first: keep the last, and a system error */
		code = e;
		if (ERR_SYSTEM_ERROR(e) && sys == 0)
			sys = ERR_GET_REASON(e); /* a file that cannot be opened: its errno */
	}
	if (sys != 0)
		reason = strerror(sys);
	else if (code != 0)
		reason = ERR_reason_error_string(code);
	if (code != 0 && ERR_GET_LIB(code) == ERR_LIB_X509 && ERR_GET_REASON(code) == X509_R_KEY_VALUES_MISMATCH)
		what = "the private key does not match the certificate";

	if (err != NULL && errlen > 0) {
		if (reason != NULL)
			snprintf(err, errlen, "%s: %s (%s)", file, what, reason);
		else
			snprintf(err, errlen, "%s: %s", file, what);
	}
	ERR_clear_error();
}

int spl_tls_available(void)
{
	return 1;
}

int spl_tls_ctx_new(const char *cert_file, const char *key_file, char *err, size_t errlen,
		    struct spl_tls_ctx **out)
{
	struct spl_tls_ctx *c;
	SSL_CTX *ctx;

	if (cert_file == NULL || out == NULL)
		return -EINVAL;
	if (key_file == NULL || key_file[0] == '\0')
		key_file = cert_file; /* haproxy's `crt`: one PEM with the chain and the key */
	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL) {
		spl_tls_error(err, errlen, "cannot make a TLS context", cert_file);
		return -ENOMEM;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
		spl_tls_error(err, errlen, "cannot load the certificate chain", cert_file);
		SSL_CTX_free(ctx);
		return -EINVAL;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
		spl_tls_error(err, errlen, "cannot load the private key", key_file);
		SSL_CTX_free(ctx);
		return -EINVAL;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		spl_tls_error(err, errlen, "the private key does not match the certificate", key_file);
		SSL_CTX_free(ctx);
		return -EINVAL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	/* a peer that closes without close_notify ends the session as an end of stream would
	 * (as haproxy and nginx read it; HTTP's own framing tells a cut message) */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	/* records read in as the socket holds them, not header then body: measured 9 % less CPU
	 * per keep-alive request (docs/tls.md); what is read ahead waits in the session, so the
	 * engine never takes a TLS socket for empty (engine.c spl_saw_read) */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
				      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		SSL_CTX_free(ctx);
		return -ENOMEM;
	}
	c->ctx = ctx;
	*out = c;
	return 0;
}

void spl_tls_ctx_free(struct spl_tls_ctx *c)
{
	if (c == NULL)
		return;
	SSL_CTX_free(c->ctx);
	free(c->sni);
	free(c);
}

/* The context that answers server name `name` (lower-cased into low[]): an exact name first,
 * then a wildcard for its first label, else NULL (the default answers: haproxy's order). */
static struct spl_tls_ctx *spl_tls_pick(const struct spl_tls_ctx *d, const char *name)
{
	char low[SPL_TLS_NAME_MAX];
	const char *dot;
	size_t i, n = strlen(name);
	uint32_t k;

	if (n == 0 || n >= sizeof(low))
		return NULL;
	for (i = 0; i <= n; i++)
		low[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
	for (k = 0; k < d->nsni; k++)
		if (strcmp(d->sni[k].name, low) == 0)
			return d->sni[k].ctx;
	dot = strchr(low, '.');
	if (dot == NULL || dot == low)
		return NULL;
	for (k = 0; k < d->nsni; k++)
		if (d->sni[k].name[0] == '*' && strcmp(d->sni[k].name + 1, dot) == 0)
			return d->sni[k].ctx;
	return NULL;
}

/* OpenSSL's servername callback on a bind's default context: switches the session to the
 * context of the name the client asked for; an unknown or absent name keeps the default. */
static int spl_tls_servername(SSL *ssl, int *alert, void *arg)
{
	const struct spl_tls_ctx *d = arg;
	const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	struct spl_tls_ctx *c;

	(void)alert;
	if (name == NULL)
		return SSL_TLSEXT_ERR_NOACK;
	c = spl_tls_pick(d, name);
	if (c != NULL && SSL_set_SSL_CTX(ssl, c->ctx) == NULL)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	return SSL_TLSEXT_ERR_OK;
}

static int spl_tls_alpn_pick(SSL *ssl, const unsigned char **out, unsigned char *outlen,
			     const unsigned char *in, unsigned int inlen, void *arg);

int spl_tls_ctx_sni(struct spl_tls_ctx *dflt, const char *name, struct spl_tls_ctx *c)
{
	size_t i, n;

	if (dflt == NULL || c == NULL || name == NULL)
		return -EINVAL;
	n = strlen(name);
	if (n == 0 || n >= SPL_TLS_NAME_MAX || (name[0] == '*' && name[1] != '.'))
		return -EINVAL;
	if (dflt->nsni == dflt->capsni) {
		uint32_t cap = dflt->capsni ? dflt->capsni * 2 : 8;
		struct spl_tls_sni *t = realloc(dflt->sni, cap * sizeof(*t));

		if (t == NULL)
			return -ENOMEM;
		dflt->sni = t;
		dflt->capsni = cap;
	}
	for (i = 0; i <= n; i++)
		dflt->sni[dflt->nsni].name[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
	dflt->sni[dflt->nsni].ctx = c;
	dflt->nsni++;
	if (dflt->alpn_len > 0) /* the bind's protocols, whichever certificate answers */
		SSL_CTX_set_alpn_select_cb(c->ctx, spl_tls_alpn_pick, dflt);
	SSL_CTX_set_tlsext_servername_callback(dflt->ctx, spl_tls_servername);
	SSL_CTX_set_tlsext_servername_arg(dflt->ctx, dflt);
	return 0;
}

/* OpenSSL's ALPN callback: the first of the context's protocols the client offers; none in
 * common: no ALPN in the answer, the handshake goes on (what haproxy does). */
static int spl_tls_alpn_pick(SSL *ssl, const unsigned char **out, unsigned char *outlen,
			     const unsigned char *in, unsigned int inlen, void *arg)
{
	const struct spl_tls_ctx *c = arg;
	unsigned char *sel;

	(void)ssl;
	if (SSL_select_next_proto(&sel, outlen, c->alpn, c->alpn_len, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

int spl_tls_ctx_alpn(struct spl_tls_ctx *c, const uint8_t *protos, uint32_t len)
{
	uint32_t i;

	if (c == NULL || len > sizeof(c->alpn) || (len > 0 && protos == NULL))
		return -EINVAL;
	for (i = 0; i < len; i += 1u + protos[i]) /* wire format: length-prefixed names */
		if (protos[i] == 0 || i + 1u + protos[i] > len)
			return -EINVAL;
	memcpy(c->alpn, protos, len);
	c->alpn_len = len;
	/* the bind's protocols: on its default context and on those its names hand on to (the
	 * session's context is the one SNI picked when ALPN is settled) */
	SSL_CTX_set_alpn_select_cb(c->ctx, len ? spl_tls_alpn_pick : NULL, len ? c : NULL);
	for (i = 0; i < c->nsni; i++)
		SSL_CTX_set_alpn_select_cb(c->sni[i].ctx->ctx, len ? spl_tls_alpn_pick : NULL, len ? c : NULL);
	return 0;
}

int spl_tls_ctx_tune(struct spl_tls_ctx *c, uint32_t min_ver, uint32_t max_ver, const char *ciphers,
		     const char *suites, const char *curves, uint32_t cache_size, uint32_t lifetime_s,
		     char *err, size_t errlen)
{
	if (c == NULL)
		return -EINVAL;
	ERR_clear_error();
	if ((min_ver && SSL_CTX_set_min_proto_version(c->ctx, (int)min_ver) != 1) ||
	    (max_ver && SSL_CTX_set_max_proto_version(c->ctx, (int)max_ver) != 1)) {
		spl_tls_error(err, errlen, "unknown TLS version", "ssl-min-ver/ssl-max-ver");
		return -EINVAL;
	}
	if (ciphers != NULL && ciphers[0] != '\0' && SSL_CTX_set_cipher_list(c->ctx, ciphers) != 1) {
		spl_tls_error(err, errlen, "no cipher of the list is known", ciphers);
		return -EINVAL;
	}
	if (suites != NULL && suites[0] != '\0' && SSL_CTX_set_ciphersuites(c->ctx, suites) != 1) {
		spl_tls_error(err, errlen, "no TLS 1.3 cipher suite of the list is known", suites);
		return -EINVAL;
	}
	if (curves != NULL && curves[0] != '\0' && SSL_CTX_set1_groups_list(c->ctx, curves) != 1) {
		spl_tls_error(err, errlen, "unknown curve", curves);
		return -EINVAL;
	}
	if (cache_size != 0)
		SSL_CTX_sess_set_cache_size(c->ctx, cache_size);
	if (lifetime_s != 0)
		SSL_CTX_set_timeout(c->ctx, (long)lifetime_s);
	return 0;
}

int spl_tls_ctx_verify(struct spl_tls_ctx *c, uint32_t mode, const char *ca_file, const char *crl_file,
		       char *err, size_t errlen)
{
	STACK_OF(X509_NAME) *names;

	if (c == NULL || mode > SPL_TLS_VERIFY_REQUIRED)
		return -EINVAL;
	ERR_clear_error();
	if (mode == SPL_TLS_VERIFY_NONE) {
		SSL_CTX_set_verify(c->ctx, SSL_VERIFY_NONE, NULL);
		return 0;
	}
	if (ca_file == NULL || ca_file[0] == '\0') {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "verify %s needs a ca-file", mode == SPL_TLS_VERIFY_REQUIRED ? "required" : "optional");
		return -EINVAL;
	}
	if (SSL_CTX_load_verify_locations(c->ctx, ca_file, NULL) != 1) {
		spl_tls_error(err, errlen, "cannot load the CA certificates", ca_file);
		return -EINVAL;
	}
	names = SSL_load_client_CA_file(ca_file); /* the CAs named in the certificate request */
	if (names != NULL)
		SSL_CTX_set_client_CA_list(c->ctx, names);
	if (crl_file != NULL && crl_file[0] != '\0') {
		X509_STORE *store = SSL_CTX_get_cert_store(c->ctx);
		X509_LOOKUP *lookup = X509_STORE_add_lookup(store, X509_LOOKUP_file());

		if (lookup == NULL || X509_load_crl_file(lookup, crl_file, X509_FILETYPE_PEM) <= 0) {
			spl_tls_error(err, errlen, "cannot load the CRL", crl_file);
			return -EINVAL;
		}
		X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL);
	}
	SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER |
			   (mode == SPL_TLS_VERIFY_REQUIRED ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), NULL);
	ERR_clear_error();
	return 0;
}

int spl_tls_ctx_names(const struct spl_tls_ctx *c, char *out, size_t outlen)
{
	X509 *cert;
	GENERAL_NAMES *sans;
	size_t used = 0;
	int i, n, count = 0;

	if (c == NULL || out == NULL || outlen == 0)
		return -EINVAL;
	out[0] = '\0';
	cert = SSL_CTX_get0_certificate(c->ctx);
	if (cert == NULL)
		return 0;
	sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	n = sans ? sk_GENERAL_NAME_num(sans) : 0;
	for (i = 0; i < n; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		const unsigned char *dns;
		int len;

		if (g->type != GEN_DNS)
			continue;
		dns = ASN1_STRING_get0_data(g->d.dNSName);
		len = ASN1_STRING_length(g->d.dNSName);
		if (len <= 0 || (size_t)len >= SPL_TLS_NAME_MAX || memchr(dns, '\0', (size_t)len) != NULL)
			continue;
		if (used + (size_t)len + 2 > outlen)
			break;
		memcpy(out + used, dns, (size_t)len);
		used += (size_t)len;
		out[used++] = '\n';
		out[used] = '\0';
		count++;
	}
	GENERAL_NAMES_free(sans);
	if (count == 0) { /* no DNS name among the alternative names: the subject's CN */
		int k = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, out,
						   (int)(outlen > 1 ? outlen - 1 : 0));

		if (k > 0 && (size_t)k + 1 < outlen) {
			out[k] = '\n';
			out[k + 1] = '\0';
			count = 1;
		} else {
			out[0] = '\0';
		}
	}
	return count;
}

/* OpenSSL's socket BIO writes with write(2): a write to a peer that reset the connection
 * raises SIGPIPE, which kills a process that does not ignore it. The engine's sessions write
 * with send(MSG_NOSIGNAL) instead, as its plain writes do (spl_send); the rest is the socket
 * BIO's. Made once, for the process. */
static BIO_METHOD *spl_bio_method;
static pthread_once_t spl_bio_once = PTHREAD_ONCE_INIT;

static int spl_bio_write(BIO *b, const char *buf, int len)
{
	int fd = -1;
	ssize_t n;

	(void)BIO_get_fd(b, &fd);
	n = send(fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	BIO_clear_retry_flags(b);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_write(b);
	return (int)n;
}

static void spl_bio_make(void)
{
	const BIO_METHOD *sock = BIO_s_socket();
	BIO_METHOD *m = BIO_meth_new(BIO_TYPE_SOCKET, "splicer socket");

	if (m == NULL)
		return;
	if (BIO_meth_set_write(m, spl_bio_write) != 1 || BIO_meth_set_read(m, BIO_meth_get_read(sock)) != 1 ||
	    BIO_meth_set_puts(m, BIO_meth_get_puts(sock)) != 1 || BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock)) != 1 ||
	    BIO_meth_set_create(m, BIO_meth_get_create(sock)) != 1 ||
	    BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock)) != 1) {
		BIO_meth_free(m);
		return;
	}
	spl_bio_method = m;
}

int spl_tls_new(struct spl_tls_ctx *c, int fd, struct spl_tls **out)
{
	struct spl_tls *t;
	BIO *bio;

	if (pthread_once(&spl_bio_once, spl_bio_make) != 0 || spl_bio_method == NULL)
		return -ENOMEM;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	ERR_clear_error();
	t->ssl = SSL_new(c->ctx);
	bio = t->ssl != NULL ? BIO_new(spl_bio_method) : NULL;
	if (bio == NULL) {
		ERR_clear_error();
		SSL_free(t->ssl);
		free(t);
		return -ENOMEM;
	}
	BIO_set_fd(bio, fd, BIO_NOCLOSE);
	SSL_set_bio(t->ssl, bio, bio); /* the session owns it now */
	SSL_set_accept_state(t->ssl);
	*out = t;
	return 0;
}

/* A distinguished name as one line ("/C=FR/O=x/CN=y", haproxy's ssl_c_s_dn form). */
static void spl_tls_dn(X509_NAME *name, char *out, size_t outlen)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n;

	out[0] = '\0';
	if (b == NULL)
		return;
	if (X509_NAME_print_ex(b, name, 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB) >= 0) {
		n = BIO_read(b, out, (int)outlen - 1);
		out[n > 0 ? n : 0] = '\0';
	}
	BIO_free(b);
}

/* Keeps what the completed handshake settled (struct spl_tls_info), once. */
static void spl_tls_capture(struct spl_tls *t)
{
	struct spl_tls_info *i = &t->info;
	const char *v;
	const unsigned char *alpn;
	unsigned int alen, mdlen;
	X509 *peer;

	t->captured = 1;
	i->version = (uint32_t)SSL_version(t->ssl);
	i->reused = (uint32_t)SSL_session_reused(t->ssl);
	v = SSL_get_cipher_name(t->ssl);
	snprintf(i->cipher, sizeof(i->cipher), "%s", v ? v : "");
	v = SSL_get_servername(t->ssl, TLSEXT_NAMETYPE_host_name);
	snprintf(i->sni, sizeof(i->sni), "%s", v ? v : "");
	SSL_get0_alpn_selected(t->ssl, &alpn, &alen);
	if (alen >= sizeof(i->alpn))
		alen = sizeof(i->alpn) - 1;
	memcpy(i->alpn, alpn, alen);
	i->alpn[alen] = '\0';
	i->verify = (int32_t)SSL_get_verify_result(t->ssl);
	peer = SSL_get1_peer_certificate(t->ssl);
	if (peer != NULL) {
		i->cert_used = 1;
		spl_tls_dn(X509_get_subject_name(peer), i->c_s_dn, sizeof(i->c_s_dn));
		spl_tls_dn(X509_get_issuer_name(peer), i->c_i_dn, sizeof(i->c_i_dn));
		mdlen = sizeof(i->c_sha1);
		if (X509_digest(peer, EVP_sha1(), i->c_sha1, &mdlen) != 1)
			memset(i->c_sha1, 0, sizeof(i->c_sha1));
		X509_free(peer);
	}
	ERR_clear_error();
}

int spl_tls_info_of(const struct spl_tls *t, struct spl_tls_info *out)
{
	if (t == NULL || !t->captured)
		return -ENOENT;
	*out = t->info;
	return 0;
}

/* Maps a failed SSL_peek/SSL_read/SSL_write (ret <= 0) to recv(2)'s way: 0 for an end of
 * stream, else -1 with errno set. */
static ssize_t spl_tls_fail(SSL *ssl, int ret)
{
	int e = SSL_get_error(ssl, ret);
	int saved = errno;

	ERR_clear_error();
	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0; /* close_notify */
	case SSL_ERROR_SYSCALL:
		if (ret == 0 || saved == 0)
			return 0; /* an end of stream without close_notify: the peer is gone */
		errno = saved;
		return -1;
	default: /* SSL_ERROR_SSL: a handshake failure, a bad record */
		errno = EPROTO;
		return -1;
	}
}

/* One SSL_peek, SSL_read (buf is written) or SSL_write (buf is read) of at most len bytes. */
static int spl_tls_io(SSL *ssl, void *buf, size_t len, int op)
{
	int want = len > (size_t)INT32_MAX ? INT32_MAX : (int)len;

	ERR_clear_error(); /* SSL_get_error() reads the queue: nothing stale in it */
	errno = 0;
	if (op == 0)
		return SSL_peek(ssl, buf, want);
	return op == 1 ? SSL_read(ssl, buf, want) : SSL_write(ssl, buf, want);
}

ssize_t spl_tls_recv(struct spl_tls *t, void *buf, size_t len, int peek)
{
	int n;

	if (len == 0)
		return 0;
	n = spl_tls_io(t->ssl, buf, len, peek ? 0 : 1);
	if (n > 0 && !t->captured)
		spl_tls_capture(t); /* the first bytes: the handshake is through */
	return n > 0 ? n : spl_tls_fail(t->ssl, n);
}

ssize_t spl_tls_send(struct spl_tls *t, const void *buf, size_t len)
{
	int n;

	if (len == 0)
		return 0;
	n = spl_tls_io(t->ssl, (void *)buf, len, 2);
	if (n > 0)
		return n;
	if (spl_tls_fail(t->ssl, n) == 0)
		errno = EPIPE; /* nothing can be written to a session that ended */
	return -1;
}

void spl_tls_notify(struct spl_tls *t)
{
	if (SSL_is_init_finished(t->ssl) && !(SSL_get_shutdown(t->ssl) & SSL_SENT_SHUTDOWN))
		(void)SSL_shutdown(t->ssl); /* one try: the socket may be full or gone */
	ERR_clear_error();
}

void spl_tls_free(struct spl_tls *t, int notify)
{
	if (t == NULL)
		return;
	if (notify && SSL_is_init_finished(t->ssl))
		(void)SSL_shutdown(t->ssl); /* one try at close_notify: the socket may be full or gone */
	ERR_clear_error();
	SSL_free(t->ssl);
	free(t);
}

#else /* !SPL_HAVE_TLS: built without OpenSSL's headers */

int spl_tls_available(void)
{
	return 0;
}

int spl_tls_ctx_new(const char *cert_file, const char *key_file, char *err, size_t errlen,
		    struct spl_tls_ctx **out)
{
	(void)key_file;
	(void)out;
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s: splicer was built without OpenSSL (libssl-dev)",
			 cert_file ? cert_file : "");
	return -ENOTSUP;
}

void spl_tls_ctx_free(struct spl_tls_ctx *c)
{
	(void)c;
}

int spl_tls_ctx_sni(struct spl_tls_ctx *dflt, const char *name, struct spl_tls_ctx *c)
{
	(void)dflt;
	(void)name;
	(void)c;
	return -ENOTSUP;
}

int spl_tls_ctx_alpn(struct spl_tls_ctx *c, const uint8_t *protos, uint32_t len)
{
	(void)c;
	(void)protos;
	(void)len;
	return -ENOTSUP;
}

int spl_tls_ctx_names(const struct spl_tls_ctx *c, char *out, size_t outlen)
{
	(void)c;
	(void)out;
	(void)outlen;
	return -ENOTSUP;
}

int spl_tls_ctx_verify(struct spl_tls_ctx *c, uint32_t mode, const char *ca_file, const char *crl_file,
		       char *err, size_t errlen)
{
	(void)c;
	(void)mode;
	(void)ca_file;
	(void)crl_file;
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "splicer was built without OpenSSL (libssl-dev)");
	return -ENOTSUP;
}

int spl_tls_info_of(const struct spl_tls *t, struct spl_tls_info *out)
{
	(void)t;
	(void)out;
	return -ENOTSUP;
}

int spl_tls_ctx_tune(struct spl_tls_ctx *c, uint32_t min_ver, uint32_t max_ver, const char *ciphers,
		     const char *suites, const char *curves, uint32_t cache_size, uint32_t lifetime_s,
		     char *err, size_t errlen)
{
	(void)c;
	(void)min_ver;
	(void)max_ver;
	(void)ciphers;
	(void)suites;
	(void)curves;
	(void)cache_size;
	(void)lifetime_s;
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "splicer was built without OpenSSL (libssl-dev)");
	return -ENOTSUP;
}

int spl_tls_new(struct spl_tls_ctx *c, int fd, struct spl_tls **out)
{
	(void)c;
	(void)fd;
	(void)out;
	return -ENOTSUP;
}

ssize_t spl_tls_recv(struct spl_tls *t, void *buf, size_t len, int peek)
{
	(void)t;
	(void)buf;
	(void)len;
	(void)peek;
	errno = ENOTSUP;
	return -1;
}

ssize_t spl_tls_send(struct spl_tls *t, const void *buf, size_t len)
{
	(void)t;
	(void)buf;
	(void)len;
	errno = ENOTSUP;
	return -1;
}

void spl_tls_notify(struct spl_tls *t)
{
	(void)t;
}

void spl_tls_free(struct spl_tls *t, int notify)
{
	(void)t;
	(void)notify;
}

#endif
