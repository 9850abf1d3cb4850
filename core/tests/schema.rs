//! Every envelope the core writes is validated against the official JSON
//! schema of each MCP revision, the 2026-07-28 example messages are parsed
//! with `Envelope` and compared with serde_json's view, and the per-revision
//! feature table is checked against the schemas.
//!
//! The spec files live in `shared/spec/<revision>/` next to the workspace
//! (the nearest ancestor of this crate that has `shared/spec`). A missing
//! directory fails these tests; it never skips them.

use std::path::PathBuf;

use mcpx_core::envelope::{Envelope, Kind};
use mcpx_core::error::ErrorCode;
use mcpx_core::meta::{validate_request_meta, write_unsupported_version_error};
use mcpx_core::revision::{Feature, Revision, Revisions};
use mcpx_core::rewrite::{
    splice, spliced_len, write_error, write_notification, write_request, write_result, Splice,
};
use serde_json::{json, Value};

fn spec_dir() -> PathBuf {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .map(|a| a.join("shared").join("spec"))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no shared/spec directory above {}", crate_dir.display()))
}

fn schema(rev: Revision) -> Value {
    let path = spec_dir().join(rev.as_str()).join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The definitions map and its key (`definitions` before 2025-11-25,
/// `$defs` after).
fn defs(schema: &Value) -> (&'static str, &serde_json::Map<String, Value>) {
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(m)) = schema.get(key) {
            return (key, m);
        }
    }
    panic!("schema without definitions");
}

/// A validator for one definition of the revision's schema.
fn validator(rev: Revision, def: &str) -> jsonschema::Validator {
    let mut root = schema(rev);
    let (key, map) = defs(&root);
    assert!(map.contains_key(def), "{rev}: no definition {def}");
    let reference = format!("#/{key}/{def}");
    root.as_object_mut()
        .unwrap()
        .insert("allOf".into(), json!([{ "$ref": reference }]));
    jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{rev}: {e}"))
}

fn check(rev: Revision, def: &str, bytes: &[u8]) -> Result<(), String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let validator = validator(rev, def);
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{rev} {def}: {} : {errors:?}",
            String::from_utf8_lossy(bytes)
        ))
    }
}

fn valid(rev: Revision, def: &str, bytes: &[u8]) {
    if let Err(e) = check(rev, def, bytes) {
        panic!("{e}");
    }
}

fn written(f: impl FnOnce(&mut [u8]) -> Result<usize, mcpx_core::rewrite::Overflow>) -> Vec<u8> {
    let mut out = vec![0u8; 1024];
    let n = f(&mut out).unwrap();
    out.truncate(n);
    out
}

const MESSAGE: &str = "JSONRPCMessage";

