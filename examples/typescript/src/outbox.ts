// emit(tx, event): the one way this service announces a change.
//
// The rule (README.md, "The writer's rule"): call it with the transaction
// client `tx` of prisma.$transaction(async (tx) => ...), in the same
// transaction as the change it announces. The event then commits or
// rolls back with that change, and the relay publishes it only once
// PostgreSQL has committed it. Never publish to Kafka yourself, inside
// the transaction or after it.
import { randomUUID } from "node:crypto";
import type { Prisma } from "./db.js";

export interface OutboxEvent {
  /** Routing: the relay publishes to topic outbox.event.<aggregateType>. */
  aggregateType: string;
  /** The record key: events of one aggregate keep their order. */
  aggregateId: string;
  /** Header event_type, e.g. "OrderPlaced". */
  eventType: string;
  /** The record value, as JSON. */
  payload: Prisma.InputJsonValue;
}

/** Writes the event's outbox row in `tx`; returns its id (header `id`,
 *  the consumer's deduplication key). */
export async function emit(tx: Prisma.TransactionClient, event: OutboxEvent): Promise<string> {
  const id = randomUUID();
  await tx.outbox.create({ data: { id, ...event } });
  return id;
}
