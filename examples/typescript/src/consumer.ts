// The consumer half: applies each order event to this service's own
// database once, however often Kafka delivers it.
//
// The relay delivers at least once (a crash replays from its slot), and a
// consumer that crashes after its database commit but before its offset
// commit gets the record again too. So each record is applied in ONE
// database transaction that first claims the event id in the inbox
// (sql/inbox.sql): a claim that finds the id already there means the
// effects are already committed, and the record is skipped. The offset
// is committed only after that transaction: a crash anywhere either
// leaves neither the claim nor the effects (the record comes back and is
// applied) or both (it comes back and is skipped).
//
//   KAFKA_BROKERS=127.0.0.1:9092 KAFKA_GROUP=order-view \
//   DATABASE_URL=postgresql://view@127.0.0.1:5432/orderview \
//     node dist/consumer.js [--idle-exit-ms N]
//
// Last stdout line: consumer: applied=N duplicates=M.
// Exit codes: 0 stopped (SIGTERM, SIGINT, --idle-exit-ms), 64 usage,
// 65 a record that is not an order event, or whose values PostgreSQL
// refuses (its offset is not committed: it stops here again until it is
// dealt with), 69 Kafka or PostgreSQL failed.
import { Kafka, logLevel, type KafkaMessage } from "kafkajs";
import { connect, type Prisma } from "./db.js";
import type { OrderEvent } from "./orders.js";

const env = (k: string, d: string) => process.env[k] || d;
const args = process.argv.slice(2);
let idleExitMs = 0;
// --no-inbox applies every delivery: only to show what the inbox
// prevents (the examples' test counts the double effects). Never use it.
let inbox = true;
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--idle-exit-ms" && /^\d+$/.test(args[i + 1] ?? "")) idleExitMs = Number(args[++i]);
  else if (args[i] === "--no-inbox") inbox = false;
  else {
    console.error(`consumer: unknown argument ${args[i]} (usage: consumer.js [--idle-exit-ms N])`);
    process.exit(64);
  }
}

if (!process.env.DATABASE_URL) {
  console.error("consumer: DATABASE_URL is not set (postgresql://user@host:port/db)");
  process.exit(64);
}
const db = connect();
const topic = env("KAFKA_TOPIC", "outbox.event.Order");
const kafka = new Kafka({
  clientId: "order-view-example",
  brokers: env("KAFKA_BROKERS", "127.0.0.1:9092").split(","),
  logLevel: logLevel.WARN,
  // One plain line per entry. kafkajs logs each failed broker response at
  // ERROR, also those it retries (the coordinator not ready yet, a
  // rebalance): left out; what it gives up on reaches us as an error.
  logCreator: () => ({ namespace, log }) => {
    if (log.message.startsWith("Response ")) return;
    console.error(`consumer: kafka ${namespace}: ${log.message}${log.error ? `: ${log.error}` : ""}`);
  },
});
const consumer = kafka.consumer({
  groupId: env("KAFKA_GROUP", "order-view"),
  readUncommitted: false, // see only committed transactions (exactly-once relays)
  sessionTimeout: Number(env("KAFKA_SESSION_TIMEOUT_MS", "10000")),
  heartbeatInterval: 1000,
});

let applied = 0;
let duplicates = 0;
let lastActivity = 0; // 0: partitions not assigned yet

function fail(code: number, msg: string): never {
  console.error(`consumer: ${msg}`);
  console.log(`consumer: applied=${applied} duplicates=${duplicates}`);
  process.exit(code); // no offset commit: the record comes back
}

function header(m: KafkaMessage, name: string): string | undefined {
  const v = m.headers?.[name];
  const b = Array.isArray(v) ? v[v.length - 1] : v;
  return b === undefined || b === null ? undefined : b.toString();
}

function parse(m: KafkaMessage, where: string): { id: string; key: string; type: string; ev: OrderEvent } {
  const id = header(m, "id");
  const type = header(m, "event_type");
  const key = m.key?.toString();
  if (!id || !type || !key) fail(65, `${where}: no id header, event_type header or key: not an order event`);
  let ev: OrderEvent;
  try {
    ev = JSON.parse(m.value?.toString() ?? "");
  } catch {
    fail(65, `${where}: value is not JSON`);
  }
  if (!Number.isInteger(ev.version) || typeof ev.status !== "string")
    fail(65, `${where}: value has no integer version or no status`);
  return { id, key, type, ev };
}

// What PostgreSQL said about a failed query: Prisma's driver adapter
// keeps its SQLSTATE and message in the error's meta (absent when the
// connection failed).
function pgCause(e: unknown): { originalCode?: string; originalMessage?: string } | undefined {
  return (e as { meta?: { driverAdapterError?: { cause?: { originalCode?: string; originalMessage?: string } } } })
    .meta?.driverAdapterError?.cause;
}

