/* SPDX-License-Identifier: Apache-2.0 */
/* notify.c -- the service manager's notification protocol, through
 * libsystemd's sd_notify(): one datagram per message to NOTIFY_SOCKET.
 *
 * The relay is ready when it does what it is there for: streaming from
 * the slot, or standing by while another process holds it (a standby
 * that is not "started" would hold up every unit ordered after it, and
 * the same relay restarted as standby would never finish starting).
 * STATUS= is what `systemctl status` shows: the state, and the lag while
 * streaming. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "health/notify.h"

/* STATUS= again after this long even when the state stays: the lag and
 * the in-flight count move. */
#define NOTIFY_STATUS_PERIOD_US (5 * INT64_C(1000000))

static struct {
	bool probed;
	bool enabled;               /* NOTIFY_SOCKET is set */
	uint64_t watchdog_us;       /* WATCHDOG_USEC for us; 0: none */
	int64_t last_ping_us;
	bool ready;
	bool stopping;
	enum relay_phase state;     /* of the last STATUS= */
	int64_t last_status_us;
} nt;

static void probe(void)
{
	uint64_t usec = 0;

	if (nt.probed)
		return;
	nt.probed = true;
	nt.enabled = getenv("NOTIFY_SOCKET") != NULL;
	/* > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID, if set, is
	 * this process. */
	if (nt.enabled && sd_watchdog_enabled(0, &usec) > 0)
		nt.watchdog_us = usec;
}

/* Sends msg; a failure is not the relay's problem (the manager may be
 * restarting) and is not logged, as a log line a turn would flood. */
static void send_msg(const char *msg)
{
	(void)sd_notify(0, msg);
}

void notify_watchdog(int64_t now_mono_us)
{
	probe();
	if (nt.watchdog_us == 0 ||
	    now_mono_us - nt.last_ping_us < (int64_t)(nt.watchdog_us / 2))
		return;
	nt.last_ping_us = now_mono_us;
	send_msg("WATCHDOG=1");
}

void notify_status_text(const struct relay_figures *f, int64_t now_wall_us,
                        char *out, size_t outlen)
{
	const char *state = relay_phase_name(f->state);
	char reason[sizeof(f->reason) + 1];

	/* The figures' reason is a fixed array: bound it. */
	memcpy(reason, f->reason, sizeof(f->reason));
	reason[sizeof(f->reason)] = '\0';
	/* One line: systemctl shows STATUS= on one. */
	for (char *p = reason; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	if (f->state == RELAY_PHASE_STREAMING) {
		double lag = f->oldest_pending_commit_us > 0 &&
		                     now_wall_us > f->oldest_pending_commit_us
		                 ? (double)(now_wall_us - f->oldest_pending_commit_us) /
		                       1e6
		                 : 0.0;
		snprintf(out, outlen, "streaming: %llu events in flight, outbox lag "
		         "%.1f s, confirmed " LSN_FMT,
		         (unsigned long long)f->inflight_events, lag,
		         LSN_ARGS(f->confirmed_lsn));
	} else if (reason[0] != '\0') {
		snprintf(out, outlen, "%s: %s", state, reason);
	} else {
		snprintf(out, outlen, "%s", state);
	}
}

void notify_figures(const struct relay_figures *f, int64_t now_mono_us)
{
	char status[400], msg[420];
	bool serving, changed;

	probe();
	if (!nt.enabled || nt.stopping)
		return;
	serving = f->state == RELAY_PHASE_STREAMING ||
	          f->state == RELAY_PHASE_STANDBY;
	changed = f->state != nt.state;
	if (!changed && !(serving && !nt.ready) &&
	    now_mono_us - nt.last_status_us < NOTIFY_STATUS_PERIOD_US)
		return;
	notify_status_text(f, now_wall_us(), status, sizeof(status));
	/* READY=1 and the first STATUS= in one datagram: the manager never
	 * shows a started relay without saying what it does. */
	snprintf(msg, sizeof(msg), "%sSTATUS=%s",
	         serving && !nt.ready ? "READY=1\n" : "", status);
	send_msg(msg);
	nt.ready = nt.ready || serving;
	nt.state = f->state;
	nt.last_status_us = now_mono_us;
}

void notify_stopping(void)
{
	probe();
	if (!nt.enabled || nt.stopping)
		return;
	nt.stopping = true;
	send_msg("STOPPING=1\nSTATUS=stopping: draining in-flight events");
}
