//! The `x-mcp-header` constraints on a tool's `inputSchema`
//! (rows tools-x-mcp-header-*, streamable-http-x-mcp-header-constraints).
//!
//! A minimal, allocation-free walk over the schema's JSON text: it checks
//! structure only as far as it needs to find every `x-mcp-header` member and
//! know how it was reached, which is what the "statically reachable" rule is
//! about. Keys are compared after resolving JSON escapes, so
//! `"propert\u0069es"` is `properties`.

use core::fmt;

use heapless::Vec;

/// Most `x-mcp-header` annotations one schema may carry.
pub const MAX_ANNOTATIONS: usize = 32;
/// Deepest nesting of objects and arrays the walk follows.
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// The `x-mcp-header` constraint a schema violates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The `x-mcp-header` value is not a JSON string.
    NotAString,
    /// The value is empty (row tools-x-mcp-header-not-empty).
    Empty,
    /// The value contains a control character such as CR or LF
    /// (row tools-x-mcp-header-no-ctl).
    ControlCharacter,
    /// The value is not an HTTP token, `1*tchar` (row tools-x-mcp-header-tchar).
    NotToken,
    /// The value equals another `x-mcp-header` value ignoring ASCII case
    /// (row tools-x-mcp-header-unique-ci).
    Duplicate,
    /// The annotated property's `type` is not `string`, `integer` or
    /// `boolean` (row tools-x-mcp-header-primitive-only). A list of types is
    /// accepted when it holds only those and `null`, and at least one of
    /// them; a missing `type` is rejected since the value could be anything.
    NotPrimitive,
    /// The annotation is not on a property reached from the root through
    /// `properties` keys alone (row tools-x-mcp-header-statically-reachable):
    /// it sits on the root, under `items`, `oneOf`, `$defs`,
    /// `additionalProperties`, `if`, or anywhere else.
    NotStaticallyReachable,
}

impl Rule {
    /// The requirement row the rule comes from.
    pub fn row(&self) -> &'static str {
        match self {
            Rule::NotAString | Rule::Empty => "tools-x-mcp-header-not-empty",
            Rule::ControlCharacter => "tools-x-mcp-header-no-ctl",
            Rule::NotToken => "tools-x-mcp-header-tchar",
            Rule::Duplicate => "tools-x-mcp-header-unique-ci",
            Rule::NotPrimitive => "tools-x-mcp-header-primitive-only",
            Rule::NotStaticallyReachable => "tools-x-mcp-header-statically-reachable",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::NotAString => "x-mcp-header value is not a string",
            Rule::Empty => "x-mcp-header value is empty",
            Rule::ControlCharacter => "x-mcp-header value contains a control character",
            Rule::NotToken => "x-mcp-header value is not an HTTP field-name token",
            Rule::Duplicate => "x-mcp-header value is not unique (case-insensitively)",
            Rule::NotPrimitive => {
                "x-mcp-header is on a property whose type is not string, integer or boolean"
            }
            Rule::NotStaticallyReachable => {
                "x-mcp-header is not on a property reachable through `properties` alone"
            }
        })
    }
}

/// Why an `inputSchema` is rejected. A tool with such a schema must be left
/// out of `tools/list` (row tools-x-mcp-header-reject-excludes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaError {
    /// An `x-mcp-header` annotation breaks `rule`; `at` is the byte offset
    /// of its value in the schema text.
    Violation {
        /// The broken constraint.
        rule: Rule,
        /// Byte offset of the annotation's value.
        at: usize,
    },
    /// More than [`MAX_ANNOTATIONS`] annotations.
    TooManyAnnotations,
    /// Nested deeper than [`MAX_SCHEMA_DEPTH`].
    TooDeep,
    /// Not well-formed JSON at byte offset `at`.
    Malformed {
        /// Byte offset of the problem.
        at: usize,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::Violation { rule, at } => write!(f, "{rule} (at byte {at})"),
            SchemaError::TooManyAnnotations => {
                write!(f, "more than {MAX_ANNOTATIONS} x-mcp-header annotations")
            }
            SchemaError::TooDeep => write!(f, "schema nested deeper than {MAX_SCHEMA_DEPTH}"),
            SchemaError::Malformed { at } => write!(f, "schema is not valid JSON (at byte {at})"),
        }
    }
}

