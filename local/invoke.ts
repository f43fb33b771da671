/**
 * `npm run invoke -- <function> <event.json>`: run one handler of functions/ with a sample event
 * (events/) against the stack `npm start` runs (endpoint and table from .local/stack.json).
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";

const [name, eventFile] = process.argv.slice(2);
if (!name || !eventFile) {
  console.error("usage: npm run invoke -- <function name> <event.json>   (see events/README.md)");
  process.exit(2);
}
const stack = JSON.parse(await readFile(resolve(".local/stack.json"), "utf8").catch(() => "{}")) as Record<
  string,
  string
>;
process.env.AWS_ENDPOINT_URL ??= stack.awsEndpointUrl;
process.env.TABLE_NAME ??= stack.tableName ?? "proxy-gateway";
process.env.AWS_ACCESS_KEY_ID ??= "local";
process.env.AWS_SECRET_ACCESS_KEY ??= "local";
process.env.AWS_REGION ??= stack.homeRegion ?? "us-east-1";
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
process.env.OUTBOUND_ALLOW_LOOPBACK ??= "true";
const event = JSON.parse(await readFile(resolve(eventFile), "utf8")) as unknown;
const module = (await import(`../functions/${name}.ts`)) as {
  handler: (event: unknown, context: unknown) => unknown;
};
const result = await module.handler(event, { functionName: name, awsRequestId: "invoke" });
console.log(JSON.stringify(result, null, 2));
