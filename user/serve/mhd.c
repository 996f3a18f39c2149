#include "serve/mhd.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The library's soname (libmicrohttpd-dev's libmicrohttpd.so links to it), then the
 * development name. */
static const char *const libraries[] = { "libmicrohttpd.so.12", "libmicrohttpd.so" };

static struct mhd_api api;
static int loaded; /* 1: api filled; -1: could not be */
static char why[256];

static void *symbol(void *lib, const char *name, int *missing)
{
	void *p = dlsym(lib, name);

	if (!p && !*missing) {
		snprintf(why, sizeof(why), "libmicrohttpd lacks %s", name);
		*missing = 1;
	}
	return p;
}

/* hprof serve loads it once, before its HTTP threads start. */
static void load(void)
{
	void *lib = NULL;
	int missing = 0;

	for (size_t i = 0; i < sizeof(libraries) / sizeof(libraries[0]) && !lib; i++)
		lib = dlopen(libraries[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(why, sizeof(why), "cannot load libmicrohttpd (libmicrohttpd12): %s", dlerror());
		loaded = -1;
		return;
	}
	api.start_daemon = symbol(lib, "MHD_start_daemon", &missing);
	api.stop_daemon = symbol(lib, "MHD_stop_daemon", &missing);
	api.quiesce_daemon = symbol(lib, "MHD_quiesce_daemon", &missing);
	api.queue_response = symbol(lib, "MHD_queue_response", &missing);
	api.create_response_from_buffer = symbol(lib, "MHD_create_response_from_buffer", &missing);
	api.create_response_from_buffer_with_free_callback =
		symbol(lib, "MHD_create_response_from_buffer_with_free_callback", &missing);
	api.destroy_response = symbol(lib, "MHD_destroy_response", &missing);
	api.add_response_header = symbol(lib, "MHD_add_response_header", &missing);
	api.get_connection_info = symbol(lib, "MHD_get_connection_info", &missing);
	api.lookup_connection_value_n = symbol(lib, "MHD_lookup_connection_value_n", &missing);
	loaded = missing ? -1 : 1;
}

const struct mhd_api *mhd__load(char *err, size_t errlen)
{
	if (!loaded)
		load();
	if (loaded < 0 && err && errlen)
		snprintf(err, errlen, "%s", why);
	return loaded > 0 ? &api : NULL;
}
