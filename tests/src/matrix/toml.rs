//! A reader of the TOML subset this tool needs (the matrix file and the
//! workspace's Cargo.toml files): comments, `[table]` and `[[array]]` headers,
//! bare, quoted and dotted keys, basic and literal strings, integers,
//! multi-line strings, booleans, arrays (over several lines, trailing comma)
//! and inline tables. Floats and dates are kept as their text.

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Bool(bool),
    Array(Vec<Value>),
    Table(Table),
    /// A float or a date/time, as written.
    Other(String),
}

/// Keys in document order.
pub type Table = Vec<(String, Value)>;

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_table(&self) -> Option<&Table> {
        match self {
            Value::Table(t) => Some(t),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

pub fn get<'a>(t: &'a Table, key: &str) -> Option<&'a Value> {
    t.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Follows a dotted path of table keys.
pub fn get_path<'a>(t: &'a Table, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let v = get(t, first)?;
    if rest.is_empty() {
        Some(v)
    } else {
        get_path(v.as_table()?, rest)
    }
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    line: usize,
}

impl<'a> P<'a> {
    fn err<T>(&self, msg: &str) -> Result<T, String> {
        Err(format!("line {}: {msg}", self.line))
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }
    /// Whitespace, newlines and comments (inside arrays).
    fn ws_nl(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r' | b'\n') => {
                    self.bump();
                }
                Some(b'#') => self.comment(),
                _ => break,
            }
        }
    }
    fn comment(&mut self) {
        while !matches!(self.peek(), None | Some(b'\n')) {
            self.i += 1;
        }
    }
    fn eol(&mut self) -> Result<(), String> {
        self.ws();
        if self.peek() == Some(b'#') {
            self.comment();
        }
        match self.peek() {
            None => Ok(()),
            Some(b'\n') => {
                self.bump();
                Ok(())
            }
            Some(b'\r') if self.s.get(self.i + 1) == Some(&b'\n') => {
                self.i += 1;
                self.bump();
                Ok(())
            }
            _ => self.err("expected end of line"),
        }
    }
    fn key_part(&mut self) -> Result<String, String> {
        self.ws();
        match self.peek() {
            Some(b'"') => self.basic_string(),
            Some(b'\'') => self.literal_string(),
            _ => {
                let start = self.i;
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
                {
                    self.i += 1;
                }
                if start == self.i {
                    return self.err("expected a key");
                }
                Ok(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
            }
        }
    }
    fn key(&mut self) -> Result<Vec<String>, String> {
        let mut parts = vec![self.key_part()?];
        loop {
            self.ws();
            if self.peek() == Some(b'.') {
                self.i += 1;
                parts.push(self.key_part()?);
            } else {
                return Ok(parts);
            }
        }
    }
    fn basic_string(&mut self) -> Result<String, String> {
        self.i += 1;
        let multi = self.s[self.i..].starts_with(b"\"\"");
        if multi {
            self.i += 2;
            self.skip_first_newline();
        }
        let mut out = Vec::new();
        loop {
            if multi && self.s[self.i..].starts_with(b"\"\"\"") {
                self.i += 3;
                break;
            }
            match self.bump() {
                None => return self.err("unterminated string"),
                Some(b'\n') if !multi => return self.err("unterminated string"),
                Some(b'"') if !multi => break,
                // A line-ending backslash trims the newline and the whitespace after it.
                Some(b'\\')
                    if multi && matches!(self.peek(), Some(b'\n' | b'\r' | b' ' | b'\t')) =>
                {
                    self.ws_nl_only();
                }
                Some(b'\\') => match self.bump() {
                    Some(b'"') => out.push(b'"'),
                    Some(b'\\') => out.push(b'\\'),
                    Some(b'n') => out.push(b'\n'),
                    Some(b't') => out.push(b'\t'),
                    Some(b'r') => out.push(b'\r'),
                    Some(b'u') => {
                        let hex = self.s.get(self.i..self.i + 4).ok_or("short \\u escape")?;
                        let hex = std::str::from_utf8(hex).map_err(|e| e.to_string())?;
                        let cp = u32::from_str_radix(hex, 16).map_err(|e| e.to_string())?;
                        let ch = char::from_u32(cp).ok_or("bad \\u escape")?;
                        let mut buf = [0; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        self.i += 4;
                    }
                    _ => return self.err("unknown escape in string"),
                },
                Some(c) => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|e| e.to_string())
    }
    fn skip_first_newline(&mut self) {
        if self.s[self.i..].starts_with(b"\r\n") {
            self.i += 1;
        }
        if self.peek() == Some(b'\n') {
            self.bump();
        }
    }
    fn ws_nl_only(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.bump();
        }
    }
    fn literal_string(&mut self) -> Result<String, String> {
        self.i += 1;
        if self.s[self.i..].starts_with(b"''") {
            self.i += 2;
            self.skip_first_newline();
            let start = self.i;
            while !self.s[self.i..].starts_with(b"'''") {
                if self.bump().is_none() {
                    return self.err("unterminated string");
                }
            }
            self.i += 3;
            return Ok(String::from_utf8_lossy(&self.s[start..self.i - 3]).into_owned());
        }
        let start = self.i;
        loop {
            match self.bump() {
                None | Some(b'\n') => return self.err("unterminated string"),
                Some(b'\'') => break,
                _ => {}
            }
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.i - 1]).into_owned())
    }
    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        match self.peek() {
            Some(b'"') => Ok(Value::Str(self.basic_string()?)),
            Some(b'\'') => Ok(Value::Str(self.literal_string()?)),
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws_nl();
                    if self.peek() == Some(b']') {
                        self.i += 1;
                        return Ok(Value::Array(items));
                    }
                    items.push(self.value()?);
                    self.ws_nl();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {}
                        _ => return self.err("expected , or ] in array"),
                    }
                }
            }
            Some(b'{') => {
                self.i += 1;
                let mut t = Table::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Value::Table(t));
                }
                loop {
                    let k = self.key()?;
                    self.ws();
                    if self.bump() != Some(b'=') {
                        return self.err("expected = in inline table");
                    }
                    let v = self.value()?;
                    insert(&mut t, &k, v).map_err(|e| format!("line {}: {e}", self.line))?;
                    self.ws();
                    match self.bump() {
                        Some(b',') => continue,
                        Some(b'}') => return Ok(Value::Table(t)),
                        _ => return self.err("expected , or } in inline table"),
                    }
                }
            }
            _ => {
                let start = self.i;
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'_' | b'.' | b':'))
                {
                    self.i += 1;
                }
                let word = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                match word {
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    _ => match word.replace('_', "").parse::<i64>() {
                        Ok(n) => Ok(Value::Int(n)),
                        // Floats and dates are kept as their text; nothing here reads them.
                        Err(_)
                            if word.starts_with(|c: char| {
                                c.is_ascii_digit() || c == '-' || c == '+'
                            }) || matches!(word, "inf" | "nan") =>
                        {
                            Ok(Value::Other(word.to_string()))
                        }
                        Err(_) => self.err(&format!("unsupported value {word:?}")),
                    },
                }
            }
        }
    }
}

