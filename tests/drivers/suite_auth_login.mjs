#!/usr/bin/env node
// suite_auth_client.mjs the way a person logs in: `mcpx auth login` first
// (see MCPX_SUITE_VIA_LOGIN there).
process.env.MCPX_SUITE_VIA_LOGIN = "1";
await import("./suite_auth_client.mjs");
