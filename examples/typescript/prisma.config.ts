// Prisma 7 reads the connection URL from here, not from the schema. Only
// `prisma migrate` and `prisma studio` use it; the app connects through
// the pg adapter in src/db.ts.
import { defineConfig } from "prisma/config";

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "" },
});