function sqlstate(e: unknown): string {
  return pgCause(e)?.originalCode ?? "";
}

function errorText(e: unknown): string {
  // Prisma's own message starts with the call site over several lines:
  // its last line says what went wrong.
  const last = e instanceof Error ? e.message.split("\n").filter((l) => l.trim()).slice(-1)[0] : undefined;
  return pgCause(e)?.originalMessage ?? last ?? String(e);
}

// The record's transaction: claim, then the effects, all or nothing.
// true: applied; false: a duplicate, nothing done.
async function apply(id: string, key: string, ev: OrderEvent, eventType: string): Promise<boolean> {
  return db.$transaction(async (tx: Prisma.TransactionClient) => {
    if (inbox) {
      const [c] = await tx.$queryRaw<{ claimed: boolean }[]>`SELECT public.inbox_claim(${id}::uuid) AS claimed`;
      if (!c?.claimed) return false;
    }
    const rows = await tx.$queryRaw<{ version: number }[]>`
      SELECT version FROM public.order_view WHERE order_id = ${key} FOR UPDATE`;
    const prev = rows[0]?.version ?? 0;
    if (ev.version > prev) {
      await tx.$executeRaw`
        INSERT INTO public.order_view (order_id, status, version, events_applied, total)
        VALUES (${key}, ${ev.status}, ${ev.version}, 1, ${ev.total}::numeric)
        ON CONFLICT (order_id) DO UPDATE SET status = EXCLUDED.status, version = EXCLUDED.version,
          events_applied = order_view.events_applied + 1, total = EXCLUDED.total, updated_at = now()`;
    } else {
      // Older than what the view shows: counted, not applied.
      await tx.$executeRaw`
        UPDATE public.order_view SET events_applied = events_applied + 1 WHERE order_id = ${key}`;
    }
    await tx.$executeRaw`
      INSERT INTO public.order_effects (event_id, order_id, event_type, version, in_order)
      VALUES (${id}::uuid, ${key}, ${eventType}, ${ev.version}, ${ev.version === prev + 1})`;
    return true;
  });
}

// The relay creates the topic with its first event: a consumer started
// before that waits for it (with a leader for every partition) instead
// of failing.
async function waitForTopic(): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    for (let said = false; ; said = true) {
      const ready = await admin
        .fetchTopicMetadata({ topics: [topic] })
        .then((m) => m.topics[0]?.partitions.every((p) => p.leader >= 0) ?? false)
        .catch(() => false);
      if (ready) return;
      if (!said) {
        console.error(`consumer: waiting for topic ${topic}`);
        lastActivity = Date.now();
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    await admin.disconnect();
  }
}

async function stop(code: number): Promise<void> {
  await consumer.disconnect(); // waits for the record in hand, commits offsets
  await db.$disconnect();
  console.log(`consumer: applied=${applied} duplicates=${duplicates}`);
  process.exit(code);
}

// The idle clock starts at the group join (or while waiting for the
// topic): --idle-exit-ms bounds a run that finds nothing to do.
if (idleExitMs > 0) {
  const t = setInterval(() => {
    if (lastActivity > 0 && Date.now() - lastActivity >= idleExitMs) {
      clearInterval(t);
      void stop(0);
    }
  }, 100);
}

// Before anything can take long (the group join waits for the members
// of a crashed run to time out): a stop then still commits and reports.
for (const s of ["SIGTERM", "SIGINT"] as const) process.once(s, () => void stop(0));

try {
  await db.$queryRaw`SELECT 1 FROM public.processed_events, public.order_view LIMIT 0`;
} catch (e) {
  const hint = sqlstate(e) === "42P01" ? " (apply sql/inbox.sql and examples/sql/order_view.sql)" : "";
  fail(69, `database: ${errorText(e)}${hint}`);
}
try {
  consumer.on(consumer.events.GROUP_JOIN, () => (lastActivity = Date.now()));
  await waitForTopic();
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      const where = `${topic} [${partition}] at offset ${message.offset}`;
      const { id, key, type, ev } = parse(message, where);
      let first: boolean;
      try {
        first = await apply(id, key, ev, type);
      } catch (e) {
        // SQLSTATE class 22 (data exception: an id that is no uuid, a
        // total that is no number) comes from the record, not from the
        // database: a retry cannot help. Anything else may pass.
        const code = sqlstate(e);
        if (code.startsWith("22")) fail(65, `${where}: PostgreSQL refused its values (${code}): ${errorText(e)}`);
        fail(69, `${where}: database: ${errorText(e)}`);
      }
      if (first) applied++;
      else duplicates++;
      lastActivity = Date.now();
    },
  });
} catch (e) {
  fail(69, `kafka: ${e instanceof Error ? e.message : e}`);
}

