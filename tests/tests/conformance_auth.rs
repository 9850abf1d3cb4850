//! The official conformance suite's `auth/*` client scenarios with mcpx as
//! the OAuth client: one scenario per test, through
//! `tests/drivers/suite_auth_client.mjs`. The suite starts its protected MCP
//! server and authorization server(s); mcpx's config gives the server an
//! `"oauth"` block whose `openWith` follows the authorization server's
//! redirect to mcpx's loopback redirect URI, so mcpx runs the whole flow on
//! its own (as `mcpx serve` does for a server with `openWith`). Each test
//! passes when the suite exits 0 with no FAILURE and no WARNING and at least
//! one SUCCESS, and no token the suite issued appears in mcpx's (debug) log.
//!
//! Sets: the 2025-03-26 back-compat scenarios, every `auth/*` scenario of
//! 2025-11-25 and of 2026-07-28 (`conformance list --client
//! --spec-version`), and the client-credentials extension scenarios.

use mcpx_tests::suite;

/// Runs `scenario` of `set` and checks mcpx's log for the suite's tokens
/// (`test-token-…`, `cc-token-…`, and no `Bearer` value at all).
// Requirement: authz-secure-token-storage (never logged)
fn run(set: &str, scenario: &str) {
    run_with(set, scenario, &[]);
}

fn run_with(set: &str, scenario: &str, extra: &[&str]) {
    check_log(&suite::run_client_leg(set, "client", scenario, "suite_auth_client.mjs", extra));
}

fn check_log(dir: &std::path::Path) {
    let log = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assert!(log.contains("mcpx"), "mcpx's log is not in {}: {log}", dir.display());
    for secret in ["test-token-", "cc-token-", "Bearer ", "test-client-secret", "conformance-test-secret"] {
        assert!(!log.contains(secret), "mcpx logged {secret:?}… ({}):\n{log}", dir.display());
    }
}

// A person's way: `mcpx auth login` (through --open-with), `auth status`,
// then `mcpx serve` with the stored tokens and no openWith, then `auth
// logout` (suite_auth_login.mjs).
// covers: authz-secure-token-storage
#[test]
fn auth_2025_11_25_metadata_default_via_mcpx_auth_login() {
    // Its own leg folder: the plain run of the scenario may be running beside it.
    check_log(&suite::run_client_leg("2025-11-25", "client-login", "auth/metadata-default", "suite_auth_login.mjs", &[]));
}

// covers: authz-rfc8414-server-should-client-must, authz-base-url-discards-path, authz-2025-03-26-implementation-reqs
#[test]
fn auth_2025_03_26_oauth_metadata_backcompat() {
    run("2025-03-26", "auth/2025-03-26-oauth-metadata-backcompat");
}

// covers: authz-default-endpoints-fallback, authz-dcr-should
#[test]
fn auth_2025_03_26_oauth_endpoint_fallback() {
    run("2025-03-26", "auth/2025-03-26-oauth-endpoint-fallback");
}

// PRM at the path-based location from WWW-Authenticate (the root location is
// a trap), RFC 8414 metadata, DCR, PKCE S256, the Bearer header on every request.
// covers: authz-server-prm-rfc9728, authz-prm-discovery-header-or-well-known, authz-client-parses-www-authenticate, authz-pkce-verify-s256, authz-bearer-header, authz-token-every-request, authz-no-token-in-query, authz-http-should-conform, authorization-http-should-conform-stdio-should-not, authz-implement-oauth21, authz-dcr-may-deprecated
#[test]
fn auth_2025_11_25_metadata_default() {
    run("2025-11-25", "auth/metadata-default");
}

// covers: authz-as-metadata-rfc8414-or-oidc, authz-client-rfc8414-discovery, authz-as-metadata-rfc8414
#[test]
fn auth_2025_11_25_metadata_var1() {
    run("2025-11-25", "auth/metadata-var1");
}

// covers: authz-client-as-discovery-order
#[test]
fn auth_2025_11_25_metadata_var2() {
    run("2025-11-25", "auth/metadata-var2");
}

// covers: authz-client-as-discovery-order
#[test]
fn auth_2025_11_25_metadata_var3() {
    run("2025-11-25", "auth/metadata-var3");
}

// covers: authz-cimd, authz-registration-priority
#[test]
fn auth_2025_11_25_basic_cimd() {
    run("2025-11-25", "auth/basic-cimd");
}

// covers: authz-scope-in-challenge, authz-scope-selection-order
#[test]
fn auth_2025_11_25_scope_from_www_authenticate() {
    run("2025-11-25", "auth/scope-from-www-authenticate");
}

// covers: authz-scope-selection-order
#[test]
fn auth_2025_11_25_scope_from_scopes_supported() {
    run("2025-11-25", "auth/scope-from-scopes-supported");
}

// covers: authz-scope-selection-order
#[test]
fn auth_2025_11_25_scope_omitted_when_undefined() {
    run("2025-11-25", "auth/scope-omitted-when-undefined");
}

// covers: authz-step-up
#[test]
fn auth_2025_11_25_scope_step_up() {
    run("2025-11-25", "auth/scope-step-up");
}

// covers: authz-step-up
#[test]
fn auth_2025_11_25_scope_retry_limit() {
    run("2025-11-25", "auth/scope-retry-limit");
}

// covers: authz-resource-indicator, authz-canonical-uri-guidance
#[test]
fn auth_2025_11_25_token_endpoint_auth_basic() {
    run("2025-11-25", "auth/token-endpoint-auth-basic");
}