/// Checks every `x-mcp-header` annotation in a tool's `inputSchema` (the
/// JSON text of the schema object) against all constraints of the
/// 2026-07-28 revision, and returns how many annotations there are.
///
/// Keys named `x-mcp-header` inside a `properties` map are property names,
/// not annotations. Any other `x-mcp-header` member — in a subschema,
/// in `default` or `examples` data, anywhere — that is not on a statically
/// reachable property is a violation.
pub fn validate_input_schema(schema: &[u8]) -> Result<usize, SchemaError> {
    let mut w = Walker { s: schema, pos: 0, names: Vec::new() };
    w.value(Reach::Root, 0)?;
    w.ws();
    if w.pos != schema.len() {
        return w.malformed();
    }
    Ok(w.names.len())
}

/// How the walk got to a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// The schema root.
    Root,
    /// A property schema reached from the root through `properties` alone.
    Property,
    /// Anywhere else.
    Elsewhere,
}

struct Walker<'s> {
    s: &'s [u8],
    pos: usize,
    /// Raw (still escaped) `x-mcp-header` values seen so far.
    names: Vec<&'s [u8], MAX_ANNOTATIONS>,
}

type Step = Result<(), SchemaError>;

impl<'s> Walker<'s> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn malformed<T>(&self) -> Result<T, SchemaError> {
        Err(SchemaError::Malformed { at: self.pos })
    }

    fn eat(&mut self, b: u8) -> Step {
        self.ws();
        if self.peek() != Some(b) {
            return self.malformed();
        }
        self.pos += 1;
        Ok(())
    }

    fn value(&mut self, reach: Reach, depth: usize) -> Step {
        self.ws();
        match self.peek() {
            Some(b'{') => self.object(reach, depth),
            Some(b'[') => self.array(depth, |w, depth| w.value(Reach::Elsewhere, depth)),
            Some(b'"') => self.string().map(drop),
            _ => self.scalar(),
        }
    }

    /// A schema object (or an object in data, which is walked the same way
    /// with `Reach::Elsewhere`).
    fn object(&mut self, reach: Reach, depth: usize) -> Step {
        let mut annotation = None;
        let mut primitive = false;
        self.members(depth, |w, key, depth| {
            if json_str_eq(key, b"properties") {
                w.property_map(reach, depth)
            } else if json_str_eq(key, b"x-mcp-header") {
                w.ws();
                let at = w.pos;
                if reach != Reach::Property {
                    return Err(SchemaError::Violation { rule: Rule::NotStaticallyReachable, at });
                }
                if w.peek() != Some(b'"') {
                    return Err(SchemaError::Violation { rule: Rule::NotAString, at });
                }
                annotation = Some((w.string()?, at));
                Ok(())
            } else if json_str_eq(key, b"type") {
                primitive = w.type_value(depth)?;
                Ok(())
            } else {
                w.value(Reach::Elsewhere, depth)
            }
        })?;
        match annotation {
            Some((name, at)) => self.annotation(name, primitive, at),
            None => Ok(()),
        }
    }

    /// The value of a `properties` keyword: its members are property
    /// schemas, reachable if the owning schema is.
    fn property_map(&mut self, owner: Reach, depth: usize) -> Step {
        self.ws();
        if self.peek() != Some(b'{') {
            return self.value(Reach::Elsewhere, depth);
        }
        let child = if owner == Reach::Elsewhere { Reach::Elsewhere } else { Reach::Property };
        self.members(depth, |w, _name, depth| w.value(child, depth))
    }

    /// The value of a `type` keyword: whether it admits only `string`,
    /// `integer`, `boolean` (and `null`).
    fn type_value(&mut self, depth: usize) -> Result<bool, SchemaError> {
        self.ws();
        match self.peek() {
            Some(b'"') => Ok(is_primitive_type(self.string()?)),
            Some(b'[') => {
                let (mut only_allowed, mut any_primitive) = (true, false);
                self.array(depth, |w, depth| {
                    w.ws();
                    if w.peek() != Some(b'"') {
                        only_allowed = false;
                        return w.value(Reach::Elsewhere, depth);
                    }
                    let t = w.string()?;
                    if is_primitive_type(t) {
                        any_primitive = true;
                    } else if !json_str_eq(t, b"null") {
                        only_allowed = false;
                    }
                    Ok(())
                })?;
                Ok(only_allowed && any_primitive)
            }
            _ => self.value(Reach::Elsewhere, depth).map(|()| false),
        }
    }

    fn annotation(&mut self, name: &'s [u8], primitive: bool, at: usize) -> Step {
        let violation = |rule| Err(SchemaError::Violation { rule, at });
        if name.is_empty() {
            return violation(Rule::Empty);
        }
        if Unescape(name).any(|u| u < 0x20 || u == 0x7f) {
            return violation(Rule::ControlCharacter);
        }
        if !Unescape(name).all(is_tchar) {
            return violation(Rule::NotToken);
        }
        if !primitive {
            return violation(Rule::NotPrimitive);
        }
        let folded = |raw| Unescape(raw).map(|u| if (0x41..=0x5a).contains(&u) { u + 0x20 } else { u });
        if self.names.iter().any(|seen| folded(seen).eq(folded(name))) {
            return violation(Rule::Duplicate);
        }
        self.names.push(name).map_err(|_| SchemaError::TooManyAnnotations)
    }

    fn enter(&self, depth: usize) -> Result<usize, SchemaError> {
        let depth = depth + 1;
        if depth > MAX_SCHEMA_DEPTH {
            return Err(SchemaError::TooDeep);
        }
        Ok(depth)
    }

    /// Walks `{ "key": value, … }`, handing each key (raw) to `each`, which
    /// must consume the value.
    fn members(&mut self, depth: usize, mut each: impl FnMut(&mut Self, &'s [u8], usize) -> Step) -> Step {
        let depth = self.enter(depth)?;
        self.eat(b'{')?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            each(self, key, depth)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return self.malformed(),
            }
        }
    }

    /// Walks `[ value, … ]`; `each` must consume one element.
    fn array(&mut self, depth: usize, mut each: impl FnMut(&mut Self, usize) -> Step) -> Step {
        let depth = self.enter(depth)?;
        self.eat(b'[')?;
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            each(self, depth)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return self.malformed(),
            }
        }
    }

    /// A JSON string; returns its raw content between the quotes.
    fn string(&mut self) -> Result<&'s [u8], SchemaError> {
        self.eat(b'"')?;
        let start = self.pos;
        loop {
            match self.peek() {
                Some(b'"') => {
                    let raw = self.s.get(start..self.pos).unwrap_or_default();
                    self.pos += 1;
                    return Ok(raw);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.pos += 1,
                        Some(b'u') if self.hex4(self.pos + 1).is_some() => self.pos += 5,
                        _ => return self.malformed(),
                    }
                }
                Some(0x20..) => self.pos += 1,
                _ => return self.malformed(),
            }
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        hex4(self.s.get(at..at.checked_add(4)?)?)
    }

    /// A number, `true`, `false` or `null` (checked loosely: the walk needs
    /// only to skip it).
    fn scalar(&mut self) -> Step {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' | b'+' | b'-' | b'.')) {
            self.pos += 1;
        }
        let token = self.s.get(start..self.pos).unwrap_or_default();
        let ok = matches!(token, b"true" | b"false" | b"null")
            || token.first().is_some_and(|c| *c == b'-' || c.is_ascii_digit());
        if ok {
            Ok(())
        } else {
            self.malformed()
        }
    }
}

