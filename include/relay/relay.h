/* SPDX-License-Identifier: Apache-2.0 */
/* relay.h -- the pipeline: slot -> decoder (wal2json or pgoutput) -> Kafka
 * -> confirm.
 *
 * One thread, one poll() loop over the replication socket, librdkafka's
 * queue fd, the signal pipe and timers. */
#ifndef RELAY_RELAY_H
#define RELAY_RELAY_H

#include "lib/config.h"

/* Runs until a signal (returns RELAY_EXIT_OK after a clean drain), a
 * fail-stop on a poison event (RELAY_EXIT_DATAERR) or an unusable slot
 * (RELAY_EXIT_UNAVAILABLE). sigfd is the read end of the signal pipe;
 * each byte on it is one SIGTERM/SIGINT. cfg is borrowed. */
int relay_run(const struct relay_config *cfg, int sigfd);

#endif
