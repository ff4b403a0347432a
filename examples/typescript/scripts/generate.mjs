// `npm run generate`: prisma generate, with no download.
//
// Prisma 7's client needs no native engine (the query compiler is
// WebAssembly, shipped in the npm package), but its CLI still fetches
// the schema engine binary from Prisma's own host at every command,
// generate included, although generate never runs it. Where that host
// is unreachable (a build sandbox that reaches only the npm registry)
// the CLI stops. Naming a stand-in binary skips the fetch; the stand-in
// fails with a clear message if anything does run it. Set
// PRISMA_SCHEMA_ENGINE_BINARY yourself to use a real one.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: "1" };
env.PRISMA_SCHEMA_ENGINE_BINARY ||= fileURLToPath(new URL("./no-schema-engine.sh", import.meta.url));
const r = spawnSync("npx", ["--no-install", "prisma", "generate"], { stdio: "inherit", env });
process.exit(r.status ?? 1);
