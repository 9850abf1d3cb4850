//! JSON Schema validation of what crosses mcpx: `tools/call` arguments
//! against the tool's `inputSchema`, `structuredContent` against its
//! `outputSchema`, and elicitation answers against the `requestedSchema`.
//!
//! Validators are compiled when a server's tool list arrives
//! ([`Validators::listed`]) and cached per (server, tool), keyed by the
//! SHA-256 of the schema, so a re-listed unchanged tool is not compiled
//! again. A schema is read in its declared `$schema` dialect (2020-12 when
//! none is declared); a dialect the validator does not implement is an
//! error for that tool's calls, never a silent pass
//! (`json-schema-validate-per-dialect-and-error-on-unsupported`).
//!
//! Bounds on the work of one validation: `$ref` is resolved only inside
//! the schema (no network or file retrieval: the crate is built without
//! them and the retriever is offline); schemas are refused beyond
//! [`ValidateLimits::max_schema_bytes`] bytes or
//! [`ValidateLimits::max_depth`] levels, instances beyond
//! [`ValidateLimits::max_instance_nodes`] values or `max_depth` levels;
//! `pattern` uses the linear-time `regex` engine with a compiled-size cap.
//! So one validation visits at most (schema nodes × instance nodes)
//! keyword checks, each linear in its input — there is no clock in here.

use std::collections::HashMap;
use std::fmt;

use jsonschema::{Draft, PatternOptions, Validator};
use mcpx_core::error::ErrorCode;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Arguments,
    StructuredContent,
    ElicitationAnswer,
}

impl Target {
    /// The schema's member name.
    pub const fn schema_key(self) -> &'static str {
        match self {
            Target::Arguments => "inputSchema",
            Target::StructuredContent => "outputSchema",
            Target::ElicitationAnswer => "requestedSchema",
        }
    }
    const fn what(self) -> &'static str {
        match self {
            Target::Arguments => "arguments",
            Target::StructuredContent => "structuredContent",
            Target::ElicitationAnswer => "elicitation answer",
        }
    }
}

/// Caps on schemas and instances (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidateLimits {
    pub max_schema_bytes: usize,
    pub max_depth: usize,
    pub max_instance_nodes: usize,
    /// Violations reported per failure (the rest are counted).
    pub max_errors: usize,
    /// Tools with compiled validators.
    pub max_tools: usize,
}

impl Default for ValidateLimits {
    fn default() -> Self {
        ValidateLimits { max_schema_bytes: 256 * 1024, max_depth: 64, max_instance_nodes: 100_000, max_errors: 8, max_tools: 20_000 }
    }
}

/// The dialects mcpx validates, by `$schema` URI.
const DIALECTS: &str = "2020-12 (the default), 2019-09, draft-07, draft-06, draft-04";

/// A schema that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaError {
    TooLarge { bytes: usize, max: usize },
    TooDeep { max: usize },
    UnsupportedDialect(String),
    /// Not a valid schema of its dialect, or a `$ref` that does not resolve
    /// inside it.
    Invalid(String),
    /// More tools than [`ValidateLimits::max_tools`].
    TooManyTools { max: usize },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::TooLarge { bytes, max } => write!(f, "is {bytes} bytes, over the limit of {max}"),
            SchemaError::TooDeep { max } => write!(f, "nests deeper than {max} levels"),
            SchemaError::UnsupportedDialect(d) => write!(f, "declares the dialect {d:?}, which mcpx cannot validate (it validates {DIALECTS})"),
            SchemaError::Invalid(e) => write!(f, "is not a usable schema: {e}"),
            SchemaError::TooManyTools { max } => write!(f, "was not compiled: more than {max} tools have schemas"),
        }
    }
}

/// One failed rule: where in the instance (a JSON pointer), which keyword.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub pointer: String,
    pub keyword: String,
    pub message: String,
}

/// Why a value was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The schema itself is unusable (`target` names whose).
    Schema { target: Target, error: SchemaError },
    /// The instance is over the size or depth caps.
    TooBig { target: Target, max_nodes: usize, max_depth: usize },
    /// The instance breaks the schema: the first violations, and how many
    /// more there were.
    Invalid { target: Target, violations: Vec<Violation>, more: usize },
}

