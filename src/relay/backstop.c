/* SPDX-License-Identifier: Apache-2.0 */
/* backstop.c -- the same transaction failing in Kafka again and again
 * is poison: after kafka.failure.max.replays replays in a row the relay
 * stops (exit 65) instead of replaying forever. Owns r->bs. */
#include <stdio.h>

#include "lib/log.h"
#include "health/monitor.h"
#include "relay/relay_int.h"

/* The latest Kafka failure, for the fail-stop message: at most max
 * bytes of err (a delivery report's text is kept whole, up to the
 * buffer; a producer error's is cut shorter). */
void backstop_note(struct relay *r, const char *err, int max)
{
	snprintf(r->bs.err, sizeof(r->bs.err), "%.*s", max, err);
}

/* One more failure of the transaction whose commit end is key (a failed
 * session, before its replay). Returns false when that makes it poison:
 * the relay stops. */
bool backstop_count(struct relay *r, uint64_t key)
{
	if (key == r->bs.lsn) {
		r->bs.count++;
	} else {
		r->bs.lsn = key;
		r->bs.count = 1;
	}
	/* Replays can follow each other faster than the monitor's period:
	 * the count must reach /readyz and the log before the next one. */
	if (r->mon != NULL)
		mon_poke(r->mon);
	if (r->bs.count >= r->cfg->kafka_failure_max_replays) {
		log_error("fail-stop at LSN " LSN_FMT ": Kafka failed the same "
		          "transaction %lld times in a row (kafka.failure.max.replays); "
		          "last error: %s. Nothing at or after it is confirmed and the "
		          "slot keeps it (runbook: poison event)", LSN_ARGS(key),
		          (long long)r->bs.count,
		          r->bs.err[0] ? r->bs.err : "see the log");
		snprintf(r->reason, sizeof(r->reason), "Kafka failed the transaction "
		         "at LSN " LSN_FMT " %lld times in a row", LSN_ARGS(key),
		         (long long)r->bs.count);
		begin_stop(r, RELAY_EXIT_DATAERR); /* EXITING; restart() drains */
		return false;
	}
	return true;
}

/* The transactions that failed in Kafka are confirmed now: the backstop
 * starts over. */
void backstop_turn(struct relay *r)
{
	if (r->bs.count > 0 && lsn_confirmed(&r->lt) >= r->bs.lsn &&
	    !session_ending(r)) {
		r->bs.count = 0;
		r->bs.err[0] = '\0';
	}
}
