// The service's write paths. Each is one transaction: the change to the
// order and its event, through emit(). The order's version is bumped in
// the same statement that checks the expected state, so two concurrent
// calls for one order cannot both pass, and the event carries the
// version the change produced (consumers use it to see order).
import { randomUUID } from "node:crypto";
import type { Prisma, PrismaClient } from "./db.js";
import { emit } from "./outbox.js";

export interface OrderEvent {
  orderId: string;
  version: number;
  status: "placed" | "paid" | "shipped";
  customer: string;
  total: string;
}

/** Places an order in its own transaction; returns its id. */
export async function placeOrder(db: PrismaClient, customer: string, total: string): Promise<string> {
  return db.$transaction((tx) => placeOrderIn(tx, customer, total));
}

/** The same inside a caller's transaction, for a write path that does
 *  more in one transaction: the event commits or rolls back with all of
 *  it. */
export async function placeOrderIn(tx: Prisma.TransactionClient, customer: string, total: string): Promise<string> {
  const id = randomUUID();
  await tx.order.create({ data: { id, customer, total, status: "placed", version: 1 } });
  const ev: OrderEvent = { orderId: id, version: 1, status: "placed", customer, total };
  await emit(tx, { aggregateType: "Order", aggregateId: id, eventType: "OrderPlaced", payload: { ...ev } });
  return id;
}

const next = { paid: { from: "placed", type: "OrderPaid" }, shipped: { from: "paid", type: "OrderShipped" } } as const;

/** Moves an order on (placed -> paid -> shipped); throws when the order is
 *  not in the state the step starts from. */
export async function advanceOrder(db: PrismaClient, id: string, to: keyof typeof next): Promise<void> {
  await db.$transaction(async (tx) => {
    const step = next[to];
    const { count } = await tx.order.updateMany({
      where: { id, status: step.from },
      data: { status: to, version: { increment: 1 } },
    });
    if (count !== 1) throw new Error(`order ${id} is not ${step.from}`);
    const o = await tx.order.findUniqueOrThrow({ where: { id } });
    const ev: OrderEvent = { orderId: id, version: o.version, status: to, customer: o.customer, total: o.total.toFixed(2) };
    await emit(tx, { aggregateType: "Order", aggregateId: id, eventType: step.type, payload: { ...ev } });
  });
}