impl Failure {
    /// The JSON-RPC error code of a refused request.
    pub const CODE: ErrorCode = ErrorCode::InvalidParams;

    /// The JSON-RPC error's `data`: `{"errors": [{"pointer", "keyword", "message"}]}`.
    pub fn data(&self) -> Value {
        match self {
            Failure::Invalid { violations, more, .. } => serde_json::json!({
                "errors": violations.iter().map(|v| serde_json::json!({"pointer": v.pointer, "keyword": v.keyword, "message": v.message})).collect::<Vec<_>>(),
                "moreErrors": more,
            }),
            other => serde_json::json!({"reason": other.to_string()}),
        }
    }
}

/// The JSON-RPC error message.
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Schema { target, error } => write!(f, "cannot validate the {}: the {} {error}", target.what(), target.schema_key()),
            Failure::TooBig { target, max_nodes, max_depth } => {
                write!(f, "the {} are too large to validate (over {max_nodes} values or {max_depth} levels)", target.what())
            }
            Failure::Invalid { target, violations, more } => {
                write!(f, "invalid {}: ", target.what())?;
                for (i, v) in violations.iter().enumerate() {
                    let at = if v.pointer.is_empty() { "(root)" } else { &v.pointer };
                    write!(f, "{}{at}: {} ({})", if i > 0 { "; " } else { "" }, v.message, v.keyword)?;
                }
                if *more > 0 {
                    write!(f, "; and {more} more")?;
                }
                Ok(())
            }
        }
    }
}

/// A compiled schema, or why there is none.
struct Compiled {
    digest: [u8; 32],
    validator: Result<Validator, SchemaError>,
}

#[derive(Default)]
struct ToolSchemas {
    input: Option<Compiled>,
    output: Option<Compiled>,
}

/// The compiled validators of the listed tools of every server.
pub struct Validators {
    limits: ValidateLimits,
    tools: HashMap<(Box<str>, Box<str>), ToolSchemas>,
}

impl Validators {
    pub fn new(limits: ValidateLimits) -> Self {
        Validators { limits, tools: HashMap::new() }
    }

