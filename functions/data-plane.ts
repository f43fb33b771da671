/** The regional data plane behind each region's function URL (`{region_base_url}`), spec 4.13. */
import { createFunctionUrlHandler } from "#lib/data-plane/function-url.ts";

export const handler = createFunctionUrlHandler(process.env.AWS_REGION ?? "us-east-1");
