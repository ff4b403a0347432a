// The example service as a command: runs N orders through their life
// (placed -> paid -> shipped, one transaction and one event per step),
// C orders at a time, so that the events of different orders interleave
// in the WAL while each order's stay in order.
//
//   DATABASE_URL=postgresql://app@127.0.0.1:5432/shop \
//     node dist/service.js --orders 100 [--concurrency 8] [--fail-pct 10]
//
// --fail-pct P: P% of the orders throw inside placeOrder's transaction
// after the event was written, as a failed business check would. Prisma
// rolls the transaction back, the outbox row with it: no consumer may
// ever see such an order. Last stdout line:
//   service: orders=N events=E rolled_back=R
import { connect } from "./db.js";
import { advanceOrder, placeOrder, placeOrderIn } from "./orders.js";

class Refused extends Error {}

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 0) {
    console.error(`service: --${name} wants a whole number, got ${process.argv[i + 1] ?? "nothing"}`);
    process.exit(64);
  }
  return v;
}

const orders = arg("orders", 10);
const concurrency = Math.max(1, arg("concurrency", 4));
const failPct = arg("fail-pct", 0);

if (!process.env.DATABASE_URL) {
  console.error("service: DATABASE_URL is not set (postgresql://user@host:port/db)");
  process.exit(64);
}
const db = connect();
let events = 0;
let rolledBack = 0;
let started = 0;

async function lifecycle(n: number): Promise<void> {
  const total = (10 + (n % 90) + 0.99).toFixed(2);
  // every (100 / P)th order fails, spread evenly: P% of them in all
  if (Math.floor(((n + 1) * failPct) / 100) > Math.floor((n * failPct) / 100)) {
    // The same call as below, failing after emit(): nothing commits.
    try {
      await db.$transaction(async (tx) => {
        await placeOrderIn(tx, `customer-${n % 17}`, total);
        throw new Refused("credit check failed");
      });
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      rolledBack++;
      return;
    }
  }
  const id = await placeOrder(db, `customer-${n % 17}`, total);
  events++;
  await advanceOrder(db, id, "paid");
  events++;
  await advanceOrder(db, id, "shipped");
  events++;
}

async function worker(): Promise<void> {
  while (started < orders) await lifecycle(started++);
}

try {
  await Promise.all(Array.from({ length: Math.min(concurrency, orders) }, worker));
  console.log(`service: orders=${orders - rolledBack} events=${events} rolled_back=${rolledBack}`);
} catch (e) {
  console.error(`service: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 69;
} finally {
  await db.$disconnect();
}