fn insert(t: &mut Table, key: &[String], v: Value) -> Result<(), String> {
    let (first, rest) = key.split_first().expect("non-empty key");
    if rest.is_empty() {
        if get(t, first).is_some() {
            return Err(format!("duplicate key {first}"));
        }
        t.push((first.clone(), v));
        return Ok(());
    }
    let sub = table_mut(t, first)?;
    insert(sub, rest, v)
}

fn table_mut<'a>(t: &'a mut Table, key: &str) -> Result<&'a mut Table, String> {
    if get(t, key).is_none() {
        t.push((key.to_string(), Value::Table(Table::new())));
    }
    let slot = t
        .iter_mut()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
        .unwrap();
    match slot {
        Value::Table(sub) => Ok(sub),
        // `[[a]]` then `[a.b]`: the last element of the array.
        Value::Array(items) => match items.last_mut() {
            Some(Value::Table(sub)) => Ok(sub),
            _ => Err(format!("{key} is not a table")),
        },
        _ => Err(format!("{key} is not a table")),
    }
}

fn table_at<'a>(root: &'a mut Table, path: &[String]) -> Result<&'a mut Table, String> {
    let mut cur = root;
    for k in path {
        cur = table_mut(cur, k)?;
    }
    Ok(cur)
}

pub fn parse(text: &str) -> Result<Table, String> {
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
        line: 1,
    };
    let mut root = Table::new();
    let mut current: Vec<String> = Vec::new();
    loop {
        p.ws_nl();
        match p.peek() {
            None => return Ok(root),
            Some(b'[') => {
                p.i += 1;
                let array = p.peek() == Some(b'[');
                if array {
                    p.i += 1;
                }
                let key = p.key()?;
                p.ws();
                let close: &[u8] = if array { b"]]" } else { b"]" };
                if !p.s[p.i..].starts_with(close) {
                    return p.err("unclosed table header");
                }
                p.i += close.len();
                p.eol()?;
                let (last, parent) = key.split_last().unwrap();
                let parent_t =
                    table_at(&mut root, parent).map_err(|e| format!("line {}: {e}", p.line))?;
                if array {
                    match parent_t.iter_mut().find(|(k, _)| k == last) {
                        Some((_, Value::Array(items))) => items.push(Value::Table(Table::new())),
                        Some(_) => return p.err(&format!("{last} is not an array of tables")),
                        None => parent_t
                            .push((last.clone(), Value::Array(vec![Value::Table(Table::new())]))),
                    }
                } else {
                    table_mut(parent_t, last).map_err(|e| format!("line {}: {e}", p.line))?;
                }
                current = key;
            }
            Some(_) => {
                let key = p.key()?;
                p.ws();
                if p.bump() != Some(b'=') {
                    return p.err("expected =");
                }
                let v = p.value()?;
                p.eol()?;
                let line = p.line;
                let t = table_at(&mut root, &current).map_err(|e| format!("line {line}: {e}"))?;
                insert(t, &key, v).map_err(|e| format!("line {line}: {e}"))?;
            }
        }
    }
}