    /// Takes `server`'s `tools/list` result `tools` array (original names):
    /// compiles the schemas that changed, forgets tools no longer listed.
    /// Returns the tools whose schemas cannot be used (their calls will be
    /// refused with the reason), to log.
    pub fn listed(&mut self, server: &str, tools: &[Value]) -> Vec<(String, Target, SchemaError)> {
        let mut old: HashMap<Box<str>, ToolSchemas> = HashMap::new();
        self.tools.retain(|(s, t), v| {
            if &**s == server {
                old.insert(t.clone(), std::mem::take(v));
                false
            } else {
                true
            }
        });
        let mut problems = Vec::new();
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { continue };
            let mut prev = old.remove(name).unwrap_or_default();
            let full = self.tools.len() >= self.limits.max_tools;
            let mut one = |target: Target, prev: Option<Compiled>| {
                let schema = tool.get(target.schema_key())?;
                let c = if full {
                    Compiled { digest: [0; 32], validator: Err(SchemaError::TooManyTools { max: self.limits.max_tools }) }
                } else {
                    self.reuse_or_compile(schema, prev)
                };
                if let Err(e) = &c.validator {
                    problems.push((name.to_string(), target, e.clone()));
                }
                Some(c)
            };
            let schemas = ToolSchemas {
                input: one(Target::Arguments, prev.input.take()),
                output: one(Target::StructuredContent, prev.output.take()),
            };
            self.tools.insert((server.into(), name.into()), schemas);
        }
        problems
    }

    /// Checks a `tools/call`'s `arguments` (absent: pass `{}`). A tool with
    /// no known schema passes: the hub only forwards calls to listed tools.
    pub fn check_arguments(&self, server: &str, tool: &str, args: &Value) -> Result<(), Failure> {
        self.check_listed(server, tool, Target::Arguments, args)
    }

    /// Checks a result's `structuredContent` against the tool's `outputSchema`
    /// (none declared: passes).
    pub fn check_structured(&self, server: &str, tool: &str, content: &Value) -> Result<(), Failure> {
        self.check_listed(server, tool, Target::StructuredContent, content)
    }

    /// Checks `instance` against a schema seen once (an elicitation's
    /// `requestedSchema`); compiled, used and dropped.
    pub fn check_once(&self, target: Target, schema: &Value, instance: &Value) -> Result<(), Failure> {
        let v = self.compile(schema).map_err(|error| Failure::Schema { target, error })?;
        self.run(&v, target, instance)
    }

    /// Tools with schemas held.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    fn check_listed(&self, server: &str, tool: &str, target: Target, instance: &Value) -> Result<(), Failure> {
        let Some(schemas) = self.tools.get(&(Box::from(server), Box::from(tool))) else { return Ok(()) };
        let compiled = match target {
            Target::Arguments => &schemas.input,
            _ => &schemas.output,
        };
        match compiled {
            None => Ok(()),
            Some(Compiled { validator: Err(error), .. }) => Err(Failure::Schema { target, error: error.clone() }),
            Some(Compiled { validator: Ok(v), .. }) => self.run(v, target, instance),
        }
    }

    fn reuse_or_compile(&self, schema: &Value, prev: Option<Compiled>) -> Compiled {
        let bytes = serde_json::to_vec(schema).unwrap_or_default();
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        match prev {
            Some(p) if p.digest == digest => p,
            _ => Compiled { digest, validator: self.compile_bytes(schema, bytes.len()) },
        }
    }

    fn compile(&self, schema: &Value) -> Result<Validator, SchemaError> {
        let len = serde_json::to_vec(schema).map_or(usize::MAX, |b| b.len());
        self.compile_bytes(schema, len)
    }

    fn compile_bytes(&self, schema: &Value, len: usize) -> Result<Validator, SchemaError> {
        let l = &self.limits;
        if len > l.max_schema_bytes {
            return Err(SchemaError::TooLarge { bytes: len, max: l.max_schema_bytes });
        }
        if shape(schema, l.max_depth).is_none() {
            return Err(SchemaError::TooDeep { max: l.max_depth });
        }
        let draft = match schema.get("$schema") {
            None => Draft::Draft202012,
            Some(Value::String(uri)) => match Draft::from_schema_uri(uri) {
                Draft::Unknown => return Err(SchemaError::UnsupportedDialect(uri.clone())),
                d => d,
            },
            Some(other) => return Err(SchemaError::Invalid(format!("\"$schema\" is {other}, not a URI string"))),
        };
        jsonschema::options()
            .with_draft(draft)
            .offline()
            .with_pattern_options(PatternOptions::regex().size_limit(1 << 20))
            .build(schema)
            .map_err(|e| SchemaError::Invalid(clip(&e.to_string())))
    }

    fn run(&self, v: &Validator, target: Target, instance: &Value) -> Result<(), Failure> {
        let l = &self.limits;
        match shape(instance, l.max_depth) {
            Some(nodes) if nodes <= l.max_instance_nodes => {}
            _ => return Err(Failure::TooBig { target, max_nodes: l.max_instance_nodes, max_depth: l.max_depth }),
        }
        let mut violations = Vec::new();
        let mut more = 0;
        for e in v.iter_errors(instance) {
            if violations.len() < l.max_errors {
                violations.push(Violation {
                    pointer: e.instance_path().as_str().to_string(),
                    keyword: e.kind().keyword().to_string(),
                    message: clip(&e.to_string()),
                });
            } else {
                more += 1;
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(Failure::Invalid { target, violations, more })
        }
    }
}

/// The number of values in `v`, or `None` when it nests deeper than `max_depth`.
fn shape(v: &Value, max_depth: usize) -> Option<usize> {
    let mut nodes = 0usize;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > max_depth {
            return None;
        }
        nodes += 1;
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, depth + 1))),
            Value::Object(o) => stack.extend(o.values().map(|x| (x, depth + 1))),
            _ => {}
        }
    }
    Some(nodes)
}

