/** The CDK app (cdk.json: `npx tsx cdk/app.ts`). Everything is in buildApp; see cdk/README.md. */
import { buildApp } from "./build-app.ts";

buildApp({ account: process.env.CDK_DEFAULT_ACCOUNT }).app.synth();
