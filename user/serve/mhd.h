/* libmicrohttpd, loaded when hprof serve starts rather than linked: a recording then never
 * maps it, nor the TLS libraries it links (gnutls, nettle, p11-kit, gmp: ~3 MiB of RSS
 * for every run). Only the functions user/serve/http.c calls. */
#ifndef HPROF_SERVE_MHD_H
#define HPROF_SERVE_MHD_H

#include <stddef.h>
#include <sys/socket.h>
#include <microhttpd.h>

struct mhd_api {
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_quiesce_daemon) *quiesce_daemon;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
	__typeof__(MHD_create_response_from_buffer_with_free_callback)
		*create_response_from_buffer_with_free_callback;
	__typeof__(MHD_destroy_response) *destroy_response;
	__typeof__(MHD_add_response_header) *add_response_header;
	__typeof__(MHD_get_connection_info) *get_connection_info;
	__typeof__(MHD_lookup_connection_value_n) *lookup_connection_value_n;
};

/* The library's functions, loaded on first call (the library stays loaded). NULL when it
 * cannot be, with a one-line reason in err. */
const struct mhd_api *mhd__load(char *err, size_t errlen);

#endif
