/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_conninfo.c -- pg.conninfo as libpq reads it: the check that it
 * pg.password.file folded into it, quoted as libpq parses it. Split from
 * config.c, which keeps the keys, their sources and cfg_check_conninfo()
 * (what this relies on). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include "lib/common.h"
#include "lib/config.h"

/* Appends "keyword='value'" to b (n used of cap, grown), quoting the way
 * libpq parses it: backslash before ' and \. */
static void conninfo_append(char **b, size_t *n, size_t *cap, const char *kw,
                            const char *val)
{
	size_t need = *n + strlen(kw) + 2 * strlen(val) + 8;

	if (need > *cap) {
		*cap = need * 2;
		*b = xrealloc(*b, *cap);
	}
	*n += (size_t)snprintf(*b + *n, *cap - *n, "%s%s='", *n > 0 ? " " : "",
	                       kw);
	for (const char *p = val; *p; p++) {
		if (*p == '\\' || *p == '\'')
			(*b)[(*n)++] = '\\';
		(*b)[(*n)++] = *p;
	}
	(*b)[(*n)++] = '\'';
	(*b)[*n] = '\0';
}

int cfg_apply_password_file(struct relay_config *cfg, char *err,
                            size_t errlen)
{
	char pw[1024], *b = NULL, *perr = NULL;
	size_t n = 0, cap = 0, len;
	PQconninfoOption *o;
	FILE *f;

	if (cfg->pg_password_file[0] == '\0' || cfg->pg_conninfo[0] == '\0')
		return 0;
	if (cfg_check_conninfo(cfg, err, errlen) < 0)
		return -1;
	f = fopen(cfg->pg_password_file, "r");
	if (f == NULL) {
		errbuf_set(err, errlen, "pg.password.file: cannot read %s: %s",
		        cfg->pg_password_file, strerror(errno));
		return -1;
	}
	len = fread(pw, 1, sizeof(pw) - 1, f);
	fclose(f);
	pw[len] = '\0';
	/* The first line; a file written by echo or a Secret with a final
	 * newline gives the same password. */
	pw[strcspn(pw, "\r\n")] = '\0';
	len = strlen(pw);
	if (len == 0 || len >= sizeof(pw) - 2) {
		errbuf_set(err, errlen, "pg.password.file: %s holds %s", cfg->
		        pg_password_file, len == 0 ? "no password on its first line"
		                                   : "a first line over 1 KiB");
		explicit_bzero(pw, sizeof(pw));
		return -1;
	}
	o = PQconninfoParse(cfg->pg_conninfo, &perr);
	PQfreemem(perr);
	if (o == NULL) /* cfg_check_conninfo parsed it */
		abort();
	for (PQconninfoOption *opt = o; opt->keyword != NULL; opt++) {
		if (opt->val == NULL)
			continue;
		if (strcmp(opt->keyword, "password") == 0 && opt->val[0] != '\0') {
			errbuf_set(err, errlen, "pg.password.file is set and pg.conninfo "
			        "has a password too: keep one of them");
			PQconninfoFree(o);
			free(b);
			explicit_bzero(pw, sizeof(pw));
			return -1;
		}
		conninfo_append(&b, &n, &cap, opt->keyword, opt->val);
	}
	PQconninfoFree(o);
	conninfo_append(&b, &n, &cap, "password", pw);
	explicit_bzero(pw, sizeof(pw));
	explicit_bzero(cfg->pg_conninfo, strlen(cfg->pg_conninfo));
	free(cfg->pg_conninfo);
	cfg->pg_conninfo = b;
	return 0;
}
