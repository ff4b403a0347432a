/* SPDX-License-Identifier: Apache-2.0 */
/* slot_figures.c -- the pure helpers of slot_figures.h. */
#include <string.h>

#include "pg/slot_figures.h"

static const char *const wal_names[] = {
	[WAL_STATUS_UNKNOWN] = "",
	[WAL_STATUS_RESERVED] = "reserved",
	[WAL_STATUS_EXTENDED] = "extended",
	[WAL_STATUS_UNRESERVED] = "unreserved",
	[WAL_STATUS_LOST] = "lost",
};

const char *wal_status_name(enum wal_status w)
{
	return (size_t)w < sizeof(wal_names) / sizeof(wal_names[0]) ? wal_names[w]
	                                                            : "";
}

enum wal_status wal_status_parse(const char *s)
{
	for (size_t i = 1; i < sizeof(wal_names) / sizeof(wal_names[0]); i++)
		if (strcmp(s, wal_names[i]) == 0)
			return (enum wal_status)i;
	return WAL_STATUS_UNKNOWN;
}

bool slot_figures_invalidated(const struct slot_figures *sf)
{
	return sf->wal_status == WAL_STATUS_LOST ||
	       sf->invalidation_reason[0] != '\0' ||
	       sf->conflicting == SLOT_FLAG_TRUE;
}

int64_t slot_standby_lag(const struct slot_figures *sf,
                         const struct slot_standby *sb)
{
	if (!sf->valid || !sf->slot_exists ||
	    sf->confirmed_flush_lsn == LSN_INVALID || !sb->reachable ||
	    !sb->slot_exists || sb->confirmed_flush_lsn == LSN_INVALID)
		return -1;
	if (sb->confirmed_flush_lsn >= sf->confirmed_flush_lsn)
		return 0;
	return (int64_t)(sf->confirmed_flush_lsn - sb->confirmed_flush_lsn);
}
