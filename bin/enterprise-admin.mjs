#!/usr/bin/env -S node --max-semi-space-size=64 --min-semi-space-size=64
// The enterprise-admin command: runs the TypeScript sources through tsx's loader. The young
// generation of 64 MiB (V8's default is 16): an ingestion's objects live until its batch is written,
// and at the default each 1,000-event batch paid three scavenges copying them; 64 MiB from the start,
// since each step of its growth from 1 MiB was a slow collection (see docs/architecture.md).
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