fn hex4(h: &[u8]) -> Option<u32> {
    if h.len() != 4 {
        return None;
    }
    h.iter().try_fold(0u32, |acc, &c| Some(acc * 16 + char::from(c).to_digit(16)?))
}

fn is_primitive_type(t: &[u8]) -> bool {
    [&b"string"[..], b"integer", b"boolean"].iter().any(|p| json_str_eq(t, p))
}

/// RFC 9110 `tchar`.
fn is_tchar(u: u32) -> bool {
    u8::try_from(u).is_ok_and(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether raw JSON string content equals the ASCII literal `lit`.
fn json_str_eq(raw: &[u8], lit: &[u8]) -> bool {
    Unescape(raw).eq(lit.iter().map(|&b| u32::from(b)))
}

/// The code units of validated raw JSON string content: escapes resolved
/// to their UTF-16 code unit, other bytes as themselves (so anything
/// non-ASCII is ≥ 0x80, which is all the checks here need).
struct Unescape<'a>(&'a [u8]);

impl Iterator for Unescape<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        if b != b'\\' {
            return Some(b.into());
        }
        let (&e, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(match e {
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => 0x0a,
            b'r' => 0x0d,
            b't' => 0x09,
            b'u' => {
                let unit = hex4(self.0.get(..4)?)?;
                self.0 = self.0.get(4..).unwrap_or_default();
                unit
            }
            other => other.into(),
        })
    }
}