/// A key as written by this tool: bare when it can be, else quoted.
pub fn key(k: &str) -> String {
    if !k.is_empty()
        && k.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
    {
        k.to_string()
    } else {
        quote(k)
    }
}

/// A basic string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cargo_like_documents() {
        let t = parse(
            "[package]\nname = \"x\" # c\nversion.workspace = true\n\n[[bin]]\nname = 'a'\npath = \"src/a.rs\"\n[[bin]]\nname = \"b\"\n[dependencies]\ns = { version = \"1\", features = [\"a\", \"b\",] }\n[workspace]\nmembers = [\n  \"core\", # one\n  \"tests\",\n]\n",
        )
        .unwrap();
        assert_eq!(
            get_path(&t, &["package", "name"]).unwrap().as_str(),
            Some("x")
        );
        assert_eq!(
            get_path(&t, &["package", "version", "workspace"]),
            Some(&Value::Bool(true))
        );
        let bins = get(&t, "bin").unwrap().as_array().unwrap();
        assert_eq!(bins.len(), 2);
        assert_eq!(
            get(bins[1].as_table().unwrap(), "name").unwrap().as_str(),
            Some("b")
        );
        let m = get_path(&t, &["workspace", "members"])
            .unwrap()
            .as_array()
            .unwrap();
        assert_eq!(m.len(), 2);
        let s = get_path(&t, &["dependencies", "s", "features"])
            .unwrap()
            .as_array()
            .unwrap();
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn strings_round_trip() {
        let s = "a \"q\" \\ é\n";
        let t = parse(&format!("k = {}\n\"odd key\" = 1\n", quote(s))).unwrap();
        assert_eq!(get(&t, "k").unwrap().as_str(), Some(s));
        assert_eq!(get(&t, "odd key"), Some(&Value::Int(1)));
        assert_eq!(key("odd key"), "\"odd key\"");
        assert_eq!(key("a-b_1"), "a-b_1");
    }

    #[test]
    fn multi_line_strings_floats_dates() {
        let t = parse("a = \"\"\"\nline one\nline \\\n   two\"\"\"\nb = '''\nraw \\n'''\nc = 1.5\nd = 2026-07-28\ne = \"\"\n").unwrap();
        assert_eq!(get(&t, "a").unwrap().as_str(), Some("line one\nline two"));
        assert_eq!(get(&t, "b").unwrap().as_str(), Some("raw \\n"));
        assert_eq!(get(&t, "c"), Some(&Value::Other("1.5".into())));
        assert_eq!(get(&t, "d"), Some(&Value::Other("2026-07-28".into())));
        assert_eq!(get(&t, "e").unwrap().as_str(), Some(""));
    }

    #[test]
    fn rejects_what_it_does_not_read() {
        assert!(parse("a = 1\na = 2\n").unwrap_err().contains("duplicate"));
        assert!(parse("a = \"\"\"x\n").is_err());
        assert!(parse("a = nope\n").is_err());
        assert!(parse("a = \"x\" b\n").is_err());
        assert!(parse("[a\n").is_err());
    }
}
