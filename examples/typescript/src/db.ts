// One PrismaClient per process, over node-postgres (Prisma 7's driver
// adapter: no native engine). In a Next.js app this is lib/db.ts, with
// the usual globalThis cache against hot reload.
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/prisma/client.js";

export function connect(url = process.env.DATABASE_URL): PrismaClient {
  if (!url) throw new Error("DATABASE_URL is not set (postgresql://user@host:port/db)");
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) });
}

export type { Prisma, PrismaClient } from "./generated/prisma/client.js";