// covers: errors-error-has-code-and-message
#[test]
fn written_envelopes_match_every_schema() {
    let ok_result = written(|o| write_result(b"1", br#"{"resultType":"complete"}"#, o));
    let written_msgs = [
        written(|o| write_error(Some(b"1"), -32601, "Method not found", None, o)),
        written(|o| {
            write_error(
                Some(b"\"a\\\"b\""),
                -32602,
                "Bad \"x\"\n\u{1}",
                Some(br#"{"k":[1,null]}"#),
                o,
            )
        }),
        written(|o| write_error(Some(b"-123456789012"), -32603, "", Some(b"\"s\""), o)),
        ok_result.clone(),
        written(|o| {
            write_request(
                b"\"r-1\"",
                "tools/call",
                Some(br#"{"name":"x","arguments":{}}"#),
                o,
            )
        }),
        written(|o| write_request(b"7", "ping", None, o)),
        written(|o| write_notification("notifications/initialized", None, o)),
        written(|o| {
            write_notification(
                "notifications/progress",
                Some(br#"{"progressToken":1,"progress":0.5}"#),
                o,
            )
        }),
    ];
    for rev in Revision::ALL {
        for m in &written_msgs {
            valid(rev, MESSAGE, m);
            Envelope::parse(m).unwrap();
        }
    }
    // A legacy result without resultType is invalid in 2026-07-28: egress
    // shaping must add it (row: messages-resulttype-required).
    let bare = written(|o| write_result(b"1", b"{}", o));
    for rev in Revisions::LEGACY.iter() {
        valid(rev, MESSAGE, &bare);
    }
    assert!(check(Revision::V2026_07_28, "JSONRPCResultResponse", &bare).is_err());
    let e = Envelope::parse(&bare).unwrap();
    let splices = [Splice::set_member(
        &e.result().unwrap(),
        "resultType",
        b"\"complete\"",
    )];
    let mut shaped = vec![0u8; spliced_len(&bare, &splices).unwrap()];
    splice(&bare, &splices, &mut shaped).unwrap();
    valid(Revision::V2026_07_28, "JSONRPCResultResponse", &shaped);
}

// covers: messages-error-response-same-id-unless-unreadable
#[test]
fn errors_for_unreadable_ids() {
    for (input, code) in [
        (&b"{not json"[..], -32700),
        (br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#, -32600),
    ] {
        let err = Envelope::parse(input).unwrap_err();
        assert_eq!(err.code(), code);
        assert!(err.id_bytes().is_none());
        let m = written(|o| err.write_response(o));
        // The id may be omitted from 2025-11-25 on; earlier schemas require it.
        for rev in Revision::ALL {
            assert_eq!(
                check(rev, MESSAGE, &m).is_ok(),
                rev >= Revision::V2025_11_25,
                "{rev}"
            );
        }
    }
    let err = Envelope::parse(br#"{"jsonrpc":"2.0","id":"q","method":7}"#).unwrap_err();
    let m = written(|o| err.write_response(o));
    for rev in Revision::ALL {
        valid(rev, MESSAGE, &m);
    }
    assert_eq!(serde_json::from_slice::<Value>(&m).unwrap()["id"], "q");
}

// covers: versioning-server-unsupported-version-error, meta-server-rejects-missing-required-field
#[test]
fn table_errors_match_their_definitions() {
    let rev = Revision::V2026_07_28;
    let req = br#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let env = Envelope::parse(req).unwrap();
    let err = validate_request_meta(&env, Revisions::ALL).unwrap_err();
    let mcpx_core::meta::MetaError::UnsupportedVersion { requested } = err else {
        panic!("{err:?}")
    };
    let m =
        written(|o| write_unsupported_version_error(env.id_bytes(), &requested, Revisions::ALL, o));
    assert_eq!(m, written(|o| err.write_response(env.id_bytes(), Revisions::ALL, o)));
    valid(rev, "UnsupportedProtocolVersionError", &m);
    valid(rev, MESSAGE, &m);
    let v: Value = serde_json::from_slice(&m).unwrap();
    assert_eq!(v["error"]["data"]["requested"], "1900-01-01");
    assert_eq!(v["error"]["data"]["supported"][0], "2026-07-28");

    let no_caps = br#"{"jsonrpc":"2.0","id":"m","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let env = Envelope::parse(no_caps).unwrap();
    let err = validate_request_meta(&env, Revisions::ALL).unwrap_err();
    let m = written(|o| err.write_response(env.id_bytes(), Revisions::ALL, o));
    valid(rev, MESSAGE, &m);
    let error = serde_json::from_slice::<Value>(&m).unwrap()["error"].to_string();
    valid(rev, "InvalidParamsError", error.as_bytes());

    let header = written(|o| {
        write_error(
            Some(b"1"),
            ErrorCode::HeaderMismatch.code().into(),
            "Header mismatch",
            None,
            o,
        )
    });
    valid(rev, "HeaderMismatchError", &header);
    let missing = written(|o| {
        let code = ErrorCode::MissingRequiredClientCapability;
        write_error(
            Some(b"1"),
            code.code().into(),
            code.message(),
            Some(br#"{"requiredCapabilities":{"elicitation":{}}}"#),
            o,
        )
    });
    valid(rev, "MissingRequiredClientCapabilityError", &missing);
    for (code, def) in [
        (ErrorCode::ParseError, "ParseError"),
        (ErrorCode::InvalidRequest, "InvalidRequestError"),
        (ErrorCode::MethodNotFound, "MethodNotFoundError"),
        (ErrorCode::InvalidParams, "InvalidParamsError"),
        (ErrorCode::InternalError, "InternalError"),
    ] {
        assert_eq!(code.name(), def);
        let m = written(|o| write_error(Some(b"1"), code.code().into(), code.message(), None, o));
        valid(rev, MESSAGE, &m);
        // These definitions describe the `error` member itself.
        let error = serde_json::from_slice::<Value>(&m).unwrap()["error"].to_string();
        valid(rev, def, error.as_bytes());
    }
    // Each table code's schema definition exists exactly where the table
    // says it may be emitted (standard codes: 2025-11-25 on define them).
    for code in [
        ErrorCode::UrlElicitationRequired,
        ErrorCode::HeaderMismatch,
        ErrorCode::MissingRequiredClientCapability,
        ErrorCode::UnsupportedProtocolVersion,
    ] {
        for r in Revision::ALL {
            let s = schema(r);
            assert_eq!(
                defs(&s).1.contains_key(code.name()),
                code.may_emit(r),
                "{code:?} {r}"
            );
        }
    }
}

#[test]
fn modern_meta_inserted_into_legacy_request() {
    // The hub forwards a legacy client's request to a modern upstream by
    // inserting `params._meta`.
    let meta = br#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcpx","version":"0"}}"#;
    for src in [
        &br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#[..],
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"abc"}}"#,
    ] {
        let env = Envelope::parse(src).unwrap();
        assert!(check(Revision::V2026_07_28, "ListToolsRequest", src).is_err());
        let splices = [Splice::set_nested(&env.value(), "params", "_meta", meta)];
        let mut out = vec![0u8; spliced_len(src, &splices).unwrap()];
        splice(src, &splices, &mut out).unwrap();
        valid(Revision::V2026_07_28, "ListToolsRequest", &out);
        let back = Envelope::parse(&out).unwrap();
        assert_eq!(
            validate_request_meta(&back, Revisions::ALL)
                .unwrap()
                .revision,
            Revision::V2026_07_28
        );
    }
}

// covers: meta-request-params-meta-required
#[test]
fn examples_parse_like_serde() {
    let dir = spec_dir().join("2026-07-28").join("examples");
    let mut files = Vec::new();
    for d in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
            files.push(f.unwrap().path());
        }
    }
    assert!(files.len() > 80, "only {} example files", files.len());
    let mut messages = 0;
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let want: Value = serde_json::from_slice(&bytes).unwrap();
        let got = Envelope::parse(&bytes);
        let Some(obj) = want.as_object().filter(|o| o.contains_key("jsonrpc")) else {
            // Not a message (a content block, a capability object, ...).
            let err = got.unwrap_err();
            assert_eq!(err.code(), -32600, "{}", path.display());
            continue;
        };
        messages += 1;
        let env = got.unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let kind = match (
            obj.contains_key("method"),
            obj.contains_key("id"),
            obj.contains_key("result"),
        ) {
            (true, true, _) => Kind::Request,
            (true, false, _) => Kind::Notification,
            (false, _, true) => Kind::Result,
            (false, _, false) => Kind::Error,
        };
        assert_eq!(env.kind(), kind, "{}", path.display());
        let id = env
            .id_bytes()
            .map(|b| serde_json::from_slice::<Value>(b).unwrap());
        assert_eq!(id.as_ref(), obj.get("id"), "{}", path.display());
        assert_eq!(
            env.method_str(),
            obj.get("method").and_then(Value::as_str),
            "{}",
            path.display()
        );
        assert_eq!(
            env.error_code(),
            obj.get("error").map(|e| e["code"].as_i64().unwrap())
        );
        let params = obj.get("params");
        let field = |v: Option<mcpx_core::json::JsonValue<'_>>| {
            v.map(|v| serde_json::from_slice::<Value>(v.bytes()).unwrap())
        };
        assert_eq!(
            field(env.name()).as_ref(),
            params.and_then(|p| p.get("name"))
        );
        assert_eq!(field(env.uri()).as_ref(), params.and_then(|p| p.get("uri")));
        assert_eq!(
            field(env.meta()).as_ref(),
            params.and_then(|p| p.get("_meta"))
        );
        valid(Revision::V2026_07_28, MESSAGE, &bytes);
        if kind == Kind::Request {
            let meta = validate_request_meta(&env, Revisions::ALL)
                .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
            assert_eq!(meta.revision, Revision::V2026_07_28);
        }
    }
    assert!(messages >= 30, "only {messages} example messages");
}

/// Whether `schema` has definition `def`, optionally with `prop` somewhere
/// in its text.
fn has(schema: &Value, def: &str, prop: Option<&str>) -> bool {
    match defs(schema).1.get(def) {
        None => false,
        Some(d) => prop.is_none_or(|p| d.to_string().contains(&format!("\"{p}\""))),
    }
}

#[test]
fn feature_table_matches_schemas() {
    for rev in Revision::ALL {
        let s = schema(rev);
        let evidence = |f: Feature| match f {
            Feature::Batch => has(&s, "JSONRPCBatchRequest", None),
            Feature::AudioContent => has(&s, "AudioContent", None),
            Feature::ToolAnnotations => has(&s, "ToolAnnotations", None),
            Feature::ProgressMessage => {
                has(&s, "ProgressNotificationParams", Some("message"))
                    || has(&s, "ProgressNotification", Some("message"))
            }
            Feature::CompletionsCapability => has(&s, "ServerCapabilities", Some("completions")),
            Feature::ResourceLink => has(&s, "ResourceLink", None),
            Feature::StructuredContent => {
                has(&s, "CallToolResult", Some("structuredContent"))
                    && has(&s, "Tool", Some("outputSchema"))
            }
            Feature::Title => has(&s, "Implementation", Some("title")),
            Feature::Elicitation => has(&s, "ElicitRequest", None),
            Feature::ElicitationUrlMode => has(&s, "ElicitRequestURLParams", None),
            Feature::Icons => has(&s, "Icon", None),
            Feature::SamplingTools => has(&s, "ToolUseContent", None),
            Feature::CoreTasks => has(&s, "CreateTaskResult", None),
            Feature::LegacySession => {
                has(&s, "InitializeRequest", None) && has(&s, "PingRequest", None)
            }
            Feature::ResultType => has(&s, "Result", Some("resultType")),
            Feature::InputRequired => has(&s, "InputRequiredResult", None),
            Feature::SubscriptionsListen => has(&s, "SubscriptionsListenRequest", None),
            Feature::ServerDiscover => has(&s, "DiscoverRequest", None),
            Feature::ItemMeta => has(&s, "Tool", Some("_meta")),
            Feature::LastModified => has(&s, "Annotations", Some("lastModified")),
            Feature::ErrorIdOptional => has(&s, "JSONRPCErrorResponse", None),
            // No schema evidence: the tool-name rules are prose, new in
            // 2025-11-25 (server/tools "Tool Names"), kept in 2026-07-28.
            Feature::DotInToolNames => rev >= Revision::V2025_11_25,
        };
        for f in Feature::ALL {
            assert_eq!(rev.supports(f), evidence(f), "{f:?} in {rev}");
        }
    }
}