/// Messages quote the instance; keep them short.
fn clip(s: &str) -> String {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, input: Value) -> Value {
        json!({"name": name, "inputSchema": input})
    }

    fn counter_schema() -> Value {
        json!({
            "type": "object",
            "properties": {"count": {"type": "integer", "minimum": 1}, "name": {"type": "string", "pattern": "^[a-z]+$"}},
            "required": ["count"],
            "additionalProperties": false
        })
    }

    #[test]
    fn arguments_errors_name_the_property_and_the_rule() {
        let mut vs = Validators::new(ValidateLimits::default());
        assert!(vs.listed("s", &[tool("count", counter_schema())]).is_empty());
        vs.check_arguments("s", "count", &json!({"count": 3, "name": "abc"})).unwrap();
        let e = vs.check_arguments("s", "count", &json!({"count": "three"})).unwrap_err();
        let Failure::Invalid { target: Target::Arguments, violations, more: 0 } = &e else { panic!("{e:?}") };
        assert_eq!(violations.len(), 1);
        assert_eq!((violations[0].pointer.as_str(), violations[0].keyword.as_str()), ("/count", "type"));
        assert!(e.to_string().starts_with("invalid arguments: /count: \"three\" is not of type \"integer\" (type)"), "{e}");
        assert_eq!(Failure::CODE.code(), -32602);
        assert_eq!(e.data()["errors"][0]["pointer"], "/count");

        let e = vs.check_arguments("s", "count", &json!({"count": 0, "name": "ABC", "x": 1})).unwrap_err();
        let Failure::Invalid { violations, .. } = &e else { panic!("{e:?}") };
        let mut got: Vec<_> = violations.iter().map(|v| (v.pointer.as_str(), v.keyword.as_str())).collect();
        got.sort();
        assert_eq!(got, [("", "additionalProperties"), ("/count", "minimum"), ("/name", "pattern")]);
        let e = vs.check_arguments("s", "count", &json!({})).unwrap_err();
        assert!(e.to_string().contains("(root): \"count\" is a required property (required)"), "{e}");
        // Another server's tool of the same name is not this one.
        vs.check_arguments("other", "count", &json!({"count": "x"})).unwrap();
    }

    // covers: json-schema-validate-per-dialect-and-error-on-unsupported
    #[test]
    fn the_declared_dialect_is_used_and_an_unknown_one_is_an_error() {
        let mut vs = Validators::new(ValidateLimits::default());
        // In draft-04 `exclusiveMinimum` is a boolean modifier of `minimum`;
        // in 2020-12 it is a number. The same words mean different rules.
        let d4 = json!({"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"n": {"minimum": 5, "exclusiveMinimum": true}}});
        let d2020 = json!({"properties": {"n": {"exclusiveMinimum": 5}}});
        let d7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"items": [{"type": "string"}]}}});
        let unknown = json!({"$schema": "https://example.com/my-dialect", "type": "object"});
        let problems = vs.listed("s", &[tool("d4", d4), tool("d2020", d2020), tool("d7", d7), tool("odd", unknown)]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "odd");
        assert_eq!(problems[0].2, SchemaError::UnsupportedDialect("https://example.com/my-dialect".into()));
        assert!(vs.check_arguments("s", "d4", &json!({"n": 5})).is_err());
        vs.check_arguments("s", "d4", &json!({"n": 6})).unwrap();
        assert!(vs.check_arguments("s", "d2020", &json!({"n": 5})).is_err());
        // draft-07 tuple `items`: the first item must be a string.
        let e = vs.check_arguments("s", "d7", &json!({"a": [1]})).unwrap_err();
        assert!(e.to_string().contains("/a/0"), "{e}");
        vs.check_arguments("s", "d7", &json!({"a": ["x", 1]})).unwrap();
        // Every call of the tool with the unknown dialect gets the reason.
        let e = vs.check_arguments("s", "odd", &json!({})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot validate the arguments: the inputSchema declares the dialect \"https://example.com/my-dialect\", \
             which mcpx cannot validate (it validates 2020-12 (the default), 2019-09, draft-07, draft-06, draft-04)"
        );
    }

    #[test]
    fn no_remote_refs_and_local_refs_work() {
        let vs = Validators::new(ValidateLimits::default());
        let remote = json!({"$ref": "https://example.com/schema.json"});
        let e = vs.check_once(Target::ElicitationAnswer, &remote, &json!({})).unwrap_err();
        assert!(matches!(e, Failure::Schema { error: SchemaError::Invalid(_), .. }), "{e:?}");
        let file = json!({"$ref": "file:///etc/passwd"});
        assert!(vs.check_once(Target::ElicitationAnswer, &file, &json!({})).is_err());
        let local = json!({"$defs": {"pos": {"type": "integer", "minimum": 1}}, "properties": {"n": {"$ref": "#/$defs/pos"}}});
        vs.check_once(Target::ElicitationAnswer, &local, &json!({"n": 2})).unwrap();
        let e = vs.check_once(Target::ElicitationAnswer, &local, &json!({"n": 0})).unwrap_err();
        assert!(e.to_string().starts_with("invalid elicitation answer: /n: "), "{e}");
    }

    #[test]
    fn schemas_and_instances_are_bounded() {
        let limits = ValidateLimits { max_schema_bytes: 200, max_depth: 5, max_instance_nodes: 10, ..ValidateLimits::default() };
        let vs = Validators::new(limits);
        let big = json!({"description": "x".repeat(300)});
        let e = vs.check_once(Target::ElicitationAnswer, &big, &json!({})).unwrap_err();
        assert!(matches!(e, Failure::Schema { error: SchemaError::TooLarge { max: 200, .. }, .. }), "{e:?}");
        let deep = json!({"properties": {"a": {"properties": {"b": {"properties": {"c": {}}}}}}});
        assert!(matches!(
            vs.check_once(Target::ElicitationAnswer, &deep, &json!({})).unwrap_err(),
            Failure::Schema { error: SchemaError::TooDeep { max: 5 }, .. }
        ));
        let any = json!({});
        vs.check_once(Target::ElicitationAnswer, &any, &json!([1, 2, 3, 4, 5, 6, 7, 8, 9])).unwrap();
        let e = vs.check_once(Target::ElicitationAnswer, &any, &json!([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])).unwrap_err();
        assert!(matches!(e, Failure::TooBig { max_nodes: 10, .. }));
        assert!(vs.check_once(Target::ElicitationAnswer, &any, &json!([[[[[1]]]]])).is_err());
        // Only the first max_errors are listed; the rest counted.
        let vs = Validators::new(ValidateLimits { max_errors: 2, ..ValidateLimits::default() });
        let ints = json!({"items": {"type": "integer"}});
        let e = vs.check_once(Target::ElicitationAnswer, &ints, &json!(["a", "b", "c", "d"])).unwrap_err();
        let Failure::Invalid { violations, more, .. } = &e else { panic!() };
        assert_eq!((violations.len(), *more), (2, 2));
        assert!(e.to_string().ends_with("; and 2 more"), "{e}");
    }

    #[test]
    fn output_schemas_and_the_cache() {
        let mut vs = Validators::new(ValidateLimits { max_tools: 2, ..ValidateLimits::default() });
        let t = json!({"name": "w", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "required": ["temp"]}});
        vs.listed("s", &[t.clone(), tool("plain", json!({"type": "object"}))]);
        vs.check_structured("s", "w", &json!({"temp": 3})).unwrap();
        let e = vs.check_structured("s", "w", &json!({})).unwrap_err();
        assert!(e.to_string().starts_with("invalid structuredContent: (root): \"temp\" is a required property"), "{e}");
        vs.check_structured("s", "plain", &json!({})).unwrap();
        // A re-list with a changed schema recompiles; dropped tools are forgotten.
        let t2 = json!({"name": "w", "inputSchema": {"type": "object", "required": ["city"]}});
        vs.listed("s", &[t2]);
        assert_eq!(vs.len(), 1);
        assert!(vs.check_arguments("s", "w", &json!({})).is_err());
        vs.check_structured("s", "w", &json!({})).unwrap();
        vs.check_arguments("s", "plain", &json!(1)).unwrap();
        // Past max_tools, further tools are refused with the reason.
        let problems = vs.listed("t", &[tool("a", json!({})), tool("b", json!({}))]);
        assert_eq!(problems, [("b".to_string(), Target::Arguments, SchemaError::TooManyTools { max: 2 })]);
        assert!(vs.check_arguments("t", "b", &json!({})).unwrap_err().to_string().contains("more than 2 tools"));
    }
}