// covers: authz-resource-indicator
#[test]
fn auth_2025_11_25_token_endpoint_auth_post() {
    run("2025-11-25", "auth/token-endpoint-auth-post");
}

// covers: authz-resource-indicator
#[test]
fn auth_2025_11_25_token_endpoint_auth_none() {
    run("2025-11-25", "auth/token-endpoint-auth-none");
}

// covers: authz-preregistration, authz-registration-priority
#[test]
fn auth_2025_11_25_pre_registration() {
    run("2025-11-25", "auth/pre-registration");
}

// In 2026-07-28 the registrations also carry application_type.
// covers: authz-dcr-application-type, authz-client-registration-required, authz-server-prm-rfc9728
#[test]
fn auth_2026_07_28_metadata_default() {
    run("2026-07-28", "auth/metadata-default");
}

// covers: authz-as-metadata-rfc8414-or-oidc
#[test]
fn auth_2026_07_28_metadata_var1() {
    run("2026-07-28", "auth/metadata-var1");
}

// covers: authz-client-as-discovery-order
#[test]
fn auth_2026_07_28_metadata_var2() {
    run("2026-07-28", "auth/metadata-var2");
}

// covers: authz-client-as-discovery-order
#[test]
fn auth_2026_07_28_metadata_var3() {
    run("2026-07-28", "auth/metadata-var3");
}

// covers: authz-cimd
#[test]
fn auth_2026_07_28_basic_cimd() {
    run("2026-07-28", "auth/basic-cimd");
}

// covers: authz-scope-in-challenge
#[test]
fn auth_2026_07_28_scope_from_www_authenticate() {
    run("2026-07-28", "auth/scope-from-www-authenticate");
}

// covers: authz-scope-selection-order
#[test]
fn auth_2026_07_28_scope_from_scopes_supported() {
    run("2026-07-28", "auth/scope-from-scopes-supported");
}

// covers: authz-scope-selection-order
#[test]
fn auth_2026_07_28_scope_omitted_when_undefined() {
    run("2026-07-28", "auth/scope-omitted-when-undefined");
}

// 2026-07-28 also wants the union of held and challenged scopes.
// covers: authz-step-up
#[test]
fn auth_2026_07_28_scope_step_up() {
    run("2026-07-28", "auth/scope-step-up");
}

// covers: authz-step-up
#[test]
fn auth_2026_07_28_scope_retry_limit() {
    run("2026-07-28", "auth/scope-retry-limit");
}

// covers: authz-resource-indicator
#[test]
fn auth_2026_07_28_token_endpoint_auth_basic() {
    run("2026-07-28", "auth/token-endpoint-auth-basic");
}

// covers: authz-resource-indicator
#[test]
fn auth_2026_07_28_token_endpoint_auth_post() {
    run("2026-07-28", "auth/token-endpoint-auth-post");
}

// covers: authz-resource-indicator
#[test]
fn auth_2026_07_28_token_endpoint_auth_none() {
    run("2026-07-28", "auth/token-endpoint-auth-none");
}

// covers: authz-preregistration
#[test]
fn auth_2026_07_28_pre_registration() {
    run("2026-07-28", "auth/pre-registration");
}

// A PRM naming another resource: no authorization at all.
// covers: authz-resource-indicator, authz-canonical-uri-guidance
#[test]
fn auth_2026_07_28_resource_mismatch() {
    run("2026-07-28", "auth/resource-mismatch");
}

// covers: authz-refresh-tokens
#[test]
fn auth_2026_07_28_offline_access_scope() {
    run("2026-07-28", "auth/offline-access-scope");
}

// covers: authz-refresh-tokens
#[test]
fn auth_2026_07_28_offline_access_not_supported() {
    run("2026-07-28", "auth/offline-access-not-supported");
}

// covers: authz-credentials-bound-to-issuer, authz-client-per-as-registration-state
#[test]
fn auth_2026_07_28_authorization_server_migration() {
    run("2026-07-28", "auth/authorization-server-migration");
}

// covers: authz-iss-validation
#[test]
fn auth_2026_07_28_iss_supported() {
    run("2026-07-28", "auth/iss-supported");
}

// covers: authz-iss-validation
#[test]
fn auth_2026_07_28_iss_not_advertised() {
    run("2026-07-28", "auth/iss-not-advertised");
}

// covers: authz-iss-validation
#[test]
fn auth_2026_07_28_iss_supported_missing() {
    run("2026-07-28", "auth/iss-supported-missing");
}

// covers: authz-iss-validation
#[test]
fn auth_2026_07_28_iss_wrong_issuer() {
    run("2026-07-28", "auth/iss-wrong-issuer");
}

// covers: authz-iss-validation
#[test]
fn auth_2026_07_28_iss_unexpected() {
    run("2026-07-28", "auth/iss-unexpected");
}

// covers: authz-iss-validation
#[test]
fn auth_2026_07_28_iss_normalized() {
    run("2026-07-28", "auth/iss-normalized");
}

// covers: authz-client-validates-issuer-in-metadata
#[test]
fn auth_2026_07_28_metadata_issuer_mismatch() {
    run("2026-07-28", "auth/metadata-issuer-mismatch");
}

// The client-credentials extension (io.modelcontextprotocol/oauth-client-credentials):
// client_secret_basic, and private-key JWT (ES256) for unattended hosts. An
// extension is on no revision's timeline: the suite runs it with --force.
#[test]
fn auth_client_credentials_basic() {
    run_with("2026-07-28", "auth/client-credentials-basic", &["--force"]);
}

#[test]
fn auth_client_credentials_jwt() {
    run_with("2026-07-28", "auth/client-credentials-jwt", &["--force"]);
}
